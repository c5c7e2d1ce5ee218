package retrieval

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// countingMemo is a HashMemo in memory.
type countingMemo struct {
	sums       map[string]string
	hits, puts int
}

func (m *countingMemo) LookupSum(k string) (string, bool) {
	s, ok := m.sums[k]
	if ok {
		m.hits++
	}
	return s, ok
}

func (m *countingMemo) StoreSum(k, s string) { m.puts++; m.sums[k] = s }

// The content identity and the relevance (and protocol) fingerprint of a
// label dataset hashed through a memo equal those hashed from the text, on
// a miss and on a hit; any change of labels, IDs or values misses.
func TestLabelHashMemo(t *testing.T) {
	defer func(n int) { memoPairs = n }(memoPairs)
	memoPairs = 1
	r := rand.New(rand.NewPCG(3, 5))
	memo := &countingMemo{sums: map[string]string{}}
	type result struct{ key, fp string }
	fingerprints := func(t *testing.T, ql, gl []string, gv []float64, opts ...Option) result {
		t.Helper()
		qv := make([]float64, len(ql))
		for i := range qv {
			qv[i] = float64(i + 1)
		}
		qm, _ := matrix.NewDense64(len(ql), 1, qv)
		gm, _ := matrix.NewDense64(len(gl), 1, gv)
		ds, err := NewDataset(DatasetInputs{Queries: Embeddings(qm), Gallery: Embeddings(gm), Identity: FromContent()},
			LabelRelevance(ql, gl), opts...)
		if err != nil {
			t.Fatal(err)
		}
		fp, err := ds.ProtocolFingerprint(DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		return result{ds.IdentityKey(), fp}
	}
	for i := range 12 {
		nc := 1 + r.IntN(4)
		nq, ng := 1+r.IntN(40), nc+r.IntN(40)
		ql, gl, gv := make([]string, nq), make([]string, ng), make([]float64, ng)
		for i := range ql {
			ql[i] = "c" + strconv.Itoa(r.IntN(nc))
		}
		for i := range gl {
			gl[i], gv[i] = "c"+strconv.Itoa(r.IntN(nc)), float64(i)
			if i < nc { // every class has a gallery row
				gl[i] = "c" + strconv.Itoa(i)
			}
		}
		want := fingerprints(t, ql, gl, gv)
		hits, puts := memo.hits, memo.puts
		if got := fingerprints(t, ql, gl, gv, WithHashMemo(memo)); got != want || memo.hits != hits || memo.puts != puts+2 {
			t.Fatalf("case %d, miss: %v, want %v (%d hits, %d stores)", i, got, want, memo.hits-hits, memo.puts-puts)
		}
		if got := fingerprints(t, ql, gl, gv, WithHashMemo(memo)); got != want || memo.hits != hits+2 || memo.puts != puts+2 {
			t.Fatalf("case %d, hit: %v, want %v (%d hits, %d stores)", i, got, want, memo.hits-hits, memo.puts-puts)
		}
		// Another label, another gallery value: both miss, both right.
		ql2 := append([]string(nil), ql...)
		ql2[r.IntN(nq)] = "c" + strconv.Itoa(nc) // a class of its own...
		gl2 := append(append([]string(nil), gl...), "c"+strconv.Itoa(nc))
		gv2 := append(append([]float64(nil), gv...), -1) // ...with this row
		gv3 := append([]float64{-7}, gv[1:]...)
		cases := []struct {
			ql, gl []string
			gv     []float64
		}{{ql2, gl2, gv2}, {ql, gl, gv3}}
		if ng > nc && nc > 1 { // only the relevance differs: one gallery row changes class
			gl3 := append([]string(nil), gl...)
			j := nc + r.IntN(ng-nc)
			gl3[j] = map[bool]string{true: "c1", false: "c0"}[gl3[j] == "c0"]
			cases = append(cases, struct {
				ql, gl []string
				gv     []float64
			}{ql, gl3, gv})
		}
		for _, c := range cases {
			want := fingerprints(t, c.ql, c.gl, c.gv)
			hits := memo.hits
			if got := fingerprints(t, c.ql, c.gl, c.gv, WithHashMemo(memo)); got != want || memo.hits != hits {
				t.Fatalf("case %d, changed dataset: %v, want %v (%d hits)", i, got, want, memo.hits-hits)
			}
		}
	}
	// A hit is what the dataset reports: planted sums change both keys.
	ql, gl, gv := []string{"a", "b"}, []string{"a", "b", "a"}, []float64{1, 2, 3}
	want := fingerprints(t, ql, gl, gv, WithHashMemo(memo))
	for k := range memo.sums {
		memo.sums[k] = strings.Repeat("0", 64)
	}
	if got := fingerprints(t, ql, gl, gv, WithHashMemo(memo)); got.key == want.key || got.fp == want.fp {
		t.Fatalf("planted sums were not read: %v", got)
	}
	// Small relevance is hashed as text: the memo is not consulted.
	memoPairs = 1 << 20
	hits, puts := memo.hits, memo.puts
	if got := fingerprints(t, ql, gl, gv, WithHashMemo(memo)); got != want || memo.hits != hits || memo.puts != puts {
		t.Fatalf("below memoPairs: %v, want %v (%d hits, %d stores)", got, want, memo.hits-hits, memo.puts-puts)
	}
}
