package rank

import (
	"math/rand/v2"
	"slices"
	"testing"
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
