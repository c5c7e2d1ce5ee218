package results

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/metrics"
)

// The canonical rows and columns written from the rows are the bytes the
// generic path (encoding/json, then RFC 8785 over the value tree) writes.
func TestCanonicalRowsEqualGenericPath(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 5))
	vals := []float64{0, math.Copysign(0, -1), 1, 0.5, 1.0 / 3, 1e-7, 123456789012345680000, 1e21, 5e-324, math.MaxFloat64, -2.5}
	keySets := [][]string{
		{"mrr", "ndcg@10", "hit_rate@1", "map", "recall@100", "precision@10"},
		{"zeta", "Alpha", "é", "\ue000", "😀", "query_id_x"},
		{},
	}
	ids := []string{"q1", "", "a \"quoted\" id", "tab\there", "é😀\ue000", "\u2028"}
	for _, keys := range keySets {
		for _, n := range []int{0, 1, 7} {
			rows := make([]QueryRow, n)
			for i := range rows {
				v := make([]float64, len(keys))
				for j := range v {
					v[j] = vals[r.IntN(len(vals))]
				}
				rows[i] = QueryRow{QueryID: ids[r.IntN(len(ids))], Metrics: metrics.Values{Keys: keys, Vals: v}}
			}
			want, err := canonjson.Marshal(rows)
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonjson.Marshal(CanonicalRows(rows))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("keys %q, %d rows:\n got %s\nwant %s", keys, n, got, want)
			}
			want, err = canonjson.Marshal(PerQueryOf(rows))
			if err != nil {
				t.Fatal(err)
			}
			if got, err = canonjson.Marshal(CanonicalPerQuery(rows)); err != nil || string(got) != string(want) {
				t.Fatalf("columns, keys %q, %d rows (%v):\n got %s\nwant %s", keys, n, err, got, want)
			}
		}
	}
	if got, err := canonjson.Marshal(CanonicalRows(nil)); err != nil || string(got) != "null" {
		t.Fatalf("nil rows: %s, %v", got, err)
	}
	bad := []QueryRow{{QueryID: "q", Metrics: metrics.Values{Keys: []string{"mrr"}, Vals: []float64{math.NaN()}}}}
	if _, err := canonjson.Marshal(CanonicalRows(bad)); err == nil {
		t.Fatal("a NaN metric was written")
	}
}
