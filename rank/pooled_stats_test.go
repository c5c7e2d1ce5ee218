package rank

import (
	"math"
	"reflect"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Finite scores whose ordered sum overflows are no error: the streaming
// path looks for a non-finite score, finds none, and summarises as the
// stored path does (mean +Inf).
func TestPooledStreamingOverflowingSum(t *testing.T) {
	q, _ := matrix.NewDense64(2, 1, []float64{1e154, 1e154})
	g, _ := matrix.NewDense64(3, 1, []float64{1.7e154, 1e154, 1.5e154})
	c := retrieval.NewClasses([]int32{0, 0}, []int32{0, 0, 0})
	p := Problem{Queries: q, Gallery: g, QueryIDs: []string{"q0", "q1"}, GalleryIDs: []string{"g0", "g1", "g2"}, Classes: c,
		Exclusions: [][]int{nil, nil}}
	o := Options{Similarity: Dot, QueryBatch: 2, GalleryBatch: 2, Threads: 2}
	want, wsum, werr := scorePooled(t, p, o, true)
	got, gsum, gerr := scorePooled(t, p, o, false)
	if werr != nil || gerr != nil {
		t.Fatalf("errors %v, %v", gerr, werr)
	}
	if !math.IsInf(*gsum.Mean, 1) || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gsum, wsum) {
		t.Fatalf("streaming %+v %v, stored %+v %v", got, gsum, want, wsum)
	}
}

// Zero scores from negative factors (−1 · 0) are +0 in every streamed
// number, as in the stored path, also with the median window bounded by
// zero: compared bit for bit (reflect.DeepEqual takes −0 for +0). The
// kernels' sums start from +0 today; the streaming path copies Dot64 rows
// as they are and normalises where a −0 would show.
func TestPooledStreamingNegativeZeros(t *testing.T) {
	q, _ := matrix.NewDense64(3, 1, []float64{-1, 1, -2})
	g, _ := matrix.NewDense64(5, 1, []float64{0, 0, 0, 0, 3})
	c := retrieval.NewClasses([]int32{0, 0, 0}, []int32{0, 0, 0, 0, 0})
	p := Problem{Queries: q, Gallery: g, QueryIDs: []string{"q0", "q1", "q2"}, GalleryIDs: []string{"g0", "g1", "g2", "g3", "g4"},
		Classes: c, Exclusions: [][]int{nil, {1}, nil}}
	for _, prec := range []Precision{Float64, Float32} {
		o := Options{Similarity: Dot, Precision: prec, QueryBatch: 2, GalleryBatch: 2, Threads: 2}
		want, wsum, werr := scorePooled(t, p, o, true)
		got, gsum, gerr := scorePooled(t, p, o, false)
		if werr != nil || gerr != nil {
			t.Fatalf("errors %v, %v", gerr, werr)
		}
		bits := func(r []QueryResult, s metrics.Summary) []uint64 {
			out := []uint64{math.Float64bits(*s.Mean), math.Float64bits(*s.Median), math.Float64bits(*s.Min), math.Float64bits(*s.Max)}
			for _, x := range r {
				out = append(out, math.Float64bits(x.MaxPositive))
			}
			return out
		}
		if gb, wb := bits(got, gsum), bits(want, wsum); !reflect.DeepEqual(gb, wb) || !reflect.DeepEqual(got, want) {
			t.Fatalf("precision %d: streaming bits %x, stored %x", prec, gb, wb)
		}
	}
}
