package rank

import (
	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Screened gallery blocks without a float64 copy of the block.
//
// The screen needs, per gallery row, the float32 rounding of the float64
// working row (SPEC §4.1: converted, and for cosine divided by the row's
// norm) and a bound on its 2-norm; the float64 working values themselves
// are needed only for the few pairs verified exactly (screen.md §5). So a
// row is produced in float64 into a one-row buffer that stays in L1,
// rounded and bounded at once (convertNormBound), and only the rows that
// take part in a verification are produced again, once per block, into a
// small cache. The float64 values are those of source.block64, bit for
// bit: the same conversion and the same division.

// screenRow writes the float32 rounding of gallery row i's working values
// to y32 and returns convertNormBound of the float64 working row (tmp holds
// it afterwards): the values block64 followed by convertNormBound produce.
func (s *source) screenRow(i int, tmp []float64, y32 []float32) (float64, bool) {
	s.row64(i, tmp)
	return convertNormBound(tmp, y32)
}

// row64 writes row i in float64 working values to dst[:s.cols]: the
// stored values widened and, under cosine, divided by the row's norm
// (SPEC §4.1; kernel.DivTo64 and kernel.Div64 divide exactly as the
// scalar loop does).
func (s *source) row64(i int, dst []float64) {
	d := s.cols
	dst = dst[:d]
	if s.direct64 != nil {
		copy(dst, s.direct64[i*d:(i+1)*d])
		return
	}
	if dm, ok := s.m.(*matrix.Dense); ok && dm.DType() == matrix.Float32 && s.cosine {
		// The widening read and the division in one pass.
		kernel.DivTo64(dm.Float32Data()[i*d:(i+1)*d], s.norms[i], dst)
		return
	}
	s.m.RowFloat64(i, dst)
	if s.cosine {
		kernel.Div64(dst, s.norms[i], dst)
	}
}

// blockRows64 gives the float64 working rows of one gallery block
// [g0, g0+n) on demand: straight from the stored rows when they are the
// working values, else produced once per block into a cache the first
// time a verification asks for them.
type blockRows64 struct {
	src    *source
	g0, n  int
	direct []float64 // the whole block, when stored as working values
	slot   []int32   // per row of the block: 1 + its offset in cache / d, 0 = not produced
	cache  []float64
	full   []float64 // the whole block produced (values beyond float32, rows scored exactly)
}

// reset prepares r for block [g0, g0+n), reusing its buffers.
func (r *blockRows64) reset(src *source, g0, n int) {
	r.src, r.g0, r.n = src, g0, n
	r.direct = nil
	if src.direct64 != nil {
		r.direct = src.direct64[g0*src.cols : (g0+n)*src.cols]
	}
	r.slot = growTo(r.slot, n)
	clear(r.slot)
	r.cache = r.cache[:0]
	r.full = r.full[:0]
}

// row returns the float64 working values of block row j (read-only).
func (r *blockRows64) row(j int) []float64 {
	d := r.src.cols
	if r.direct != nil {
		return r.direct[j*d : (j+1)*d]
	}
	if len(r.full) > 0 {
		return r.full[j*d : (j+1)*d]
	}
	if k := int(r.slot[j]); k > 0 {
		return r.cache[(k-1)*d : k*d]
	}
	k := len(r.cache) / d
	if cap(r.cache) < (k+1)*d {
		r.cache = append(make([]float64, 0, 2*(k+1)*d), r.cache...)
	}
	r.cache = r.cache[:(k+1)*d]
	dst := r.cache[k*d : (k+1)*d]
	r.src.row64(r.g0+j, dst)
	r.slot[j] = int32(k + 1)
	return dst
}

// span returns block rows [j0, j1) contiguously (the whole block is
// produced once when it is not stored as working values).
func (r *blockRows64) span(j0, j1 int) []float64 {
	d := r.src.cols
	if r.direct != nil {
		return r.direct[j0*d : j1*d]
	}
	if len(r.full) == 0 {
		r.full = r.src.block64(r.g0, r.g0+r.n, growTo(r.full, r.n*d))
	}
	return r.full[j0*d : j1*d]
}
