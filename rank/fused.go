package rank

import (
	"math"
	"runtime"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// endpointScan is what one fused pass over a dense float32 or float64
// endpoint learns (SPEC §4.1, §4.9): the first non-finite value in
// row-major order and, under cosine, every row's norm and the zero-norm
// rows. Reading each value once, from its stored type, replaces a
// finiteness pass, a widening copy and two norm passes per row.
type endpointScan struct {
	bad            bool
	badRow, badCol int
	norms          []float64 // cosine only
	zeros          []int     // cosine only: zero-norm rows, ascending
}

// scanEndpoint runs the fused pass, or returns nil for endpoints it does
// not handle (sparse, float16): those take the separate passes. On
// read-only storage (a mapped file) the scan is remembered on the matrix
// (matrix.Dense.Memo), so the load-time check (FirstNonFinite), dataset
// construction and every evaluation of the endpoint read it once; its
// result does not depend on threads. Callers must not modify the scan.
func scanEndpoint(m matrix.Matrix, cosine bool, threads int) *endpointScan {
	d, ok := m.(*matrix.Dense)
	if !ok {
		return nil
	}
	var scan func() *endpointScan
	switch d.DType() {
	case matrix.Float32:
		scan = func() *endpointScan { return scanRows(d.Float32Data(), d.Rows(), d.Cols(), cosine, threads) }
	case matrix.Float64:
		scan = func() *endpointScan { return scanRows(d.Float64Data(), d.Rows(), d.Cols(), cosine, threads) }
	default:
		return nil
	}
	sc := d.Memo(scanKey{cosine}, func() any { return scan() }).(*endpointScan)
	if !sc.bad {
		d.MarkFinite() // every value was read
	}
	return sc
}

// scanKey is the memo key of an endpoint's fused scan.
type scanKey struct{ cosine bool }

// FirstNonFinite returns the first NaN or ±Inf of an endpoint in row-major
// order, by the check scoring runs (SPEC §4.9). A caller that checks its
// inputs at load (the CLI names the file) should use it: on read-only
// storage the scan, and under cosine the row norms it computes on the way,
// are remembered, so scoring the endpoint with sim does not read it again.
func FirstNonFinite(m matrix.Matrix, sim Similarity, threads int) (row, col int, bad bool) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if sc := scanEndpoint(m, sim == Cosine, threads); sc != nil {
		return sc.badRow, sc.badCol, sc.bad
	}
	return firstNonFinite(m, threads)
}

func scanRows[T float32 | float64](data []T, rows, cols int, cosine bool, threads int) *endpointScan {
	sc := &endpointScan{}
	if cosine {
		sc.norms = make([]float64, rows)
	}
	// Small endpoints (a few thousand queries) still use every thread.
	size := max(64, min(normChunk, rows/(8*max(1, threads))))
	chunks := (rows + size - 1) / size
	badRow, badCol := make([]int, chunks), make([]int, chunks)
	zeros := make([][]int, chunks)
	parallelChunks(rows, size, threads, func(c, lo, hi int) {
		badRow[c] = -1
		// Rows wait in groups (normGroup) for their norms: the chains of
		// SPEC §4.1 step 3 are sequential within a row, so interleaving
		// rows keeps the FMA unit busy.
		var g normGroup
		g.y = make([]float64, len(g.row)*cols)
		for i := lo; i < hi; i++ {
			row := data[i*cols : (i+1)*cols]
			mx, finite := maxAbsFinite(row)
			if !finite {
				for j, x := range row {
					if x-x != 0 {
						badRow[c], badCol[c] = i, j
						return // later rows of the chunk cannot come first
					}
				}
			}
			if !cosine {
				continue
			}
			if mx == 0 {
				zeros[c] = append(zeros[c], i)
				continue
			}
			g.add(i, mx, row, sc.norms)
		}
		g.flush(sc.norms)
	})
	for c, r := range badRow {
		if r >= 0 {
			sc.bad, sc.badRow, sc.badCol = true, r, badCol[c]
			break
		}
	}
	for _, z := range zeros {
		sc.zeros = append(sc.zeros, z...)
	}
	return sc
}

// maxAbsFinite returns max |x| over row and whether every value is finite
// (kernel.MaxAbs32/MaxAbs64: vector loops whose maximum and finiteness are
// those of the scalar definition).
func maxAbsFinite[T float32 | float64](row []T) (float64, bool) {
	switch x := any(row).(type) {
	case []float32:
		m, ok := kernel.MaxAbs32(x)
		return float64(m), ok
	case []float64:
		return kernel.MaxAbs64(x)
	}
	panic("unreachable")
}

// normGroup holds up to eight rows waiting for their norms: y holds each
// row scaled by its maximum (y_i = x_i/m, SPEC §4.1 step 3).
type normGroup struct {
	n   int
	row [8]int
	mx  [8]float64
	y   []float64
}

func (g *normGroup) add(i int, mx float64, x any, norms []float64) {
	cols := len(g.y) / len(g.row)
	y := g.y[g.n*cols : (g.n+1)*cols]
	switch x := x.(type) {
	case []float32:
		kernel.DivTo64(x, mx, y)
	case []float64:
		kernel.Div64(x, mx, y)
	}
	g.row[g.n], g.mx[g.n] = i, mx
	g.n++
	if g.n == len(g.row) {
		g.flush(norms)
	}
}

// flush computes the norms m·sqrt(acc), acc = fma(y_i, y_i, acc) in index
// order per row, of the waiting rows; eight independent chains keep both
// FMA units busy.
func (g *normGroup) flush(norms []float64) {
	cols := len(g.y) / len(g.row)
	if g.n == len(g.row) {
		y := g.y
		y0 := y[:cols]
		y1, y2, y3 := y[cols : 2*cols][:len(y0)], y[2*cols : 3*cols][:len(y0)], y[3*cols : 4*cols][:len(y0)]
		y4, y5, y6, y7 := y[4*cols : 5*cols][:len(y0)], y[5*cols : 6*cols][:len(y0)], y[6*cols : 7*cols][:len(y0)], y[7*cols : 8*cols][:len(y0)]
		var a0, a1, a2, a3, a4, a5, a6, a7 float64
		for j, v := range y0 {
			a0 = math.FMA(v, v, a0)
			a1 = math.FMA(y1[j], y1[j], a1)
			a2 = math.FMA(y2[j], y2[j], a2)
			a3 = math.FMA(y3[j], y3[j], a3)
			a4 = math.FMA(y4[j], y4[j], a4)
			a5 = math.FMA(y5[j], y5[j], a5)
			a6 = math.FMA(y6[j], y6[j], a6)
			a7 = math.FMA(y7[j], y7[j], a7)
		}
		for k, a := range [8]float64{a0, a1, a2, a3, a4, a5, a6, a7} {
			norms[g.row[k]] = g.mx[k] * math.Sqrt(a)
		}
	} else {
		for k := range g.n {
			var acc float64
			for _, v := range g.y[k*cols : (k+1)*cols] {
				acc = math.FMA(v, v, acc)
			}
			norms[g.row[k]] = g.mx[k] * math.Sqrt(acc)
		}
	}
	g.n = 0
}
