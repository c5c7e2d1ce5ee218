package rank

import (
	"context"
	"math"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
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
	fill   []int32
	rows   []int32
	vals   []float64
	tmp    []float64
}

func (p *postings) build(src *source, b block) {
	d := src.cols
	p.colPtr = growTo(p.colPtr, d+1)
	clear(p.colPtr)
	nnz := 0
	for j := range b.n {
		var idx []int32
		idx, p.tmp = src.csr.RowEntries(src.local(b.global(j)), p.tmp)
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
	p.fill = growTo(p.fill, d)
	copy(p.fill, p.colPtr[:d])
	for j := range b.n {
		var idx []int32
		idx, p.tmp = src.sparseRow(b.global(j), p.tmp)
		for k, c := range idx {
			at := p.fill[c]
			p.rows[at] = int32(j)
			p.vals[at] = p.tmp[k]
			p.fill[c]++
		}
	}
}

// sparseTile is a sparse gallery block prepared for scoring: its postings
// (dot, cosine) or its rows (squared_l2).
type sparseTile struct {
	b      block
	gIdx   [][]int32
	gVal   [][]float64
	qv     []float64
	acc64  []float64
	acc32  []float32
	sqDist bool
}

func (s *scorer[T]) sparseTile(w *worker[T], b block) *sparseTile {
	t := &w.cheap.sparse
	t.b, t.sqDist = b, s.ex.sqDist
	if t.sqDist {
		t.gIdx, t.gVal = growTo(t.gIdx, b.n), growTo(t.gVal, b.n)
		for j := range b.n {
			t.gIdx[j], t.gVal[j] = s.g.sparseRow(b.global(j), t.gVal[j])
		}
		return t
	}
	w.cheap.post.build(s.g, b)
	t.acc64, t.acc32 = growTo(t.acc64, b.n), growTo(t.acc32, b.n)
	return t
}

// sparseRow writes the scores of query q against the tile's rows to out.
// Dot and cosine walk the query's dimensions in increasing order through
// the block's postings, so every pair's accumulator receives its terms in
// dimension order; squared_l2 needs the union of both rows' dimensions and
// merges each pair.
func sparseRow[T working](s *scorer[T], w *worker[T], t *sparseTile, q int, out []T) {
	var qi []int32
	qi, t.qv = s.pr.q.sparseRow(q, t.qv)
	ix := &w.cheap.post
	switch {
	case t.sqDist:
		for j := range out {
			out[j] = -T(sparsePair(qi, t.qv, t.gIdx[j], t.gVal[j], true, s.pl.prec))
		}
	case s.pl.prec == Float64:
		clear(t.acc64)
		for k, col := range qi {
			x := t.qv[k]
			for p := ix.colPtr[col]; p < ix.colPtr[col+1]; p++ {
				r := ix.rows[p]
				t.acc64[r] = math.FMA(x, ix.vals[p], t.acc64[r])
			}
		}
		for j, v := range t.acc64 {
			out[j] = T(v)
		}
	default:
		clear(t.acc32)
		for k, col := range qi {
			x := float32(t.qv[k])
			for p := ix.colPtr[col]; p < ix.colPtr[col+1]; p++ {
				r := ix.rows[p]
				t.acc32[r] = kernel.FMA32(x, float32(ix.vals[p]), t.acc32[r])
			}
		}
		for j, v := range t.acc32 {
			out[j] = T(v)
		}
	}
}

// sparseBlock scores block b of a sparse gallery against the chunk's sparse
// queries, folding each row.
func (s *scorer[T]) sparseBlock(ctx context.Context, w *worker[T], c *chunk[T], b block) error {
	t := s.sparseTile(w, b)
	out := growTo(w.out, b.n)
	w.out = out
	for q := c.q0; q < c.q1; q++ {
		if (q-c.q0)%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		sparseRow(s, w, t, q, out)
		if !allFinite(out) {
			return errNonFinite
		}
		s.foldRow(w, c, q-c.q0, b, out)
		s.meter.add(int64(b.n))
	}
	return nil
}
