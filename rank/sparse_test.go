package rank

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// randomSparse returns the same random sparse values as a CSR and a dense
// matrix. With ints, values come from a few integers so scores tie.
func randomSparse(r *rand.Rand, rows, cols int, density float64, ints bool, f32 bool) (*matrix.CSR, *matrix.Dense) {
	indptr := []int64{0}
	var idx []int32
	var v64 []float64
	dense := make([]float64, rows*cols)
	for i := 0; i < rows; i++ {
		for c := 0; c < cols; c++ {
			if r.Float64() >= density && !(c == i%cols) { // keep every row nonzero
				continue
			}
			x := r.NormFloat64()
			if ints {
				x = float64(r.IntN(5) - 2)
				if x == 0 {
					x = 1
				}
			}
			if f32 {
				x = float64(float32(x))
			}
			idx = append(idx, int32(c))
			v64 = append(v64, x)
			dense[i*cols+c] = x
		}
		indptr = append(indptr, int64(len(idx)))
	}
	if f32 {
		v32 := make([]float32, len(v64))
		for i, x := range v64 {
			v32[i] = float32(x)
		}
		c, _ := matrix.NewCSR32(rows, cols, indptr, idx, v32)
		d, _ := matrix.NewDense64(rows, cols, dense)
		return c, d
	}
	c, _ := matrix.NewCSR64(rows, cols, indptr, idx, v64)
	d, _ := matrix.NewDense64(rows, cols, dense)
	return c, d
}

// Sparse endpoints (sparse–sparse, sparse–dense, dense–sparse) give the
// dense results to the bit.
func TestSparseEqualsDense(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for trial := 0; trial < 8; trial++ {
		ints, f32 := trial%2 == 1, trial%4 >= 2
		base := randomProblem(r, 7, 33, 23, false)
		qc, qd := randomSparse(r, 7, 23, 0.2, ints, f32)
		gc, gd := randomSparse(r, 33, 23, 0.2, ints, f32)
		for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
			for _, prec := range []Precision{Float64, Float32} {
				for _, blocks := range [][2]int{{1, 1}, {3, 5}, {128, 10000}} {
					o := Options{Similarity: sim, Precision: prec, QueryBatch: blocks[0], GalleryBatch: blocks[1], Threads: 2, TopN: 4}
					p := base
					p.Queries, p.Gallery = qd, gd
					want, err := Score(context.Background(), p, o)
					if err != nil {
						t.Fatal(err)
					}
					for name, pair := range map[string][2]matrix.Matrix{"sparse-sparse": {qc, gc}, "sparse-dense": {qc, gd}, "dense-sparse": {qd, gc}} {
						p.Queries, p.Gallery = pair[0], pair[1]
						got, err := Score(context.Background(), p, o)
						if err != nil {
							t.Fatal(err)
						}
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("trial %d %s sim %d prec %d blocks %v: sparse results differ from dense", trial, name, sim, prec, blocks)
						}
					}
				}
			}
		}
	}
}

func TestSparseZeroNorm(t *testing.T) {
	q, _ := matrix.NewCSR64(2, 4, []int64{0, 1, 1}, []int32{2}, []float64{1})
	g, _ := matrix.NewCSR64(1, 4, []int64{0, 1}, []int32{2}, []float64{3})
	p := Problem{Queries: q, Gallery: g, QueryIDs: []string{"a", "empty"}, GalleryIDs: []string{"g"}, Relevance: [][]retrieval.Positive{{{Index: 0, Grade: 1}}, {{Index: 0, Grade: 1}}}}
	_, err := Score(context.Background(), p, Options{Similarity: Cosine, QueryBatch: 1, GalleryBatch: 1})
	if err == nil || err.Error() != `Query embeddings contain 1 zero-norm row(s): index 1 (ID "empty"). Cosine similarity is undefined for zero-norm embeddings.` {
		t.Fatalf("got %v", err)
	}
	// An empty sparse row is a zero vector: fine for dot, scoring 0.
	res, err := Score(context.Background(), p, Options{Similarity: Dot, QueryBatch: 1, GalleryBatch: 1})
	if err != nil || res[1].Scores[0] != 0 || res[0].Scores[0] != 3 {
		t.Fatalf("dot with an empty row: %v %v", res, err)
	}
}

// randomSparseRows builds an n×d CSR with nnz random columns per row.
func randomSparseRows(r *rand.Rand, n, d, nnz int) (*matrix.CSR, error) {
	indptr := []int64{0}
	var idx []int32
	var vals []float64
	for i := 0; i < n; i++ {
		seen := map[int]bool{}
		for len(seen) < nnz {
			seen[r.IntN(d)] = true
		}
		for c := 0; c < d && len(seen) > 0; c++ {
			if seen[c] {
				delete(seen, c)
				idx = append(idx, int32(c))
				vals = append(vals, r.NormFloat64())
			}
		}
		indptr = append(indptr, int64(len(idx)))
	}
	return matrix.NewCSR64(n, d, indptr, idx, vals)
}
