package compress

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// blockRows is the unit of work of forRows. It is fixed so that nothing a
// worker computes depends on the number of workers.
const blockRows = 64

// forRows calls a per-worker row function for every i in [0, n), spreading
// blocks of rows over GOMAXPROCS goroutines. Each row must be computed
// independently of the others, which makes the result independent of the
// scheduling. newWorker is called once per goroutine (for scratch buffers).
func forRows(ctx context.Context, n int, newWorker func() func(i int)) error {
	blocks := (n + blockRows - 1) / blockRows
	workers := min(runtime.GOMAXPROCS(0), blocks)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := newWorker()
			for {
				b := int(next.Add(1) - 1)
				if b >= blocks || ctx.Err() != nil {
					return
				}
				for i := b * blockRows; i < min(n, (b+1)*blockRows); i++ {
					row(i)
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// linearMap is a fitted linear compressor: y = ((x − mean)·Wᵀ) / divisor.
// W (k×d) is stored transposed (wt, d×k) or, for the sparse random
// projection, as per-column lists of ±scale entries. Every output value is
// accumulated over the input columns in ascending order, skipping zeros, so
// a dense row and its CSR form give bit-identical results.
type linearMap struct {
	k, d    int
	wt      []float64 // d×k, dense maps
	sp      *sparseProjection
	mean    []float64 // pca only
	divisor []float64 // whitening: output column j is divided by divisor[j]
}

// apply maps every row of m, returning the rows×k result (row-major).
func (lm *linearMap) apply(ctx context.Context, m matrix.Matrix) ([]float64, error) {
	n, k := m.Rows(), lm.k
	out := make([]float64, n*k)
	csr, _ := m.(*matrix.CSR)
	err := forRows(ctx, n, func() func(i int) {
		var vals []float64
		x := make([]float64, lm.d)
		return func(i int) {
			dst := out[i*k : (i+1)*k]
			if csr != nil {
				var idx []int32
				idx, vals = csr.RowEntries(i, vals)
				for e, c := range idx {
					lm.accumulate(dst, int(c), vals[e])
				}
			} else {
				m.RowFloat64(i, x)
				for c, v := range x {
					if lm.mean != nil {
						v -= lm.mean[c]
					}
					lm.accumulate(dst, c, v)
				}
			}
			for j, s := range lm.divisor {
				if s > 0 {
					dst[j] /= s
				}
			}
		}
	})
	return out, err
}

// accumulate adds v times column c of Wᵀ to dst.
func (lm *linearMap) accumulate(dst []float64, c int, v float64) {
	if v == 0 {
		return
	}
	if lm.sp != nil {
		a := v * lm.sp.scale
		for e, r := range lm.sp.rows[c] {
			if lm.sp.pos[c][e] {
				dst[r] += a
			} else {
				dst[r] -= a
			}
		}
		return
	}
	w := lm.wt[c*lm.k : (c+1)*lm.k]
	for j := range dst {
		dst[j] += v * w[j]
	}
}

// transpose returns the c×r transpose of the r×c row-major matrix a.
func transpose(a []float64, r, c int) []float64 {
	t := make([]float64, r*c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			t[j*r+i] = a[i*c+j]
		}
	}
	return t
}

// outputDType is the element type of a compressed endpoint: the requested
// dtype, else the input's (SPEC §8.2).
func outputDType(cfg Config, in matrix.Matrix) matrix.DType {
	if cfg.DType != nil {
		if t, err := matrix.ParseDType(*cfg.DType); err == nil {
			return t
		}
	}
	return in.DType()
}

// newDense stores rows×cols float64 values as a dense matrix of dtype t,
// failing on values the type cannot represent.
func newDense(side string, rows, cols int, data []float64, t matrix.DType) (*matrix.Dense, error) {
	for e, v := range data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("compress: %s row %d, column %d: compressed value is not finite", side, e/cols, e%cols)
		}
	}
	switch t {
	case matrix.Float64:
		return matrix.NewDense64(rows, cols, data)
	case matrix.Float32:
		out := make([]float32, len(data))
		for e, v := range data {
			f := float32(v)
			if math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("compress: %s row %d, column %d: value %v cannot be represented in float32", side, e/cols, e%cols, v)
			}
			out[e] = f
		}
		return matrix.NewDense32(rows, cols, out)
	case matrix.Float16:
		out := make([]uint16, len(data))
		for e, v := range data {
			b, ok := float16Bits(v)
			if !ok {
				return nil, fmt.Errorf("compress: %s row %d, column %d: value %v cannot be represented in float16", side, e/cols, e%cols, v)
			}
			out[e] = b
		}
		return matrix.NewDense16(rows, cols, out)
	}
	return nil, fmt.Errorf("compress: unsupported output dtype %v", t)
}

// float16Bits rounds x to the nearest binary16 value (ties to even) and
// returns its bit pattern; ok is false when x overflows float16. Rounding
// is done directly from float64: going through float32 first could round
// twice.
func float16Bits(x float64) (bits uint16, ok bool) {
	const maxHalf = 65504.0 // largest finite binary16
	a := math.Abs(x)
	// 65520 is halfway between 65504 and 2^16; it and anything above round
	// to infinity.
	if math.IsNaN(x) || a >= 65520 {
		return 0, false
	}
	var r float64
	if a != 0 {
		_, e := math.Frexp(a) // a = f·2^e, f in [0.5, 1)
		exp := max(e-1, -14)  // binary16 exponent, subnormals share -14
		q := math.Ldexp(1, exp-10)
		r = math.RoundToEven(a/q) * q // exact: a/q and the product are scalings by powers of two
	}
	if r > maxHalf {
		return 0, false
	}
	// r is exactly representable in binary16; assemble the pattern.
	var h uint16
	if math.Signbit(x) {
		h = 0x8000
	}
	if r == 0 {
		return h, true
	}
	f, e := math.Frexp(r)
	exp := e - 1
	if exp < -14 {
		// Subnormal: r = m·2^-24.
		return h | uint16(math.Ldexp(r, 24)), true
	}
	mant := uint16(math.Ldexp(f, 11)) - 1024 // f·2^11 in [1024, 2048)
	return h | uint16(exp+15)<<10 | mant, true
}

// float16Value decodes a binary16 pattern produced by float16Bits.
func float16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	if e == 0 {
		return sign * math.Ldexp(m, -24)
	}
	return sign * math.Ldexp(1024+m, e-25)
}
