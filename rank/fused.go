package rank

import (
	"math"

	"github.com/vertebrae-eval/vertebrae/kernel"
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
// not handle (sparse, float16): those take the separate passes.
func scanEndpoint(m matrix.Matrix, cosine bool, threads int) *endpointScan {
	d, ok := m.(*matrix.Dense)
	if !ok {
		return nil
	}
	// Read-only storage that a scan already found finite (a mapped file
	// checked at load) needs no finiteness test here.
	known := d.KnownFinite()
	switch d.DType() {
	case matrix.Float32:
		return scanRows(d.Float32Data(), d.Rows(), d.Cols(), cosine, known, threads)
	case matrix.Float64:
		return scanRows(d.Float64Data(), d.Rows(), d.Cols(), cosine, known, threads)
	}
	return nil
}

func scanRows[T float32 | float64](data []T, rows, cols int, cosine, known bool, threads int) *endpointScan {
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
		// Rows wait in groups of normGroup for their norms: the chains of
		// SPEC §4.1 step 3 are sequential within a row, so interleaving
		// rows keeps the FMA unit busy.
		var g normGroup
		g.y = make([]float64, len(g.row)*cols)
		for i := lo; i < hi; i++ {
			row := data[i*cols : (i+1)*cols]
			mx, finite := maxAbsFinite(row, !known)
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

// maxAbsFinite returns max |x| over row and, when check is set, whether
// every value is finite (x−x is 0 exactly for finite x); with check unset
// the values must be known finite. Four maxima and one finiteness sum per
// four values keep the loop free of long dependency chains; the maximum
// does not depend on the order.
func maxAbsFinite[T float32 | float64](row []T, check bool) (float64, bool) {
	var m0, m1, m2, m3 float64
	var chk T
	j := 0
	for ; j+4 <= len(row); j += 4 {
		w := row[j : j+4 : j+4]
		if check {
			chk += (w[0] - w[0]) + (w[1] - w[1]) + (w[2] - w[2]) + (w[3] - w[3])
		}
		if a := math.Abs(float64(w[0])); a > m0 {
			m0 = a
		}
		if a := math.Abs(float64(w[1])); a > m1 {
			m1 = a
		}
		if a := math.Abs(float64(w[2])); a > m2 {
			m2 = a
		}
		if a := math.Abs(float64(w[3])); a > m3 {
			m3 = a
		}
	}
	for ; j < len(row); j++ {
		if check {
			chk += row[j] - row[j]
		}
		if a := math.Abs(float64(row[j])); a > m0 {
			m0 = a
		}
	}
	return max(max(m0, m1), max(m2, m3)), chk == 0
}

// normGroup holds up to four rows waiting for their norms: y holds each
// row scaled by its maximum (y_i = x_i/m, SPEC §4.1 step 3).
type normGroup struct {
	n   int
	row [4]int
	mx  [4]float64
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
// order per row, of the waiting rows.
func (g *normGroup) flush(norms []float64) {
	cols := len(g.y) / len(g.row)
	if g.n == len(g.row) {
		y0, y1, y2, y3 := g.y[:cols], g.y[cols:2*cols], g.y[2*cols:3*cols], g.y[3*cols:4*cols]
		y1, y2, y3 = y1[:len(y0)], y2[:len(y0)], y3[:len(y0)]
		var a0, a1, a2, a3 float64
		for j, v := range y0 {
			a0 = math.FMA(v, v, a0)
			a1 = math.FMA(y1[j], y1[j], a1)
			a2 = math.FMA(y2[j], y2[j], a2)
			a3 = math.FMA(y3[j], y3[j], a3)
		}
		for k, a := range [4]float64{a0, a1, a2, a3} {
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
