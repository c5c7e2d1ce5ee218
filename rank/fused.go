package rank

import (
	"math"

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
	switch d.DType() {
	case matrix.Float32:
		return scanRows(d.Float32Data(), d.Rows(), d.Cols(), cosine, threads)
	case matrix.Float64:
		return scanRows(d.Float64Data(), d.Rows(), d.Cols(), cosine, threads)
	}
	return nil
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
		for i := lo; i < hi; i++ {
			row := data[i*cols : (i+1)*cols]
			// The maximum and the finiteness check share the one read:
			// x−x is 0 exactly for finite x.
			var mx float64
			var chk T
			for _, x := range row {
				chk += x - x
				if a := math.Abs(float64(x)); a > mx {
					mx = a
				}
			}
			if chk != 0 || chk != chk {
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
			// SPEC §4.1 step 3, in index order: y = x/m, acc = fma(y, y, acc).
			var acc float64
			for _, x := range row {
				y := float64(x) / mx
				acc = math.FMA(y, y, acc)
			}
			sc.norms[i] = mx * math.Sqrt(acc)
		}
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
