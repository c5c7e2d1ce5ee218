package treceval

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/formats"
)

// DefaultGroupChunkBytes is the run bytes EvaluateUngrouped sorts in memory
// at a time.
const DefaultGroupChunkBytes = 16 << 20

// EvaluateUngrouped is Evaluate for a run whose query lines need not be
// contiguous (`evaluate-run --presorted=false`). The run is grouped by query
// with an external merge sort in bounded memory: chunks of about chunkBytes
// of run lines are sorted by query ID (stably, so each query keeps its line
// order) into temporary files under tmpDir ("" = the OS default), which are
// merged into the evaluator and removed before it returns. Messages still
// name the original line numbers, and run_sha256 is that of the original
// bytes. Results equal Evaluate on the same run grouped with
// `LC_ALL=C sort -s -k1,1`.
func EvaluateUngrouped(ctx context.Context, q *Qrels, r io.Reader, runPath string, opts Options, tmpDir string, chunkBytes int) (*Result, error) {
	if chunkBytes <= 0 {
		chunkBytes = DefaultGroupChunkBytes
	}
	h := sha256.New()
	g := &grouper{path: runPath, dir: tmpDir, limit: chunkBytes}
	defer g.removeAll()
	if err := g.split(ctx, io.TeeReader(r, h)); err != nil {
		return nil, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(g.merge(ctx, pw))
	}()
	res, err := evaluateRun(ctx, q, pr, runPath, opts, true, func() string { return sum })
	pr.Close() // stops the merge if the evaluator failed early
	<-done     // the chunk files are closed before removeAll
	return res, err
}

// grouper holds the sorted chunk files of one run.
type grouper struct {
	path  string
	dir   string
	limit int
	files []string

	arena []byte
	lines []groupLine
}

// groupLine is one run line of the chunk in memory.
type groupLine struct {
	qOff, qEnd int // the query ID in arena
	start, end int // the line in arena
	num        int // original line number
}

// split reads the run, sorting and spilling a chunk whenever it reaches the
// byte limit. Blank and comment lines are dropped (the evaluator skips them).
func (g *grouper) split(ctx context.Context, r io.Reader) error {
	src := newLineSource(r, g.path)
	var f [runFields][]byte
	// One arena for the whole run, reused per chunk: no regrowth garbage.
	g.arena = make([]byte, 0, min(g.limit+4096, 1<<30))
	for {
		line, ok, err := src.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if src.line == 1 && bytes.HasPrefix(line, utf8BOM) {
			return formats.LineErrorf(g.path, 1, "file starts with a UTF-8 byte order mark; IDs are compared byte-exactly, so save the file without one")
		}
		if src.line%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line = bytes.TrimRight(line, "\r\n")
		if n := splitFields(line, &f); n == 0 || f[0][0] == '#' {
			continue
		}
		start := len(g.arena)
		g.arena = append(g.arena, line...)
		qOff := start + (cap(line) - cap(f[0])) // f[0] is a subslice of line
		g.lines = append(g.lines, groupLine{qOff: qOff, qEnd: qOff + len(f[0]), start: start, end: len(g.arena), num: src.line})
		if len(g.arena) >= g.limit {
			if err := g.spill(); err != nil {
				return err
			}
		}
	}
	if len(g.lines) > 0 {
		return g.spill()
	}
	return nil
}

// spill sorts the chunk by query ID (stable) and writes it as
// "<line number>\t<line>\n" records to a temporary file.
func (g *grouper) spill() error {
	slices.SortStableFunc(g.lines, func(a, b groupLine) int {
		return bytes.Compare(g.arena[a.qOff:a.qEnd], g.arena[b.qOff:b.qEnd])
	})
	f, err := os.CreateTemp(g.dir, "vertebrae-rungroup-*")
	if err != nil {
		return fmt.Errorf("group run lines of %s: %w", g.path, err)
	}
	g.files = append(g.files, f.Name())
	bw := bufio.NewWriterSize(f, 1<<16)
	var num []byte
	for _, l := range g.lines {
		num = strconv.AppendInt(num[:0], int64(l.num), 10)
		bw.Write(num)
		bw.WriteByte('\t')
		bw.Write(g.arena[l.start:l.end])
		bw.WriteByte('\n')
	}
	err = bw.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("group run lines of %s: %w", g.path, err)
	}
	g.arena, g.lines = g.arena[:0], g.lines[:0]
	return nil
}

// mergeHead is the next record of one chunk file.
type mergeHead struct {
	rec   []byte // "<num>\t<line>\n"
	qid   []byte // into rec
	chunk int
	br    *bufio.Reader
}

type mergeHeap []*mergeHead

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if c := bytes.Compare(h[i].qid, h[j].qid); c != 0 {
		return c < 0
	}
	return h[i].chunk < h[j].chunk // earlier chunks hold earlier lines: stable
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(*mergeHead)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// advance reads the head's next record; false at the end of its file.
func (m *mergeHead) advance() (bool, error) {
	rec, err := m.br.ReadBytes('\n')
	if len(rec) == 0 {
		if err == io.EOF {
			return false, nil
		}
		return false, err
	}
	m.rec = rec
	_, line, _ := bytes.Cut(rec, []byte{'\t'})
	var f [runFields][]byte
	splitFields(line, &f)
	m.qid = f[0]
	return true, nil
}

// merge writes the chunks' records to w in (query ID, original order).
func (g *grouper) merge(ctx context.Context, w io.Writer) error {
	var h mergeHeap
	for i, name := range g.files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		m := &mergeHead{chunk: i, br: bufio.NewReaderSize(f, 1<<16)}
		ok, err := m.advance()
		if err != nil {
			return err
		}
		if ok {
			h = append(h, m)
		}
	}
	heap.Init(&h)
	bw := bufio.NewWriterSize(w, 1<<16)
	for n := 0; len(h) > 0; n++ {
		if n%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		m := h[0]
		if _, err := bw.Write(m.rec); err != nil {
			return err
		}
		ok, err := m.advance()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return bw.Flush()
}

func (g *grouper) removeAll() {
	for _, f := range g.files {
		os.Remove(f)
	}
}

// atoiBytes parses the line number of a numbered record (always written by
// spill, so always valid).
func atoiBytes(b []byte) int {
	n := 0
	for _, c := range b {
		n = n*10 + int(c-'0')
	}
	return n
}
