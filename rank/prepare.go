package rank

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// source produces an endpoint's rows in the working precision (SPEC §4.1):
// converted for dot and squared_l2, normalised for cosine. The normalised
// row is a pure function of the row, so blocks are produced on demand from
// per-row norms instead of holding a normalised copy of a large gallery;
// when the stored rows already are the working values they are used as
// they are (no copy at all, also for memory-mapped files).
//
// Rows are addressed by global index: a gallery window (a shard holding
// only its rows) stores global row base + i·stride as row i.
type source struct {
	m            matrix.Matrix
	base, stride int
	rows, cols   int
	prec         Precision
	cosine       bool
	norms        []float64 // cosine: m·sqrt(acc) per row
	direct64     []float64 // stored rows usable as they are
	direct32     []float32
	csr          *matrix.CSR // sparse endpoints stay sparse
}

// newSource checks an endpoint (zero norms under cosine, float32 range) and
// prepares what producing its rows needs. endpoint is "Query" or "Gallery".
// sc, when set, is the endpoint's fused scan (its norms are used as they
// are).
func newSource(m matrix.Matrix, name func(int) string, endpoint string, sim Similarity, prec Precision, threads int, sc *endpointScan, held rowSet) (*source, error) {
	s := &source{m: m, base: held.lo, stride: held.stride, rows: m.Rows(), cols: m.Cols(), prec: prec, cosine: sim == Cosine}
	s.csr, _ = m.(*matrix.CSR)
	if s.cosine && sc != nil && sc.norms != nil {
		s.norms = sc.norms
		if len(sc.zeros) > 0 {
			return s, &Error{Msg: zeroNormMessage(endpoint, s.global(sc.zeros), name)}
		}
		return s, nil
	}
	if s.cosine {
		return s, s.computeNorms(name, endpoint, threads)
	}
	if dm, ok := m.(*matrix.Dense); ok {
		switch {
		case prec == Float64 && dm.DType() == matrix.Float64:
			s.direct64 = dm.Float64Data()
			return s, nil
		case prec == Float32 && dm.DType() == matrix.Float32:
			s.direct32 = dm.Float32Data()
			return s, nil
		case prec == Float32 && dm.DType() == matrix.Float16:
			return s, nil // every float16 value is a float32 value
		}
	}
	if prec == Float32 {
		// The first value (row-major) whose float32 rounding overflows.
		chunks := (s.rows + normChunk - 1) / normChunk
		bad := make([]int, chunks)
		cols := make([]int, chunks)
		parallelChunks(s.rows, normChunk, threads, func(c, lo, hi int) {
			bad[c] = -1
			var idx []int32
			var vals []float64
			for i := lo; i < hi; i++ {
				idx, vals = s.storedRow(s.globalRow(i), vals)
				for k, v := range vals {
					if math.IsInf(float64(float32(v)), 0) {
						j := k
						if idx != nil {
							j = int(idx[k])
						}
						bad[c], cols[c] = i, j
						return
					}
				}
			}
		})
		for c, i := range bad {
			if i >= 0 {
				return nil, &Error{Msg: fmt.Sprintf("%s embeddings: value at row %d (ID %s), column %d cannot be represented in float32",
					endpoint, s.globalRow(i), msgfmt.Quote(name(s.globalRow(i))), cols[c])}
			}
		}
	}
	return s, nil
}

// local is the stored row of global row g; globalRow the inverse.
func (s *source) local(g int) int     { return (g - s.base) / s.stride }
func (s *source) globalRow(i int) int { return s.base + i*s.stride }

// global maps stored row indices to global ones.
func (s *source) global(rows []int) []int {
	if s.base == 0 && s.stride == 1 {
		return rows
	}
	out := make([]int, len(rows))
	for k, i := range rows {
		out[k] = s.globalRow(i)
	}
	return out
}

// storedRow returns global row g's stored values widened to float64 (for a
// sparse endpoint its stored entries and their column indices; idx is nil
// for a dense one). vals is reused.
func (s *source) storedRow(g int, vals []float64) ([]int32, []float64) {
	if s.csr != nil {
		return s.csr.RowEntries(s.local(g), vals)
	}
	vals = growTo(vals, s.cols)
	s.m.RowFloat64(s.local(g), vals)
	return nil, vals
}

// sparseRow returns row i of a sparse endpoint in working values: column
// indices (ascending) and values normalised (cosine) or rounded (float32)
// as the dense path would produce them, so skipping the zero entries gives
// the same sums (SPEC §4.2).
func (s *source) sparseRow(g int, vals []float64) ([]int32, []float64) {
	i := s.local(g)
	idx, vals := s.csr.RowEntries(i, vals)
	for k, v := range vals {
		if s.cosine {
			v /= s.norms[i]
		}
		if s.prec == Float32 {
			v = float64(float32(v))
		}
		vals[k] = v
	}
	return idx, vals
}

// computeNorms implements the norm of SPEC §4.1 step 3 and the zero-norm
// rule of step 4. Rows are independent, so they are split over the
// workers; zero-norm rows are reported in index order.
func (s *source) computeNorms(name func(int) string, endpoint string, threads int) error {
	s.norms = make([]float64, s.rows)
	zeros := make([][]int, (s.rows+normChunk-1)/normChunk)
	parallelChunks(s.rows, normChunk, threads, func(c, lo, hi int) {
		var row []float64
		for i := lo; i < hi; i++ {
			// Zero entries change neither the maximum nor the sum (fma
			// with a zero product), so a sparse row needs only its stored
			// values. Values are finite (checked first), so a plain
			// comparison is math.Max.
			_, row = s.storedRow(s.globalRow(i), row)
			var mx float64
			for _, v := range row {
				if a := math.Abs(v); a > mx {
					mx = a
				}
			}
			if mx == 0 {
				zeros[c] = append(zeros[c], i)
				continue
			}
			var acc float64
			for _, v := range row {
				y := v / mx
				acc = math.FMA(y, y, acc)
			}
			s.norms[i] = mx * math.Sqrt(acc)
		}
	})
	var zero []int
	for _, z := range zeros {
		zero = append(zero, z...)
	}
	if len(zero) > 0 {
		return &Error{Msg: zeroNormMessage(endpoint, s.global(zero), name)}
	}
	return nil
}

// normChunk rows form one task of the per-row preparation passes.
const normChunk = 1024

// parallelChunks runs fn over [0, n) in chunks of size rows on threads
// goroutines; fn gets the chunk number and its row range.
func parallelChunks(n, size, threads int, fn func(c, lo, hi int)) {
	chunks := (n + size - 1) / size
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(threads, chunks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := int(next.Add(1) - 1); c < chunks; c = int(next.Add(1) - 1) {
				fn(c, c*size, min(n, (c+1)*size))
			}
		}()
	}
	wg.Wait()
}

// firstNonFinite is matrix.FirstNonFinite over row chunks in parallel: the
// reported entry is the first in row-major order, as the serial scan finds.
func firstNonFinite(m matrix.Matrix, threads int) (row, col int, bad bool) {
	return matrix.FirstNonFiniteParallel(m, threads)
}

// row64 writes global row g in float64 working values to dst[:s.cols]:
// the stored values widened and, under cosine, divided by the row's norm
// (SPEC §4.1; kernel.DivTo64 and kernel.Div64 divide exactly as the
// scalar loop does).
func (s *source) row64(g int, dst []float64) {
	i, d := s.local(g), s.cols
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

// block64 returns global rows [lo, hi) in float64 working values, using
// buf when they must be produced (row by row, as row64 produces them). A
// strided window is asked for one row at a time.
func (s *source) block64(lo, hi int, buf []float64) []float64 {
	d := s.cols
	if s.direct64 != nil {
		i := s.local(lo)
		return s.direct64[i*d : (i+hi-lo)*d]
	}
	out := buf[:(hi-lo)*d]
	for i := lo; i < hi; i++ {
		s.row64(i, out[(i-lo)*d:(i-lo+1)*d])
	}
	return out
}

// block32 is block64 for float32 working values (SPEC §4.1: the float64
// working value rounded to float32); tmp holds one row.
func (s *source) block32(lo, hi int, buf []float32, tmp []float64) []float32 {
	d := s.cols
	if s.direct32 != nil {
		i := s.local(lo)
		return s.direct32[i*d : (i+hi-lo)*d]
	}
	out := buf[:(hi-lo)*d]
	dm, _ := s.m.(*matrix.Dense)
	for g := lo; g < hi; g++ {
		i := s.local(g)
		dst := out[(g-lo)*d : (g-lo+1)*d]
		if s.cosine && dm != nil && dm.DType() == matrix.Float32 {
			kernel.DivTo32(dm.Float32Data()[i*d:(i+1)*d], s.norms[i], dst)
			continue
		}
		s.row64(g, tmp)
		for j, v := range tmp[:d] {
			dst[j] = float32(v)
		}
	}
	return out
}

// ZeroNormMessage renders the exact layout of SPEC §4.1 step 4.
func ZeroNormMessage(endpoint string, rows []int, ids []string) string {
	return zeroNormMessage(endpoint, rows, sliceNames(ids))
}

// sliceNames names rows by a list of IDs.
func sliceNames(ids []string) func(int) string { return func(i int) string { return ids[i] } }

func zeroNormMessage(endpoint string, rows []int, name func(int) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s embeddings contain %d zero-norm row(s): ", endpoint, len(rows))
	for k, i := range rows {
		if k == msgfmt.PreviewLimit {
			b.WriteString(", ...")
			break
		}
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "index %d (ID %s)", i, msgfmt.Quote(name(i)))
	}
	b.WriteString(". Cosine similarity is undefined for zero-norm embeddings.")
	return b.String()
}
