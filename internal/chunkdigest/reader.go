package chunkdigest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
)

// Reader yields the verified bytes of chunks [first, end) of a file, read in
// order from a source positioned at chunk first's first byte (a whole-file
// read, or a ranged read of exactly those chunks). Chunks are read ahead and
// hashed on up to GOMAXPROCS goroutines while the caller consumes earlier
// ones; a byte reaches the caller only after its chunk verified, so damage
// is reported as damage (MismatchError with the chunk's byte range), never
// as the parse error it would cause. Memory: about GOMAXPROCS + 1 chunks.
type Reader struct {
	ctx     context.Context
	cancel  context.CancelFunc
	results chan *chunkRead
	cur     *chunkRead
	off     int
	err     error
}

type chunkRead struct {
	buf    []byte
	pooled bool // buf is a spare chunk buffer, returned when read
	ok     chan error
}

// TruncatedError reports a source that ended before the file's size.
type TruncatedError struct{ Read, Want int64 }

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("truncated: the data ends at byte %d, the file has %d", e.Read, e.Want)
}

// OverrunError reports a source holding more bytes than the file's size.
type OverrunError struct{ Want int64 }

func (e *OverrunError) Error() string {
	return fmt.Sprintf("size mismatch: more than %d bytes", e.Want)
}

// NewReader starts verifying chunks [first, end) of the file sc describes,
// read from src. When end is the file's last chunk, src must end there too
// (else OverrunError). Close stops the read-ahead; the caller closes src
// after it.
func NewReader(ctx context.Context, src io.Reader, sc Sidecar, first, end int) *Reader {
	ctx, cancel := context.WithCancel(ctx)
	r := &Reader{ctx: ctx, cancel: cancel, results: make(chan *chunkRead, max(1, runtime.GOMAXPROCS(0)-1))}
	go r.produce(src, sc, first, end)
	return r
}

func (r *Reader) produce(src io.Reader, sc Sidecar, first, end int) {
	defer close(r.results)
	send := func(c *chunkRead) bool {
		select {
		case r.results <- c:
			return true
		case <-r.ctx.Done():
			return false
		}
	}
	failed := func(err error) { c := &chunkRead{ok: make(chan error, 1)}; c.ok <- err; send(c) }
	for i := first; i < end; i++ {
		if r.ctx.Err() != nil {
			return
		}
		lo, hi := Span(sc.size, i)
		c := &chunkRead{ok: make(chan error, 1)}
		if hi-lo == ChunkBytes {
			c.pooled, c.buf = true, getChunk()[:ChunkBytes]
		} else {
			c.buf = make([]byte, hi-lo)
		}
		got, err := io.ReadFull(src, c.buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = &TruncatedError{Read: lo + int64(got), Want: sc.size}
			}
			failed(err)
			return
		}
		go func() { c.ok <- sc.Check(i, c.buf) }()
		if !send(c) {
			return
		}
	}
	if end == Count(sc.size) {
		var b [1]byte
		if n, _ := io.ReadFull(src, b[:]); n > 0 {
			failed(&OverrunError{Want: sc.size})
		}
	}
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	for r.err == nil && (r.cur == nil || r.off == len(r.cur.buf)) {
		r.advance()
	}
	if r.err != nil {
		return 0, r.err
	}
	n := copy(p, r.cur.buf[r.off:])
	r.off += n
	return n, nil
}

// Next returns the next verified chunk whole (valid until the next call),
// or io.EOF after the last; it saves a copy when the caller can use the
// chunk in place. Do not mix with Read.
func (r *Reader) Next() ([]byte, error) {
	if r.err == nil {
		r.advance()
	}
	if r.err != nil {
		return nil, r.err
	}
	r.off = len(r.cur.buf)
	return r.cur.buf, nil
}

// advance makes the next verified chunk current, or sets r.err.
func (r *Reader) advance() {
	r.release()
	c, ok := <-r.results
	switch {
	case !ok && r.ctx.Err() != nil:
		r.err = r.ctx.Err()
	case !ok:
		r.err = io.EOF
	default:
		if err := <-c.ok; err != nil {
			r.err = err
			return
		}
		r.cur, r.off = c, 0
	}
}

func (r *Reader) release() {
	if r.cur != nil && r.cur.pooled {
		putChunk(r.cur.buf)
	}
	r.cur = nil
}

// Close stops the read-ahead. Chunks still in flight are dropped.
func (r *Reader) Close() error {
	r.cancel()
	r.cur = nil
	if r.err == nil {
		r.err = errors.New("chunkdigest: read after Close")
	}
	return nil
}
