package compress

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// quantizer is the fitted state of int8/uint8 quantisation: per dimension,
// code = clip(round((x − offset)/scale · levels), lo, hi) and
// decoded = code · step + offset with step = scale/levels (SPEC §8.3).
// Every product is wrapped in an explicit float64 conversion, which forbids
// the compiler to fuse it with the following addition into an FMA (it does
// so on arm64, ppc64 and s390x), so codes and decoded values are the same on
// every platform.
type quantizer struct {
	offset []float64 // 0 (int8) or min_j (uint8)
	scale  []float64 // max|x_j| (int8) or max_j − min_j (uint8); 0 → 1
	step   []float64 // scale/levels
	levels float64   // 127 or 255
	lo, hi float64   // code range
}

// fitQuantizer fits int8 (symmetric absmax) or uint8 (affine min/max)
// parameters on the gallery, which must be dense and non-empty.
func fitQuantizer(ctx context.Context, precision string, g matrix.Matrix) (*quantizer, error) {
	n, d := g.Rows(), g.Cols()
	q := &quantizer{offset: make([]float64, d), scale: make([]float64, d), step: make([]float64, d)}
	lo, hi := make([]float64, d), make([]float64, d)
	x := make([]float64, d)
	for i := 0; i < n; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		g.RowFloat64(i, x)
		for j, v := range x {
			if i == 0 || v < lo[j] {
				lo[j] = v
			}
			if i == 0 || v > hi[j] {
				hi[j] = v
			}
		}
	}
	if precision == PrecisionInt8 {
		q.levels, q.lo, q.hi = 127, -127, 127
		for j := range q.scale {
			q.scale[j] = max(math.Abs(lo[j]), math.Abs(hi[j]))
		}
	} else {
		q.levels, q.lo, q.hi = 255, 0, 255
		for j := range q.scale {
			q.offset[j] = lo[j]
			q.scale[j] = hi[j] - lo[j]
			if math.IsInf(q.scale[j], 0) {
				return nil, fmt.Errorf("compress: quantize uint8: the gallery range of column %d overflows float64", j)
			}
		}
	}
	for j, s := range q.scale {
		if s == 0 {
			q.scale[j] = 1
		}
		q.step[j] = q.scale[j] / q.levels
	}
	return q, nil
}

// code quantises x in dimension j.
func (q *quantizer) code(j int, x float64) float64 {
	t := float64(float64(x-q.offset[j])/q.scale[j]) * q.levels
	return min(max(math.RoundToEven(t), q.lo), q.hi)
}

// decode reconstructs the value of a code in dimension j.
func (q *quantizer) decode(j int, code float64) float64 {
	return float64(code*q.step[j]) + q.offset[j]
}

// apply encodes and decodes every row of the dense matrix m, returning the
// decoded values as float32.
func (q *quantizer) apply(ctx context.Context, side string, m matrix.Matrix) (*matrix.Dense, error) {
	n, d := m.Rows(), m.Cols()
	out := make([]float32, n*d)
	var mu sync.Mutex
	bad := -1 // first element whose decoded value overflows float32
	err := forRows(ctx, n, func() func(i int) {
		x := make([]float64, d)
		return func(i int) {
			m.RowFloat64(i, x)
			dst := out[i*d : (i+1)*d]
			for j, v := range x {
				f := float32(q.decode(j, q.code(j, v)))
				if math.IsInf(float64(f), 0) {
					mu.Lock()
					if bad < 0 || i*d+j < bad {
						bad = i*d + j
					}
					mu.Unlock()
				}
				dst[j] = f
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if bad >= 0 {
		e := bad
		return nil, fmt.Errorf("compress: %s row %d, column %d: decoded value cannot be represented in float32", side, e/d, e%d)
	}
	return matrix.NewDense32(n, d, out)
}

// castFloat16 rounds every value of m to the nearest float16 and decodes it
// to float32 (SPEC §8.3); a CSR matrix stays CSR with the same structure.
func castFloat16(ctx context.Context, side string, m matrix.Matrix) (matrix.Matrix, error) {
	conv := func(vals []float64, at func(e int) (int, int)) ([]float32, error) {
		out := make([]float32, len(vals))
		for e, v := range vals {
			if e%(1<<16) == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			b, ok := float16Bits(v)
			if !ok {
				r, c := at(e)
				return nil, fmt.Errorf("compress: %s row %d, column %d: value %v cannot be represented in float16", side, r, c, v)
			}
			out[e] = float32(float16Value(b))
		}
		return out, nil
	}
	if c, ok := m.(*matrix.CSR); ok {
		indptr, indices := c.Components()
		vals := csrValues(c)
		out, err := conv(vals, func(e int) (int, int) {
			r := 0
			for indptr[r+1] <= int64(e) {
				r++
			}
			return r, int(indices[e])
		})
		if err != nil {
			return nil, err
		}
		return matrix.NewCSR32(c.Rows(), c.Cols(), append([]int64(nil), indptr...), append([]int32(nil), indices...), out)
	}
	vals, err := loadDense(ctx, m)
	if err != nil {
		return nil, err
	}
	d := m.Cols()
	out, err := conv(vals, func(e int) (int, int) { return e / d, e % d })
	if err != nil {
		return nil, err
	}
	return matrix.NewDense32(m.Rows(), d, out)
}

// csrValues returns the stored values of c widened to float64.
func csrValues(c *matrix.CSR) []float64 {
	if v := c.Float64Data(); v != nil {
		return v
	}
	v32 := c.Float32Data()
	out := make([]float64, len(v32))
	for i, v := range v32 {
		out[i] = float64(v)
	}
	return out
}
