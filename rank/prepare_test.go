package rank

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// The parallel preparation passes report what the serial scans report:
// the first non-finite entry in row-major order, the first float32
// overflow, and the zero-norm rows in index order, when the offending rows
// lie in several chunks handled by different workers.
func TestParallelPreparationReportsFirstProblem(t *testing.T) {
	n, d := 3*4096+5, 3
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	build := func(set func(v []float64)) *matrix.Dense {
		v := make([]float64, n*d)
		for i := range v {
			v[i] = 1
		}
		set(v)
		m, _ := matrix.NewDense64(n, d, v)
		return m
	}
	q, _ := matrix.NewDense64(1, d, []float64{1, 1, 1})
	prob := func(g *matrix.Dense) Problem {
		return Problem{Queries: q, Gallery: g, QueryIDs: []string{"q"}, GalleryIDs: ids,
			Relevance: [][]retrieval.Positive{{{Index: 0, Grade: 1}}}}
	}
	for _, tc := range []struct {
		name string
		set  func(v []float64)
		sim  Similarity
		prec Precision
		want string
	}{
		{"non-finite", func(v []float64) {
			v[(2*4096+7)*d+1] = math.NaN()
			v[(4096+3)*d+2] = math.Inf(1)
			v[(4096+3)*d+1] = math.NaN()
		},
			Dot, Float64, "row 4099, column 1"},
		{"float32 overflow", func(v []float64) { v[(3*4096+1)*d] = 1e300; v[(1024+9)*d+2] = -1e300 },
			Dot, Float32, "row 1033 (ID \"1033\"), column 2"},
		{"zero norms", func(v []float64) {
			for _, r := range []int{5000, 70, 12000, 1100, 3, 2048, 9000, 9001, 9002, 9003, 9004, 4500} {
				v[r*d], v[r*d+1], v[r*d+2] = 0, 0, 0
			}
		}, Cosine, Float64, "12 zero-norm row(s): index 3 (ID \"3\"), index 70 (ID \"70\"), index 1100 (ID \"1100\"), index 2048 (ID \"2048\"), index 4500"},
	} {
		for _, threads := range []int{1, 2, 5} {
			_, err := Score(context.Background(), prob(build(tc.set)), Options{Similarity: tc.sim, Precision: tc.prec, QueryBatch: 8, GalleryBatch: 64, Threads: threads})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s, %d threads: %v, want %q", tc.name, threads, err, tc.want)
			}
		}
	}
}
