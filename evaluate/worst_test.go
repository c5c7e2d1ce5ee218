package evaluate

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
)

// worstRows equals the first w rows of a stable sort by the primary metric
// (SPEC §4.7 worst_queries), with many ties, for every w from 0 past the
// row count, on both of its paths (selection for small w, the sort above).
func TestWorstRowsEqualsStableSort(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	keys := []string{"mrr", "map", "ndcg@1"}
	for trial := range 300 {
		n := r.IntN(120)
		rows := make([]results.QueryRow, n)
		for i := range rows {
			vals := make([]float64, len(keys))
			for j := range vals {
				vals[j] = float64(r.IntN(5)) / 4 // few values: ties everywhere
			}
			rows[i] = results.QueryRow{QueryID: string(rune('a' + i%26)), Metrics: metrics.Values{Keys: keys, Vals: vals}}
		}
		primary := keys[r.IntN(len(keys))]
		for _, w := range []int{0, 1, 2, 5, 10, 64, 65, n - 1, n, n + 3} {
			if w < 0 {
				continue
			}
			want := slices.Clone(rows)
			sort.SliceStable(want, func(a, b int) bool {
				va, _ := want[a].Metrics.Get(primary)
				vb, _ := want[b].Metrics.Get(primary)
				return va < vb
			})
			want = want[:min(w, len(want))]
			got := worstRows(rows, primary, w)
			if got == nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d, %d rows, w %d, %s: got %v, want %v", trial, n, w, primary, got, want)
			}
		}
	}
}
