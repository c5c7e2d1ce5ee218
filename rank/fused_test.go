package rank

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
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
		want := &source{m: m, rows: rows, cols: cols, cosine: true}
		werr := want.computeNorms(ids, "Gallery", threads)
		got, gerr := newSource(m, ids, "Gallery", Cosine, Float64, threads, sc)
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
