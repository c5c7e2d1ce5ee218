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

// sumFixed must draw exactly what fill draws (the half-output left over
// included) and return the sum of the drawn values.
func TestSumFixedEqualsFill(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 61, 62, 123, 124, 125, 248, 1000, 5000} {
		for _, rounds := range []int{1, 2, 5, 9} {
			t.Run(fmt.Sprintf("n=%d/rounds=%d", n, rounds), func(t *testing.T) {
				r := Stream(4, "values")
				v := make([]int128, n)
				for i := range v {
					v[i] = int128{hi: uniformIndex(r, 8) - 4, lo: r.Uint64()}
				}
				key := streamKey(9, "sum", fmt.Sprint(n))
				for _, src := range []string{"rand", "source", "fallback"} {
					ref := &indexSource{r: Stream(9, "sum", fmt.Sprint(n))}
					got := &indexSource{r: Stream(9, "sum", fmt.Sprint(n))}
					switch src {
					case "source":
						got = &indexSource{src: newSource(key, epochFunc == nil)}
					case "fallback":
						got = &indexSource{src: newSource(key, true)}
					}
					dst := make([]int, n)
					for round := range rounds {
						ref.fill(dst, uint64(n))
						var want int128
						for _, i := range dst {
							want = want.add(v[i])
						}
						if s := got.sumFixed(v); s != want {
							t.Fatalf("%s round %d: sumFixed %v, sum of fill %v", src, round, s, want)
						}
					}
					if a, b := got.index(uint64(n)), ref.index(uint64(n)); a != b {
						t.Fatalf("%s: next draw after sumFixed %d, after fill %d", src, a, b)
					}
				}
			})
		}
	}
}
