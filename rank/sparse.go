package rank

import (
	"context"
	"math"

	"github.com/vertebrae-eval/vertebrae/kernel"
)

// Sparse–sparse scoring (learned sparse retrieval, TF-IDF). Skipping zero
// entries leaves every accumulator unchanged (an fma with a zero product
// returns the accumulator, and −0 is normalised to +0 at the end), so the
// sums below equal the dense definition of SPEC §4.2 bit for bit as long as
// each pair's nonzero terms are added in increasing dimension order.

// sparsePair scores one pair of sparse rows (ascending indices) in working
// values: the dot product over their common dimensions, or the squared
// distance over the union of their dimensions.
func sparsePair(qi []int32, qv []float64, gi []int32, gv []float64, sqDist bool, prec Precision) float64 {
	var acc64 float64
	var acc32 float32
	add := func(x, y float64) {
		if prec == Float64 {
			acc64 = math.FMA(x, y, acc64)
		} else {
			acc32 = kernel.FMA32(float32(x), float32(y), acc32)
		}
	}
	a, b := 0, 0
	for a < len(qi) || b < len(gi) {
		switch {
		case b == len(gi) || (a < len(qi) && qi[a] < gi[b]):
			if sqDist {
				t := sub(qv[a], 0, prec)
				add(t, t)
			}
			a++
		case a == len(qi) || gi[b] < qi[a]:
			if sqDist {
				t := sub(0, gv[b], prec)
				add(t, t)
			}
			b++
		default:
			if sqDist {
				t := sub(qv[a], gv[b], prec)
				add(t, t)
			} else {
				add(qv[a], gv[b])
			}
			a++
			b++
		}
	}
	if prec == Float64 {
		return acc64
	}
	return float64(acc32)
}

// sub is q − g in the working precision.
func sub(q, g float64, prec Precision) float64 {
	if prec == Float32 {
		return float64(float32(q) - float32(g))
	}
	return q - g
}

// postings is a gallery block transposed: for each dimension, the block
// rows (ascending) that have it and their working values.
type postings struct {
	colPtr []int32
	rows   []int32
	vals   []float64
	tmp    []float64
}

func (p *postings) build(s *scorer, g0, g1 int) {
	d := s.d
	p.colPtr = growTo(p.colPtr, d+1)
	clear(p.colPtr)
	nnz := 0
	for g := g0; g < g1; g++ {
		var idx []int32
		idx, p.tmp = s.g.csr.RowEntries(g, p.tmp)
		for _, c := range idx {
			p.colPtr[c+1]++
		}
		nnz += len(idx)
	}
	for c := 0; c < d; c++ {
		p.colPtr[c+1] += p.colPtr[c]
	}
	p.rows = growTo(p.rows, nnz)
	p.vals = growTo(p.vals, nnz)
	fill := growTo([]int32(nil), d)
	copy(fill, p.colPtr[:d])
	for g := g0; g < g1; g++ {
		var idx []int32
		idx, p.tmp = s.g.sparseRow(g, p.tmp)
		for k, c := range idx {
			at := fill[c]
			p.rows[at] = int32(g - g0)
			p.vals[at] = p.tmp[k]
			fill[c]++
		}
	}
}

// sparseBlock scores gallery rows [g0, g1) of a sparse gallery against every
// sparse query. Dot and cosine walk the query's dimensions in increasing
// order through the block's postings, so every pair's accumulator receives
// its terms in dimension order; squared_l2 needs the union of both rows'
// dimensions and merges each pair.
func (s *scorer) sparseBlock(ctx context.Context, w *workspace, g0, g1, qb int) error {
	gn := g1 - g0
	sqDist := s.o.Similarity == SquaredL2
	var gIdx [][]int32
	var gVal [][]float64
	if sqDist {
		gIdx, gVal = make([][]int32, gn), make([][]float64, gn)
		for j := range gIdx {
			gIdx[j], gVal[j] = s.g.sparseRow(g0+j, nil)
		}
	} else {
		if w.index == nil {
			w.index = &postings{}
		}
		w.index.build(s, g0, g1)
	}
	var qv []float64
	acc32 := make([]float32, gn)
	for q0 := 0; q0 < s.nq; q0 += qb {
		if err := ctx.Err(); err != nil {
			return err
		}
		q1 := min(q0+qb, s.nq)
		for q := q0; q < q1; q++ {
			var qi []int32
			qi, qv = s.q.sparseRow(q, qv)
			out := w.s64[:gn]
			switch {
			case sqDist:
				for j := range out {
					out[j] = sparsePair(qi, qv, gIdx[j], gVal[j], true, s.o.Precision)
				}
			case s.o.Precision == Float64:
				clear(out)
				ix := w.index
				for k, c := range qi {
					x := qv[k]
					for p := ix.colPtr[c]; p < ix.colPtr[c+1]; p++ {
						r := ix.rows[p]
						out[r] = math.FMA(x, ix.vals[p], out[r])
					}
				}
			default:
				clear(acc32)
				ix := w.index
				for k, c := range qi {
					x := float32(qv[k])
					for p := ix.colPtr[c]; p < ix.colPtr[c+1]; p++ {
						r := ix.rows[p]
						acc32[r] = kernel.FMA32(x, float32(ix.vals[p]), acc32[r])
					}
				}
				for j, v := range acc32 {
					out[j] = float64(v)
				}
			}
			if err := consume(s, w.part, q, g0, out); err != nil {
				return err
			}
		}
		s.meter.add(int64(q1-q0) * int64(gn))
	}
	return nil
}
