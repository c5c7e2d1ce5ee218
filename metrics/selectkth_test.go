package metrics

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// SelectKth returns the k-th element of the sorted values for every k and
// leaves the values partitioned around it, on random, heavily tied, sorted
// and reversed inputs, and on inputs long enough to reach the sort fallback.
func TestSelectKthEqualsSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for trial := range 240 {
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
			got := SelectKth(work, k)
			if got != sorted[k] || work[k] != got {
				t.Fatalf("trial %d: SelectKth(%d) = %d (s[k] %d), want %d", trial, k, got, work[k], sorted[k])
			}
			if slices.Max(append([]uint64{0}, work[:k]...)) > got || slices.Min(append([]uint64{^uint64(0)}, work[k+1:]...)) < got {
				t.Fatalf("trial %d: k %d: values not partitioned around the k-th", trial, k)
			}
		}
	}
	// Floats, with the even-count median's neighbour taken from s[:k].
	v := []float64{3, -1, 2.5, 2.5, 0, 7, -4, 1}
	if got := SelectKth(v, 4); got != 2.5 || slices.Max(v[:4]) != 1 {
		t.Fatalf("SelectKth = %v, below max %v; want 2.5 and 1", got, slices.Max(v[:4]))
	}
}
