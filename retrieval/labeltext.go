package retrieval

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
)

// labelTriples is the canonical [qi, gi, 1] list of every stored pair of
// label-derived relevance, written while it is hashed: the same text as the
// []any of the explicit forms (SPEC §2.7: hashed as if every pair were
// stored; §2.9 content identity and §10.3 relevance fingerprint).
//
// One array element per query with positives: its run "[q,g,1],[q,g,1],…"
// in ascending g. The runs of the queries of one class whose indices have
// the same number of digits differ only in those digits, so each (class,
// width) keeps one text whose query-digit slots are restamped in place:
// moving to the next query rewrites only the digit positions that changed
// (usually the last one, queries come in ascending order) and the text goes
// to the writer as it is. Nothing is copied or allocated per query, and the
// texts held are a few times the class members, whatever the number of
// pairs (one class of 20,000 members and 2,000 queries: 40 million
// triples, 560 MB of text, from about 1 MB of texts).
func (c *Classes) labelTriples() canonjson.Array {
	qs := make([]int32, 0, len(c.Query))
	for q, k := range c.Query {
		if len(c.members[k]) > 0 {
			qs = append(qs, int32(q))
		}
	}
	type key struct{ k, w int32 }
	texts := map[key]*runText{}
	return canonjson.Array{N: len(qs), Elem: func(i int, w canonjson.Writer) error {
		q := qs[i]
		var buf [20]byte
		d := strconv.AppendInt(buf[:0], int64(q), 10)
		kw := key{c.Query[q], int32(len(d))}
		t := texts[kw]
		if t == nil {
			t = newRunText(c.members[kw.k], len(d))
			texts[kw] = t
		}
		t.stamp(d)
		if f, ok := w.(interface{ Flush() error }); ok && len(t.text) >= 64<<10 {
			// A buffered writer passes a large write straight through
			// once its buffer is empty (the hash then reads the text
			// where it is) instead of copying a buffer-full first.
			if err := f.Flush(); err != nil {
				return err
			}
		}
		_, err := w.Write(t.text)
		return err
	}}
}

// runText is the run of triples of one class for query indices of one
// width, with the digits of the query last stamped.
type runText struct {
	text  []byte
	slots []int32 // offset of each triple's query digits
	cur   [20]byte
}

// newRunText lays out "[D,g,1],…" for members with width blank query
// digits (zero bytes, which no digit equals, so the first stamp writes
// every position).
func newRunText(members []int32, width int) *runText {
	t := &runText{slots: make([]int32, len(members))}
	n := 0
	for _, g := range members {
		n += len("[,,1],") + width + digits(g)
	}
	t.text = make([]byte, 0, n)
	for i, g := range members {
		if i > 0 {
			t.text = append(t.text, ',')
		}
		t.text = append(t.text, '[')
		t.slots[i] = int32(len(t.text))
		for range width {
			t.text = append(t.text, 0)
		}
		t.text = append(t.text, ',')
		t.text = strconv.AppendInt(t.text, int64(g), 10)
		t.text = append(t.text, ",1]"...)
	}
	return t
}

// stamp writes the query digits d (of the text's width) into every slot,
// position by position, only where they differ from the digits there now.
func (t *runText) stamp(d []byte) {
	for j, b := range d {
		if t.cur[j] == b {
			continue
		}
		text, slots := t.text[j:], t.slots
		for len(slots) >= 4 { // unrolled: this loop is most of the cost
			s := slots[:4:4]
			text[s[0]], text[s[1]], text[s[2]], text[s[3]] = b, b, b, b
			slots = slots[4:]
		}
		for _, off := range slots {
			text[off] = b
		}
		t.cur[j] = b
	}
}

func digits(g int32) int {
	n := 1
	for g >= 10 {
		g /= 10
		n++
	}
	return n
}

// memoPairs is the number of stored pairs from which label-derived
// relevance is hashed through the dataset's hash memo (WithHashMemo): below
// it, hashing the text costs less than reading a memo entry. A variable
// for tests.
var memoPairs = 1 << 20

// tripleKey is a canonjson.Array Key for labelTriples' text, or "" below
// memoPairs pairs. The text is a function of the class of every query and
// gallery row alone (which rows share a class, in row order), so their
// SHA-256 names it; the version prefix must change if the text ever does.
func (c *Classes) tripleKey() string {
	pairs := 0
	for _, k := range c.Query {
		pairs += len(c.members[k])
	}
	if pairs < memoPairs {
		return ""
	}
	h := sha256.New()
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(c.Query)))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(c.Gallery)))
	for _, side := range [][]int32{c.Query, c.Gallery} {
		for _, k := range side {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(k))
			if len(buf) >= 64<<10 {
				h.Write(buf)
				buf = buf[:0]
			}
		}
	}
	h.Write(buf)
	return "label-triples 1:" + hex.EncodeToString(h.Sum(nil))
}
