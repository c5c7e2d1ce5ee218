package retrieval

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// materialisedTriples is the []any the explicit forms hash: every stored
// pair [q, g, 1] of the classes, query then gallery order.
func materialisedTriples(c *Classes) []any {
	out := []any{}
	for q := range c.Query {
		for _, p := range c.Positives(q) {
			out = append(out, []any{q, p.Index, p.Grade})
		}
	}
	return out
}

func checkLabelText(t *testing.T, qc, gc []int32) {
	t.Helper()
	c := NewClasses(qc, gc)
	want, err := canonjson.Marshal(materialisedTriples(c))
	if err != nil {
		t.Fatal(err)
	}
	arr := c.labelTriples()
	for pass := range 2 { // an Array encoded twice restamps from its last state
		got, err := canonjson.Marshal(arr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("pass %d, query classes %v, gallery classes %v:\n got %.300s\nwant %.300s", pass, qc, gc, got, want)
		}
	}
}

// The in-place label text is byte for byte the canonical JSON of the
// materialised triples: hand-picked edge cases (no positives at all, classes
// without gallery members or without queries, query indices crossing digit
// widths in and out of order) and random class structures.
func TestLabelTextEqualsCanonical(t *testing.T) {
	cases := []struct{ q, g []int32 }{
		{nil, nil},
		{[]int32{0}, []int32{1}},          // no positive
		{[]int32{0}, []int32{0}},          // one pair
		{[]int32{1, 1, 0}, []int32{0, 0}}, // last query only
		{[]int32{2, 0, 1, 0}, []int32{1, 0, 1, 3}},
	}
	for _, tc := range cases {
		checkLabelText(t, tc.q, tc.g)
	}
	// 120 queries cross widths 1→2→3; alternating classes interleave the
	// restamping of two texts of one width.
	q := make([]int32, 1205)
	for i := range q {
		q[i] = int32(i % 2)
	}
	checkLabelText(t, q, []int32{0, 1, 1, 0, 2, 0})
	r := rand.New(rand.NewPCG(13, 19))
	for range 300 {
		nc := 1 + r.IntN(6)
		qc := make([]int32, r.IntN(250))
		gc := make([]int32, r.IntN(40))
		for i := range qc {
			qc[i] = int32(r.IntN(nc))
		}
		for i := range gc {
			gc[i] = int32(r.IntN(nc + 1)) // class nc has no query
		}
		checkLabelText(t, qc, gc)
	}
}

// FuzzLabelText: any class structure (bytes: class of each query, then of
// each gallery row) gives the canonical text of its materialised pairs.
func FuzzLabelText(f *testing.F) {
	f.Add([]byte{3, 0, 1, 0, 1, 0, 0, 1})
	f.Add([]byte{0})
	f.Add(bytes.Repeat([]byte{0}, 130))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || len(b) > 4096 {
			return
		}
		nq := int(b[0]) * 8
		b = b[1:]
		qc := make([]int32, nq)
		for i := range qc {
			if len(b) > 0 {
				qc[i] = int32(b[i%len(b)] % 5)
			}
		}
		gc := make([]int32, len(b))
		for i, v := range b {
			gc[i] = int32(v>>4) % 6
		}
		checkLabelText(t, qc, gc)
	})
}

// Whole datasets with random labels and exclusions: the content identity
// key and the protocol fingerprint of the implicit classes equal those of
// the materialised pairs.
func TestLabelDatasetFingerprintsWithExclusions(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 20 {
		nc := 1 + r.IntN(4)
		nq, ng := 1+r.IntN(130), nc+r.IntN(30)
		ql, gl := make([]string, nq), make([]string, ng)
		qids, gids := make([]string, nq), make([]string, ng)
		for i := range ql {
			ql[i], qids[i] = "c"+strconv.Itoa(r.IntN(nc)), "q"+strconv.Itoa(i)
		}
		for i := range gl {
			gl[i], gids[i] = "c"+strconv.Itoa(r.IntN(nc)), "g"+strconv.Itoa(i)
			if i < nc { // every class keeps gallery row i, never excluded
				gl[i] = "c" + strconv.Itoa(i)
			}
		}
		var excl []Pair
		for q := range nq {
			for g := nc; g < ng; g++ {
				if r.IntN(4) == 0 {
					excl = append(excl, Pair{QueryID: qids[q], GalleryID: gids[g]})
				}
			}
		}
		qv, gv := make([]float64, nq), make([]float64, ng)
		for i := range qv {
			qv[i] = float64(i + 1)
		}
		for i := range gv {
			gv[i] = float64(i + 1)
		}
		qm, _ := matrix.NewDense64(nq, 1, qv)
		gm, _ := matrix.NewDense64(ng, 1, gv)
		build := func(opts ...Option) *Dataset {
			ds, err := NewDataset(DatasetInputs{Queries: Embeddings(qm), Gallery: Embeddings(gm), QueryIDs: qids, GalleryIDs: gids,
				Identity: FromContent()}, LabelRelevance(ql, gl), append(opts, WithExclusions(excl))...)
			if err != nil {
				t.Fatal(err)
			}
			return ds
		}
		a, b := build(), build(WithMaterialisedLabels())
		fa, err1 := a.ProtocolFingerprint(DefaultConfig())
		fb, err2 := b.ProtocolFingerprint(DefaultConfig())
		if a.IdentityKey() != b.IdentityKey() || err1 != nil || err2 != nil || fa != fb {
			t.Fatalf("nq %d ng %d: keys %s %s, fingerprints %s %s (%v %v)", nq, ng, a.IdentityKey(), b.IdentityKey(), fa, fb, err1, err2)
		}
	}
}
