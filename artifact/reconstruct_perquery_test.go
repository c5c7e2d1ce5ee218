package artifact

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// A score's per-query values are read back from its columnar block, and
// from the per-query rows when a document has no columns; both give the
// rows the score was written from, and a column of the wrong length fails.
func TestDecodeScorePerQuery(t *testing.T) {
	cfg := retrieval.DefaultConfig()
	keys := cfg.MetricKeys()
	row := func(id string, base float64) results.QueryRow {
		v := make([]float64, len(keys))
		for j := range v {
			v[j] = base / float64(j+1)
		}
		return results.QueryRow{QueryID: id, Metrics: metrics.Values{Keys: keys, Vals: v}}
	}
	res := &results.ScoreResult{PrimaryMetric: cfg.PrimaryMetric, Warnings: []string{},
		PerQuery: []results.QueryRow{row("q0", 1), row("q \"1\"", 0.5), row("é", 0)}}
	res.Metrics = results.MetricObject{Values: row("", 0.25).Metrics}
	res.Score, _ = res.Metrics.Get(cfg.PrimaryMetric)
	res.Metadata.Config = cfg
	obj, err := scoreObject(res)
	if err != nil {
		t.Fatal(err)
	}
	withColumns, err := canonjson.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := canonjson.Marshal(results.CanonicalRows(res.PerQuery))
	if err != nil {
		t.Fatal(err)
	}
	plain := *res
	plain.PerQuery = nil
	noColumns, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"columns": withColumns, "rows": noColumns} {
		got, err := decodeScore(raw, rows, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got.PerQuery, res.PerQuery) {
			t.Fatalf("%s: per-query rows %v, want %v", name, got.PerQuery, res.PerQuery)
		}
	}
	short := strings.Replace(string(withColumns), `"mrr":[1,0.5,0]`, `"mrr":[1,0.5]`, 1)
	if short == string(withColumns) {
		t.Fatal("the test did not shorten the mrr column")
	}
	if _, err := decodeScore([]byte(short), rows, cfg); err == nil || !strings.Contains(err.Error(), `metric "mrr" has 2 values for 3 queries`) {
		t.Fatalf("short column: %v", err)
	}
}
