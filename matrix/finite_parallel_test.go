package matrix

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The parallel scan reports the serial scan's entry: the first non-finite
// value in row-major order, with several bad rows in different chunks, for
// every storage type and 1–4 threads.
func TestFirstNonFiniteParallelEqualsSerial(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for trial := range 80 {
		rows, cols := 1+r.IntN(3000), 1+r.IntN(9)
		v := make([]float64, rows*cols)
		for i := range v {
			v[i] = r.NormFloat64()
		}
		for range r.IntN(4) {
			v[r.IntN(len(v))] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[r.IntN(3)]
		}
		var m Matrix
		switch trial % 3 {
		case 0:
			m, _ = NewDense64(rows, cols, v)
		case 1:
			f := make([]float32, len(v))
			for i, x := range v {
				f[i] = float32(x)
			}
			m, _ = NewDense32(rows, cols, f)
		default:
			h := make([]uint16, len(v))
			for i, x := range v {
				h[i] = 0x3c00 // 1.0
				if math.IsNaN(x) || math.IsInf(x, 0) {
					h[i] = 0x7c00 // +Inf
				}
			}
			m, _ = NewDense16(rows, cols, h)
		}
		wr, wc, wok := FirstNonFinite(m)
		gr, gc, gok := FirstNonFiniteParallel(m, 1+trial%4)
		if wok != gok || (wok && (wr != gr || wc != gc)) {
			t.Fatalf("trial %d: got (%d,%d,%v), want (%d,%d,%v)", trial, gr, gc, gok, wr, wc, wok)
		}
	}
}
