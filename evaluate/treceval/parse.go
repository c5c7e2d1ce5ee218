package treceval

import (
	"bufio"
	"bytes"
	"errors"
	"hash/maphash"
	"io"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/formats"
)

const (
	readBufSize = 256 << 10 // few read calls, and cheap to allocate for small runs
	// maxLineBytes bounds one run line so a file without line breaks cannot
	// exhaust memory; real lines are a few dozen bytes.
	maxLineBytes = 16 << 20
)

// lineSource yields the lines of a run file. A line that fits the read
// buffer is returned in place (valid until the next call), so the common
// case copies nothing.
type lineSource struct {
	br   *bufio.Reader
	long []byte // a line longer than the read buffer
	path string
	line int // 1-based number of the line last returned
}

func newLineSource(r io.Reader, path string) *lineSource {
	return &lineSource{br: bufio.NewReaderSize(r, readBufSize), path: path}
}

// next returns the next line including its line break; ok is false at the
// end of the input.
func (s *lineSource) next() (b []byte, ok bool, err error) {
	b, err = s.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.long = append(s.long[:0], b...)
		for err == bufio.ErrBufferFull {
			if len(s.long) > maxLineBytes {
				return nil, false, formats.LineErrorf(s.path, s.line+1, "run line longer than %d bytes", maxLineBytes)
			}
			b, err = s.br.ReadSlice('\n')
			s.long = append(s.long, b...)
		}
		b = s.long
	}
	if err != nil && err != io.EOF {
		return nil, false, &formats.Error{Path: s.path, Line: s.line + 1, Msg: "read failed", Err: err}
	}
	if len(b) == 0 {
		return nil, false, nil
	}
	s.line++
	return b, true, nil
}

// Byte classes for splitting: ASCII white space, other ASCII, and bytes
// that start (or continue) a multi-byte sequence.
const (
	classWord = iota
	classSpace
	classNonASCII
)

// byteClass is indexed by any byte, so lookups need no bounds check.
var byteClass = func() (t [256]uint8) {
	for _, c := range "\t\n\v\f\r " {
		t[c] = classSpace
	}
	for c := utf8.RuneSelf; c < 256; c++ {
		t[c] = classNonASCII
	}
	return t
}()

// spaceRune reports whether b starts with a non-ASCII white-space rune and
// the width of its first rune. The set is strings.Fields's
// (unicode.IsSpace), the one the TREC qrels reader splits on and the run
// writer refuses inside IDs; bytes that are not valid UTF-8 are not space.
func spaceRune(b []byte) (bool, int) {
	r, size := utf8.DecodeRune(b)
	return unicode.IsSpace(r), size
}

// runFields is the number of fields of a run line: qid Q0 docid rank score tag.
const runFields = 6

// splitFields stores the white-space separated fields of line in dst (as
// subslices, no copies) and returns how many fields there are, counting past
// len(dst) so a message can give the real number.
func splitFields(line []byte, dst *[runFields][]byte) int {
	n, i := 0, 0
	for i < len(line) {
		switch byteClass[line[i]] {
		case classSpace:
			i++
			continue
		case classNonASCII:
			if sp, w := spaceRune(line[i:]); sp {
				i += w
				continue
			}
		}
		start := i
	word:
		for i < len(line) {
			switch byteClass[line[i]] {
			case classWord:
				i++
			case classSpace:
				break word
			default:
				sp, w := spaceRune(line[i:])
				if sp {
					break word
				}
				i += w
			}
		}
		if n < len(dst) {
			dst[n] = line[start:i]
		}
		n++
	}
	return n
}

var (
	errNotInteger = errors.New("not an integer")
	errNotDecimal = errors.New("not a decimal number")
	errNonFinite  = errors.New("not finite")
)

// parseRank parses the rank column: a decimal integer (sign allowed).
func parseRank(b []byte) (int64, error) {
	// string(b) as an argument does not allocate: strconv copies its input
	// only into errors, so the conversion stays on the stack.
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, errNotInteger
	}
	return v, nil
}

// parseScore parses the score column as decimal floating point. Go's
// hexadecimal and underscore forms are refused; NaN is errNonFinite;
// infinities and values that overflow binary64 are ±Inf. −0 becomes +0.
func parseScore(b []byte) (float64, error) {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return 0, errNotDecimal
		}
		// ErrRange: ±Inf on overflow (rejected below), 0 on underflow.
	}
	if notDecimal(b) {
		return 0, errNotDecimal
	}
	// trec_eval reads scores with atof: inf and -inf (and overflowing
	// values) are ordinary extreme scores; NaN has no order and is refused.
	if math.IsNaN(v) {
		return 0, errNonFinite
	}
	return v + 0, nil
}

// notDecimal reports Go-only number syntax that ParseFloat accepts:
// hexadecimal mantissas and digit-separating underscores.
func notDecimal(b []byte) bool {
	for _, c := range b {
		if c == 'x' || c == 'X' || c == '_' {
			return true
		}
	}
	return false
}

// cand is one run line of the query being read.
type cand struct {
	score    float64
	rank     int64
	off, end int // document ID = block arena[off:end]
	line     int
	pos      int // index of the matching positive in Qrels.posDoc, or -1
}

// docSet detects a document ID listed twice for one query: an open
// addressing hash table of candidate indices, reset per query in O(1) by
// bumping a generation instead of clearing.
type docSet struct {
	seed  maphash.Seed
	slots []docSlot // length a power of two, at most half full
	gen   uint32
	n     int
}

type docSlot struct {
	gen  uint32
	cand int32
}

func newDocSet() *docSet {
	return &docSet{seed: maphash.MakeSeed(), slots: make([]docSlot, 1024), gen: 1}
}

func (s *docSet) reset() {
	s.n = 0
	s.gen++
	if s.gen == 0 { // wrapped: stale slots could look current
		clear(s.slots)
		s.gen = 1
	}
}

// insert adds candidate i (document arena[cs[i].off:cs[i].end]) and returns
// the index of an earlier candidate with the same document, or -1. Every
// candidate before i must have been inserted.
func (s *docSet) insert(cs []cand, arena []byte, i int) int {
	if 2*(s.n+1) > len(s.slots) {
		s.grow(cs, arena, i)
	}
	doc := arena[cs[i].off:cs[i].end]
	mask := len(s.slots) - 1
	for h := int(maphash.Bytes(s.seed, doc)) & mask; ; h = (h + 1) & mask {
		sl := &s.slots[h]
		if sl.gen != s.gen {
			*sl = docSlot{gen: s.gen, cand: int32(i)}
			s.n++
			return -1
		}
		if c := cs[sl.cand]; bytes.Equal(arena[c.off:c.end], doc) {
			return int(sl.cand)
		}
	}
}

// grow doubles the table and re-inserts candidates [0, i) of this query.
func (s *docSet) grow(cs []cand, arena []byte, i int) {
	s.slots = make([]docSlot, 2*len(s.slots))
	s.gen, s.n = 1, 0
	for j := 0; j < i; j++ {
		s.insert(cs, arena, j)
	}
}

// docCounter counts the distinct document IDs of a run (n_gallery, SPEC
// §6.7) in 16 bytes per document: it keeps two independent 64-bit hashes,
// not the IDs, so memory stays far below the run's size.
type docCounter struct {
	s1, s2 maphash.Seed
	seen   map[[2]uint64]struct{}
}

func newDocCounter() *docCounter {
	return &docCounter{s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), seen: map[[2]uint64]struct{}{}}
}

func (c *docCounter) add(doc []byte) {
	c.seen[[2]uint64{maphash.Bytes(c.s1, doc), maphash.Bytes(c.s2, doc)}] = struct{}{}
}

func (c *docCounter) len() int { return len(c.seen) }
