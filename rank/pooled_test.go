package rank

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// pooledAgainstOracle scores p with the pooled summary (sorted ranks) under
// every median window (all values, a sampled window, and windows of 1 and
// 2 values that send the median through the rescans), random blocks,
// threads and chunks, and requires the oracle's results, each query's best
// positive, and metrics.Summarise of the oracle's pooled positive scores,
// bit for bit (diffPlan); or the oracle's error.
func pooledAgainstOracle(t *testing.T, r *rand.Rand, p Problem, sim Similarity, prec Precision, what string) {
	t.Helper()
	want, werr := oracle(p, sim, prec)
	pp := planPoint{screen: "off", pooled: true, sorted: p.Classes != nil}
	for _, window := range []int{0, 1, 2, 3} {
		for _, chunk := range []int{0, 1} {
			got, sum, err := runPlan(r, p, sim, prec, pp, &tuning{windowCap: window, chunkPairs: chunk})
			at := fmt.Sprintf("%s window %d chunk %d", what, window, chunk)
			if werr != nil || err != nil {
				if werr == nil || err == nil || err.Error() != werr.Error() {
					t.Fatalf("%s: error %v, want %v", at, err, werr)
				}
				continue
			}
			if d := diffPlan(want, got, sum, pp); d != "" {
				t.Fatalf("%s: %s", at, d)
			}
		}
	}
}

// Finite scores whose ordered sum overflows are no error: the pooled
// summary is that of the stored scores (mean +Inf), bit for bit, with
// every median window (TestPooledStreamingOverflowingSum).
func TestPooledOverflowingSum(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	q, _ := matrix.NewDense64(2, 1, []float64{1e154, 1e154})
	g, _ := matrix.NewDense64(3, 1, []float64{1.7e154, 1e154, 1.5e154})
	for _, classes := range []bool{true, false} {
		p := Problem{Queries: q, Gallery: g, QueryIDs: []string{"q0", "q1"}, GalleryIDs: []string{"g0", "g1", "g2"}, Exclusions: [][]int{nil, nil}}
		if classes {
			p.Classes = retrieval.NewClasses([]int32{0, 0}, []int32{0, 0, 0})
		} else {
			all := []retrieval.Positive{{Index: 0, Grade: 1}, {Index: 1, Grade: 2}, {Index: 2, Grade: 1}}
			p.Relevance = [][]retrieval.Positive{all, all}
		}
		want, err := oracle(p, Dot, Float64)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, w := range want {
			for _, s := range w.Scores {
				if math.IsInf(s, 0) {
					t.Fatal("a positive score overflows: the test needs finite scores")
				}
				sum += s
			}
		}
		if !math.IsInf(sum, 1) {
			t.Fatal("the ordered sum does not overflow")
		}
		pooledAgainstOracle(t, r, p, Dot, Float64, fmt.Sprintf("classes %v", classes))
	}
}

// Scores of −0 (negated squared distances of equal rows) are +0 in every
// pooled number — mean, median, extremes, each query's best positive —
// also with the median window bounded by zero, in both precisions
// (TestPooledStreamingNegativeZeros).
func TestPooledNegativeZeros(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		q, g []float64
		ex   [][]int
	}{
		{[]float64{1, 0, 2}, []float64{1, 1, 0, 2, 3}, [][]int{nil, {1}, nil}}, // median and best positives at −0
		{[]float64{5, 5}, []float64{5, 5, 5}, [][]int{nil, {2}}},               // every score −0
		{[]float64{0, 7}, []float64{0, 0, 7, 7}, [][]int{{3}, nil}},            // half −0, an even count
	} {
		nq, ng := len(c.q), len(c.g)
		qm, _ := matrix.NewDense64(nq, 1, c.q)
		gm, _ := matrix.NewDense64(ng, 1, c.g)
		p := Problem{Queries: qm, Gallery: gm, Exclusions: c.ex, Classes: retrieval.NewClasses(make([]int32, nq), make([]int32, ng))}
		for i := range nq {
			p.QueryIDs = append(p.QueryIDs, fmt.Sprintf("q%d", i))
		}
		for j := range ng {
			p.GalleryIDs = append(p.GalleryIDs, fmt.Sprintf("g%d", j))
		}
		for _, prec := range []Precision{Float64, Float32} {
			pooledAgainstOracle(t, r, p, SquaredL2, prec, fmt.Sprintf("%v %s", c.q, precName(prec)))
		}
	}
}

// A non-finite score fails a pooled run exactly as the oracle: a positive
// (the lowest gallery index, then query), met by the positives stage or by
// the sample that places the median window, or, with every positive
// finite, an excluded pair (TestPooledStreamingErrorsMatchStored).
func TestPooledErrorsEqualOracle(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	big := 1e300
	q, _ := matrix.NewDense64(3, 1, []float64{1, big, big})
	g, _ := matrix.NewDense64(4, 1, []float64{1, 2, big, 1})
	for _, ex := range [][][]int{nil, {{2}, {0}, {}}, {{}, {2, 3}, {2, 3}}} {
		p := Problem{Queries: q, Gallery: g, QueryIDs: []string{"q0", "q1", "q2"}, GalleryIDs: []string{"g0", "g1", "g2", "g3"},
			Classes: retrieval.NewClasses([]int32{0, 0, 0}, []int32{0, 0, 0, 0}), Exclusions: ex}
		if _, err := oracle(p, Dot, Float64); err == nil {
			t.Fatal("the oracle does not fail")
		}
		pooledAgainstOracle(t, r, p, Dot, Float64, fmt.Sprintf("exclusions %v", ex))
	}
}
