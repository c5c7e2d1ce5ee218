package stats

import (
	"fmt"
	"testing"
)

// The table sum equals the term-by-term flippedSum for every length (groups
// of eight and words of 64 cut anywhere), with random bits past the end of
// the values, and values of both signs near the int128 headroom.
func TestFlipTableEqualsFlippedSum(t *testing.T) {
	r := Stream(5, "fliptable")
	for _, n := range []int{1, 2, 7, 8, 9, 63, 64, 65, 100, 127, 128, 129, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			v := make([]int128, n)
			for i := range v {
				v[i] = int128{hi: r.Uint64() >> 12, lo: r.Uint64()}
				if r.Uint64()&1 == 1 {
					v[i] = v[i].neg()
				}
			}
			tab := newFlipTable(v)
			words := make([]uint64, (n+63)/64)
			for range 200 {
				for w := range words {
					words[w] = r.Uint64()
				}
				if got, want := tab.sum(words), flippedSum(v, words); got != want {
					t.Fatalf("words %x: table %v, flippedSum %v", words, got, want)
				}
			}
		})
	}
}
