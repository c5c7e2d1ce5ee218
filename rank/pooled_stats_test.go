package rank

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// nthKey is the k-th element of the sorted keys, for every k, on random,
// heavily tied, sorted and reversed inputs.
func TestNthKeyEqualsSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		keys := make([]uint64, n)
		for i := range keys {
			switch trial % 4 {
			case 0:
				keys[i] = r.Uint64()
			case 1:
				keys[i] = uint64(r.IntN(3))
			case 2:
				keys[i] = uint64(i)
			default:
				keys[i] = uint64(n - i)
			}
		}
		sorted := slices.Sorted(slices.Values(keys))
		for k := range n {
			work := slices.Clone(keys)
			if got := nthKey(work, k); got != sorted[k] {
				t.Fatalf("trial %d: nthKey(%d) = %d, want %d", trial, k, got, sorted[k])
			}
		}
	}
}

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
