package rank

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// The fused endpoint pass finds what the separate passes find, bit for
// bit: the first non-finite value in row-major order (NaN, ±Inf, in one or
// several chunks), the cosine norms of every row and the zero-norm rows,
// for float32 and float64 storage, small and large endpoints and 1–3
// threads.
func TestFusedScanEqualsSeparatePasses(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for trial := range 60 {
		rows := []int{1, 7, 300, 5000}[trial%4]
		cols := []int{1, 3, 17, 384}[(trial/4)%4]
		v := make([]float64, rows*cols)
		for i := range v {
			v[i] = r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20)
		}
		for range r.IntN(4) { // zero rows
			i := r.IntN(rows)
			clear(v[i*cols : (i+1)*cols])
		}
		if trial%3 == 0 { // non-finite values, possibly in several chunks
			for range 1 + r.IntN(3) {
				v[r.IntN(len(v))] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[r.IntN(3)]
			}
		}
		var m matrix.Matrix
		if trial%2 == 0 {
			m, _ = matrix.NewDense64(rows, cols, v)
		} else {
			f := make([]float32, len(v))
			for i, x := range v {
				f[i] = float32(x)
			}
			m, _ = matrix.NewDense32(rows, cols, f)
		}
		ids := make([]string, rows)
		for i := range ids {
			ids[i] = string(rune('a' + i%26))
		}
		threads := 1 + trial%3
		sc := scanEndpoint(m, true, threads)
		wr, wc, wbad := matrix.FirstNonFinite(m)
		if sc.bad != wbad || (wbad && (sc.badRow != wr || sc.badCol != wc)) {
			t.Fatalf("trial %d: non-finite at (%d,%d,%v), want (%d,%d,%v)", trial, sc.badRow, sc.badCol, sc.bad, wr, wc, wbad)
		}
		if wbad {
			continue
		}
		want := &source{m: m, stride: 1, rows: rows, cols: cols, cosine: true}
		werr := want.computeNorms(sliceNames(ids), "Gallery", threads)
		got, gerr := newSource(m, sliceNames(ids), "Gallery", Cosine, Float64, threads, sc, allRows(m.Rows()))
		if !reflect.DeepEqual(got.norms, want.norms) {
			t.Fatalf("trial %d: norms differ", trial)
		}
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("trial %d: zero-norm error %v, want %v", trial, gerr, werr)
		}
		if dot := scanEndpoint(m, false, threads); dot.norms != nil || dot.bad {
			t.Fatalf("trial %d: a dot scan computes no norms", trial)
		}
	}
}

// On read-only storage (a mapped file) the fused scan is remembered: the
// load-time check (FirstNonFinite) leaves the scan, with its cosine norms,
// where scoring finds it, and scoring from it gives the same bits as
// scoring a fresh copy.
func TestFusedScanIsRemembered(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const nq, ng, d = 30, 700, 17
	mk := func(n int) []float32 {
		v := make([]float32, n*d)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	qv, gv := mk(nq), mk(ng)
	p := func(readOnly bool) Problem {
		q, _ := matrix.NewDense32(nq, d, slices.Clone(qv))
		g, _ := matrix.NewDense32(ng, d, slices.Clone(gv))
		if readOnly {
			q.ReadOnly()
			g.ReadOnly()
		}
		rel := make([][]retrieval.Positive, nq)
		for i := range rel {
			rel[i] = []retrieval.Positive{{Index: (i * 13) % ng, Grade: 1}}
		}
		ids := func(n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = strconv.Itoa(i)
			}
			return out
		}
		return Problem{Queries: q, Gallery: g, Relevance: rel, QueryIDs: ids(nq), GalleryIDs: ids(ng)}
	}
	for _, sim := range []Similarity{Cosine, Dot} {
		want, err := Score(context.Background(), p(false), Options{Similarity: sim, QueryBatch: 8, GalleryBatch: 64, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		ro := p(true)
		g := ro.Gallery.(*matrix.Dense)
		if _, _, bad := FirstNonFinite(g, sim, 2); bad {
			t.Fatal("finite gallery reported non-finite")
		}
		if !g.KnownFinite() {
			t.Fatal("the scan did not record the gallery as finite")
		}
		sc := g.Memo(scanKey{sim == Cosine}, func() any { return nil })
		if sc == nil || (sim == Cosine) != (sc.(*endpointScan).norms != nil) {
			t.Fatalf("%v: scan not remembered: %v", sim, sc)
		}
		got, err := Score(context.Background(), ro, Options{Similarity: sim, QueryBatch: 8, GalleryBatch: 64, Threads: 2})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: scoring from the remembered scan differs (%v)", sim, err)
		}
	}
	// Scoring uses the remembered scan: one planted on finite storage (a
	// false record no real scan would make) is what the check reports.
	planted := p(true)
	g := planted.Gallery.(*matrix.Dense)
	g.Memo(scanKey{true}, func() any { return &endpointScan{bad: true, badRow: 5, badCol: 3} })
	_, err := Score(context.Background(), planted, Options{Similarity: Cosine, QueryBatch: 8, GalleryBatch: 64})
	if err == nil || !strings.Contains(err.Error(), "row 5, column 3") {
		t.Fatalf("planted scan not used: %v", err)
	}
}
