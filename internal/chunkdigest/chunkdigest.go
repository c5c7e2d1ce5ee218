package chunkdigest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"sync"

	"github.com/vertebrae-eval/vertebrae/memory"
)

// ChunkBytes is the chunk size (8 MiB).
const ChunkBytes = 8 << 20

// Size is the length of one chunk digest in the sidecar.
const Size = sha256.Size

// Count is the number of chunks of a size-byte file (an empty file has one
// empty chunk).
func Count(size int64) int {
	if size <= 0 {
		return 1
	}
	return int((size + ChunkBytes - 1) / ChunkBytes)
}

// Span is chunk i's byte range [lo, hi) in a size-byte file.
func Span(size int64, i int) (lo, hi int64) {
	lo = int64(i) * ChunkBytes
	return lo, min(size, lo+ChunkBytes)
}

// SidecarBytes is the sidecar length of a size-byte file.
func SidecarBytes(size int64) int64 { return int64(Count(size)) * Size }

// Digest is a finished chunked digest.
type Digest struct {
	Size    int64  // bytes hashed
	Sidecar []byte // the chunk digests, Size bytes each, in order
}

// Hex is the file's digest: the SHA-256 of the sidecar, in lower-case hex.
func (d Digest) Hex() string {
	s := sha256.Sum256(d.Sidecar)
	return hex.EncodeToString(s[:])
}

// Of is the chunked digest of b, its chunks hashed on every core.
func Of(b []byte) Digest {
	n := Count(int64(len(b)))
	side := make([]byte, n*Size)
	parallel(n, func(i int) {
		lo, hi := Span(int64(len(b)), i)
		s := sha256.Sum256(b[lo:hi])
		copy(side[i*Size:], s[:])
	})
	return Digest{Size: int64(len(b)), Sidecar: side}
}

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, fn func(int)) {
	w := min(n, runtime.GOMAXPROCS(0))
	if w <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range w {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// Hasher computes a chunked digest of the bytes written to it. Full chunks
// hash on other goroutines (at most GOMAXPROCS at a time, each holding its
// own copy of the chunk), so a writer streaming at disk speed is not held
// to one core's SHA-256 rate. Write never fails. A Hasher is not safe for
// concurrent use.
type Hasher struct {
	buf  []byte
	n    int64
	sums []*[Size]byte
	wg   sync.WaitGroup
	sem  chan struct{}
}

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher {
	return &Hasher{sem: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))}
}

// spareChunks keeps up to four chunk buffers (32 MiB) for the chunks of
// later writes: a sync.Pool would drop them at every collection, and a new
// 8 MiB buffer costs its page faults again (a fault took about 6 µs on the
// virtual machines measured, more than hashing the page). A new buffer is
// advised into transparent huge pages before its first touch.
var spareChunks = make(chan []byte, 4)

func getChunk() []byte {
	select {
	case b := <-spareChunks:
		return b[:0]
	default:
		b := make([]byte, 0, ChunkBytes)
		memory.AdviseHugePages(b[:ChunkBytes])
		return b
	}
}

func putChunk(b []byte) {
	if cap(b) != ChunkBytes {
		return
	}
	select {
	case spareChunks <- b[:0]:
	default:
	}
}

// Write implements io.Writer.
func (h *Hasher) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		if h.buf == nil {
			h.buf = getChunk()
		}
		k := min(len(p), ChunkBytes-len(h.buf))
		h.buf = append(h.buf, p[:k]...)
		p = p[k:]
		h.n += int64(k)
		if len(h.buf) == ChunkBytes {
			h.dispatch()
		}
	}
	return total, nil
}

// dispatch hands the filled chunk to a hashing goroutine.
func (h *Hasher) dispatch() {
	sum := new([Size]byte)
	h.sums = append(h.sums, sum)
	b := h.buf
	h.buf = nil
	h.sem <- struct{}{}
	h.wg.Go(func() {
		*sum = sha256.Sum256(b)
		putChunk(b)
		<-h.sem
	})
}

// Digest waits for the chunks in flight and returns the digest of
// everything written. The Hasher must not be written to afterwards.
func (h *Hasher) Digest() Digest {
	if h.buf != nil || len(h.sums) == 0 {
		sum := sha256.Sum256(h.buf) // the short last chunk, or the one empty chunk
		h.sums = append(h.sums, &sum)
		if h.buf != nil {
			putChunk(h.buf)
			h.buf = nil
		}
	}
	h.wg.Wait()
	side := make([]byte, 0, len(h.sums)*Size)
	for _, s := range h.sums {
		side = append(side, s[:]...)
	}
	return Digest{Size: h.n, Sidecar: side}
}

// Sidecar is a verified sidecar: the chunk digests of a size-byte file.
type Sidecar struct {
	size int64
	sums []byte
}

// ParseSidecar checks that b is the sidecar of a size-byte file whose
// digest is sum (lower-case hex): its length, then its SHA-256.
func ParseSidecar(b []byte, size int64, sum string) (Sidecar, error) {
	if int64(len(b)) != SidecarBytes(size) {
		return Sidecar{}, fmt.Errorf("chunk digest sidecar has %d bytes; a %d-byte file has %d chunks of %d bytes, so %d", len(b), size, Count(size), ChunkBytes, SidecarBytes(size))
	}
	if got := (Digest{Size: size, Sidecar: b}).Hex(); got != sum {
		return Sidecar{}, &MismatchError{Sidecar: true, Got: got, Want: sum}
	}
	return Sidecar{size: size, sums: b}, nil
}

// FileSize is the size of the file the sidecar describes.
func (s Sidecar) FileSize() int64 { return s.size }

// Check verifies data as chunk i of the file.
func (s Sidecar) Check(i int, data []byte) error {
	lo, hi := Span(s.size, i)
	if i < 0 || i >= Count(s.size) || int64(len(data)) != hi-lo {
		return fmt.Errorf("chunk %d of a %d-byte file cannot hold %d bytes", i, s.size, len(data))
	}
	got := sha256.Sum256(data)
	if string(got[:]) != string(s.sums[i*Size:(i+1)*Size]) {
		return &MismatchError{Chunk: i, Lo: lo, Hi: hi, Got: hex.EncodeToString(got[:]), Want: hex.EncodeToString(s.sums[i*Size : (i+1)*Size])}
	}
	return nil
}

// MismatchError reports a chunk (or the sidecar itself) whose bytes do not
// hash to the recorded digest.
type MismatchError struct {
	Sidecar   bool  // the sidecar does not hash to the file's digest
	Chunk     int   // else: the chunk index
	Lo, Hi    int64 // and its byte range [Lo, Hi)
	Got, Want string
}

func (e *MismatchError) Error() string {
	if e.Sidecar {
		return fmt.Sprintf("checksum mismatch: the chunk digest sidecar hashes to %s, the file's digest is %s", e.Got, e.Want)
	}
	return fmt.Sprintf("checksum mismatch in bytes [%d, %d) (chunk %d): SHA-256 %s, sidecar says %s", e.Lo, e.Hi, e.Chunk, e.Got, e.Want)
}
