package evaluate

import (
	"math"
	"slices"
	"testing"

	"github.com/vertebrae-eval/vertebrae/metrics"
)

// The memoised metrics of label queries equal metrics.QueryUniformSorted
// bit for bit, for ranks 1..n (memoised by n) and any other ascending
// ranks (computed as they come), and every call returns values of its own.
func TestUniformMetricsEqualsDirect(t *testing.T) {
	oneTo := func(n int) []int {
		r := make([]int, n)
		for i := range r {
			r[i] = i + 1
		}
		return r
	}
	cases := [][]int{
		oneTo(1), oneTo(3), oneTo(20000), oneTo(3), // the second 1..3 is memoised
		{2}, {1, 3}, {1, 2, 4}, {2, 3, 4}, {1, 5, 6, 7, 9},
		oneTo(20000)[:7], // a prefix of a shared rank list: 1..7
	}
	for _, gain := range []metrics.Gain{metrics.Exponential, metrics.Linear} {
		for _, ks := range [][]int{{1, 5, 10}, {3}, {1, 100, 100000}} {
			u := &uniformMetrics{ks: ks, gain: gain}
			for _, ranks := range cases {
				want := metrics.QueryUniformSorted(ranks, 1, ks, gain)
				got := u.query(ranks)
				if !slices.Equal(got.Keys, want.Keys) || len(got.Vals) != len(want.Vals) {
					t.Fatalf("ranks %v ks %v: keys %v, want %v", ranks[:min(len(ranks), 5)], ks, got.Keys, want.Keys)
				}
				for i := range want.Vals {
					if math.Float64bits(got.Vals[i]) != math.Float64bits(want.Vals[i]) {
						t.Fatalf("ranks %v ks %v: %s = %v, want %v", ranks[:min(len(ranks), 5)], ks, want.Keys[i], got.Vals[i], want.Vals[i])
					}
				}
			}
			a, b := u.query(oneTo(4)), u.query(oneTo(4))
			a.Vals[0], a.Keys[0] = -1, "changed"
			if b.Vals[0] != 1 || b.Keys[0] != "mrr" {
				t.Fatalf("memoised rows share their values: %v %v", b.Keys[0], b.Vals[0])
			}
			if len(u.byN) != 5 { // n = 1, 3, 20000, 7 and 4
				t.Fatalf("memoised counts %d, want 5", len(u.byN))
			}
		}
	}
}
