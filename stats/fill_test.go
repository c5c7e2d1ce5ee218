package stats

import (
	"fmt"
	"testing"
)

// fill must draw exactly what the same number of index calls draws, the
// half-output left over included: every bootstrap interval depends on it.
// The bounds include ones where Lemire's rejection is frequent (n just above
// 2^31 rejects almost half of all draws) and lengths that end on either
// half of an output.
func TestFillEqualsIndex(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 7, 1000, 5000, 1<<31 + 1, 3 << 30, 1<<32 - 1} {
		for _, lengths := range [][]int{{1}, {2}, {3, 1, 4}, {1000, 999, 1, 0, 7}, {5, 5, 5, 5}} {
			t.Run(fmt.Sprintf("n=%d/%v", n, lengths), func(t *testing.T) {
				ref := &indexSource{r: Stream(9, "fill", fmt.Sprint(n))}
				got := &indexSource{r: Stream(9, "fill", fmt.Sprint(n))}
				for round := 0; round < 3; round++ {
					for _, l := range lengths {
						dst := make([]int, l)
						got.fill(dst, n)
						for j, v := range dst {
							if w := int(ref.index(n)); v != w {
								t.Fatalf("round %d, length %d, draw %d: fill %d, index %d", round, l, j, v, w)
							}
						}
					}
				}
				// The streams must also stand at the same place afterwards.
				if a, b := got.index(n), ref.index(n); a != b {
					t.Fatalf("next draw after fill %d, after index %d", a, b)
				}
			})
		}
	}
}
