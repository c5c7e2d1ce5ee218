package results

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// synthetic builds a one-result benchmark over n queries with ks 1,5,10
// and metric values shaped like real ones (reciprocal ranks, 0/1 hits,
// NDCG discounts).
func synthetic(n int, name string, seed uint64) *Benchmark {
	cfg := retrieval.DefaultConfig()
	keys := metrics.Keys(cfg.Ks)
	r := rand.New(rand.NewPCG(seed, 1))
	rows := make([]QueryRow, n)
	vals := make([]float64, n*len(keys))
	for i := range rows {
		v := vals[i*len(keys) : (i+1)*len(keys)]
		rank := 1 + r.IntN(20)
		for j := range v {
			switch {
			case j == 0:
				v[j] = 1 / float64(rank)
			case j%4 == 1 || j%4 == 3: // map, recall@k, ndcg@k-like values
				v[j] = r.Float64()
			default:
				v[j] = float64(r.IntN(2))
			}
		}
		rows[i] = QueryRow{QueryID: "q" + strconv.Itoa(i), Metrics: metrics.Values{Keys: keys, Vals: v}}
	}
	per := make([]metrics.Values, n)
	for i, row := range rows {
		per[i] = row.Metrics
	}
	mean := metrics.Mean(per)
	s, _ := mean.Get(cfg.PrimaryMetric)
	res := &ScoreResult{Score: s, PrimaryMetric: cfg.PrimaryMetric, Metrics: MetricObject{mean}, Warnings: []string{},
		Diagnostics: Diagnostics{WorstQueries: rows[:min(3, n)]}, Metadata: ScoreMetadata{Config: cfg, NQueries: n, NGallery: 10, Similarity: "cosine", Exact: true},
		PerQuery: rows}
	b := &Benchmark{
		DatasetSummary:   retrieval.Summary{NQueries: n, Identity: map[string]any{"key": "k"}, Metadata: map[string]any{}},
		ExtractorResults: []*ExtractorResult{{Name: name, ExtractorType: "precomputed", Forward: res, PrimaryScore: s, CompressionMetadata: map[string]any{}, Warnings: []string{}, Recipe: map[string]any{}}},
		Metadata:         Metadata{RetrievalConfig: cfg, ProtocolFingerprint: "f"},
	}
	if err := b.Finalize(); err != nil {
		panic(err)
	}
	return b
}

// A report read back marshals to the same bytes, per_query included, and
// its rows equal the original ones value for value.
func TestReadReportRoundTrip(t *testing.T) {
	b := synthetic(50, "x", 1)
	data, err := b.MarshalReport()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"per_query": {`) || !strings.Contains(string(data), `"query_ids": [`) {
		t.Fatal("report lacks the columnar per_query block")
	}
	back, err := ReadReport(data)
	if err != nil {
		t.Fatal(err)
	}
	again, err := back.MarshalReport()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Fatal("report read back marshals differently")
	}
	orig, got := b.ExtractorResults[0].Forward.PerQuery, back.ExtractorResults[0].Forward.PerQuery
	for i := range orig {
		if orig[i].QueryID != got[i].QueryID || !equalValues(orig[i].Metrics, got[i].Metrics) {
			t.Fatalf("row %d: %+v, read back %+v", i, orig[i], got[i])
		}
	}
	if !equalValues(back.ExtractorResults[0].Forward.Metrics.Values, b.ExtractorResults[0].Forward.Metrics.Values) {
		t.Error("metrics lost their canonical order")
	}
	// Without per-query values the block is absent and the original keeps
	// its rows.
	lean, err := b.MarshalReportWith(ReportOptions{OmitPerQuery: true})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(lean, []byte("per_query")) || len(b.ExtractorResults[0].Forward.PerQuery) != 50 {
		t.Error("OmitPerQuery")
	}
	back, err = ReadReport(lean)
	if err != nil || back.ExtractorResults[0].Forward.PerQuery != nil {
		t.Errorf("lean report read back: %v", err)
	}
}

func equalValues(a, b metrics.Values) bool {
	if len(a.Keys) != len(b.Keys) {
		return false
	}
	for i := range a.Keys {
		if a.Keys[i] != b.Keys[i] || a.Vals[i] != b.Vals[i] {
			return false
		}
	}
	return true
}

func TestReadReportErrors(t *testing.T) {
	for _, c := range []struct{ data, frag string }{
		{`[]`, "not a vertebrae JSON report"},
		{`{"schema_version": 2}`, "schema_version"},
		{`{"schema_version": 1, "extractor_results": [{"name": "a", "forward": null}]}`, "no forward"},
		{`{"schema_version": 1, "extractor_results": [{"name": "a", "forward": {"per_query": {"query_ids": ["a"], "metrics": {"mrr": [1, 2]}}}}]}`, "2 values for 1 query IDs"},
	} {
		if _, err := ReadReport([]byte(c.data)); err == nil || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("%s: %v, want %q", c.data, err, c.frag)
		}
	}
}

// BenchmarkMarshalReport1M writes the JSON report of one result over
// 1,000,000 queries (ks 1,5,10: 14 metrics) and reports its size.
func BenchmarkMarshalReport1M(b *testing.B) {
	bench := synthetic(1_000_000, "big", 2)
	var size int
	for b.Loop() {
		data, err := bench.MarshalReport()
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size)/1e6, "MB")
}

// The direct per_query writer gives exactly the text of the generic path
// (json.Marshal of the whole benchmark, then Canonicalize), including IDs
// that need escaping and numbers in exponent form.
func TestPerQueryFastPathEqualsGeneric(t *testing.T) {
	b := synthetic(6, "x", 3)
	rows := b.ExtractorResults[0].Forward.PerQuery
	ids := []string{`q"1`, "q\\2", "<b>&amp;", "tab\there\n", "\u2028line\u2029", "bad\xffutf8"}
	for i := range rows {
		rows[i].QueryID = ids[i]
	}
	rows[0].Metrics.Vals[1], rows[1].Metrics.Vals[2], rows[2].Metrics.Vals[3] = 1e-7, 1.5e21, 123456789
	b.ExtractorResults[0].Reverse = b.ExtractorResults[0].Forward
	empty := synthetic(0, "empty", 5).ExtractorResults[0]
	empty.Forward.PerQuery = []QueryRow{}
	b.ExtractorResults = append(b.ExtractorResults, empty)
	fast, err := b.MarshalReport()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	generic, err := Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fast, generic) {
		t.Fatalf("fast path differs:\n%s\ngeneric:\n%s", fast, generic)
	}
	if bytes.Count(fast, []byte(`"per_query"`)) != 3 {
		t.Error("want per_query in forward and reverse, and in the empty result")
	}
}

func TestPerQueryNonFinite(t *testing.T) {
	b := synthetic(5, "x", 4) // rows 0–2 are also worst queries
	b.ExtractorResults[0].Forward.PerQuery[4].Metrics.Vals[0] = math.NaN()
	if _, err := b.MarshalReport(); err == nil || !strings.Contains(err.Error(), "non-finite mrr") {
		t.Errorf("NaN per-query value: %v", err)
	}
}

// FuzzReadReport: any input either fails cleanly or reads back into a
// report that marshals.
func FuzzReadReport(f *testing.F) {
	data, err := synthetic(3, "seed", 6).MarshalReport()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"schema_version": 1, "extractor_results": [null]}`))
	f.Add([]byte(`{"schema_version": 1, "extractor_results": [{"forward": {"per_query": {"query_ids": [], "metrics": {}}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadReport(data)
		if err != nil {
			return
		}
		_, _ = b.MarshalReport() // must not panic
	})
}

// BenchmarkWriteReport1M is BenchmarkMarshalReport1M plus writing and
// syncing the file (what `--json PATH` does, less the rename).
func BenchmarkWriteReport1M(b *testing.B) {
	bench := synthetic(1_000_000, "big", 2)
	path := filepath.Join(b.TempDir(), "report.json")
	for b.Loop() {
		data, err := bench.MarshalReport()
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadReport1M reads the 1,000,000-query report back (what
// `retrieval compare` does per input).
func BenchmarkReadReport1M(b *testing.B) {
	data, err := synthetic(1_000_000, "big", 2).MarshalReport()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ReadReport(data); err != nil {
			b.Fatal(err)
		}
	}
}
