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

// A read-only matrix remembers a clean scan (Dense.finite), so its later
// checks are free; the answer must stay that of a fresh scan whatever the
// order of serial, parallel and row-slice scans, including a bad value in
// the last chunk only (a chunk's clean scan must not mark the whole).
func TestFirstNonFiniteReadOnlyRemembered(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 60 {
		rows, cols := 2+r.IntN(5000), 1+r.IntN(5)
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		switch trial % 3 {
		case 1:
			v[len(v)-1-r.IntN(cols)] = float32(math.NaN())
		case 2:
			v[r.IntN(len(v))] = float32(math.Inf(-1))
		}
		plain, _ := NewDense32(rows, cols, v)
		wr, wc, wok := FirstNonFinite(plain)
		ro, _ := NewDense32(rows, cols, v)
		ro.ReadOnly()
		_, _, _ = FirstNonFinite(ro.RowSlice(0, rows/2)) // a clean half, scanned first
		for k := range 3 {
			var gr, gc int
			var gok bool
			if k == 1 {
				gr, gc, gok = FirstNonFinite(ro)
			} else {
				gr, gc, gok = FirstNonFiniteParallel(ro, 1+trial%3)
			}
			if gok != wok || (wok && (gr != wr || gc != wc)) {
				t.Fatalf("trial %d, scan %d: got (%d,%d,%v), want (%d,%d,%v)", trial, k, gr, gc, gok, wr, wc, wok)
			}
		}
		if ro.knownFinite() != !wok {
			t.Fatalf("trial %d: remembered finite = %v for a matrix with a non-finite value = %v", trial, ro.knownFinite(), wok)
		}
		if plain.knownFinite() {
			t.Fatalf("trial %d: writable storage must not remember a scan", trial)
		}
	}
}

// firstNonFinite tests spans with vector loops: every position of a NaN
// or infinity, in slices that end inside or outside a vector or a span,
// next to the largest finite values (whose x−x is still 0), is found.
func TestFirstNonFiniteEveryPosition(t *testing.T) {
	lengths := []int{4095, 4096, 4097, 8193}
	for n := 0; n <= 41; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		v64 := make([]float64, n)
		for i := range v64 {
			v64[i] = []float64{math.MaxFloat64, -math.MaxFloat64, 5e-324, 0, -1.5}[i%5]
		}
		v32 := make([]float32, n)
		for i := range v32 {
			v32[i] = []float32{math.MaxFloat32, -math.MaxFloat32, 1e-45, 0, -1.5}[i%5]
		}
		if got := firstNonFinite(v64); got != -1 {
			t.Fatalf("finite float64 length %d: got %d", n, got)
		}
		if got := firstNonFinite(v32); got != -1 {
			t.Fatalf("finite float32 length %d: got %d", n, got)
		}
		for p := 0; p < n; p++ {
			if n > 41 && p > 20 && p < n-20 && p%4096 > 20 && p%4096 < 4076 {
				continue // long slices: the positions around the vector and span ends
			}
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				w64 := append([]float64(nil), v64...)
				w64[p] = bad
				if p+3 < n {
					w64[p+3] = math.NaN() // a later one must not be reported
				}
				if got := firstNonFinite(w64); got != p {
					t.Fatalf("float64 length %d, %v at %d: got %d", n, bad, p, got)
				}
				w32 := append([]float32(nil), v32...)
				w32[p] = float32(bad)
				if got := firstNonFinite(w32); got != p {
					t.Fatalf("float32 length %d, %v at %d: got %d", n, bad, p, got)
				}
			}
		}
	}
}
