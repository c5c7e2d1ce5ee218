package plots

import (
	"math/rand/v2"
	"testing"

	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
)

// BenchmarkRenderMillionQueries renders the SVG figures of three results
// with 1,000,000 queries each; the per-query figures stay small because
// outlying queries are drawn once per distinct position. Reports the total
// SVG bytes.
func BenchmarkRenderMillionQueries(b *testing.B) {
	const nq = 1_000_000
	bench := fakeBenchmark(b)
	bench.ExtractorResults = bench.ExtractorResults[:3]
	bench.Comparison = nil
	r := rand.New(rand.NewPCG(1, 2))
	for _, res := range bench.ExtractorResults {
		rows := make([]results.QueryRow, nq)
		margins := make([]float64, nq)
		keys := res.Forward.Metrics.Keys
		for q := range rows {
			vals := make([]float64, len(keys))
			for i := range vals {
				vals[i] = r.Float64()
			}
			rows[q] = results.QueryRow{Metrics: metrics.Values{Keys: keys, Vals: vals}}
			margins[q] = r.NormFloat64() * 0.1
		}
		res.Forward.PerQuery, res.Forward.Margins = rows, margins
	}
	b.ResetTimer()
	var size int
	for b.Loop() {
		files, err := Render(bench, []Format{SVG})
		if err != nil {
			b.Fatal(err)
		}
		size = 0
		for _, f := range files {
			size += len(f.Data)
		}
	}
	b.ReportMetric(float64(size), "svg-bytes")
}
