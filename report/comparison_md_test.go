package report

import (
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/results"
)

// A comparison adds key letters, intervals, superscripts of the results
// each one beats, a legend and the pair table; names are escaped there too.
func TestMarkdownComparison(t *testing.T) {
	b := testBenchmark()
	if err := b.Finalize(); err != nil {
		t.Fatal(err)
	}
	es := 1.5
	b.ExtractorResults[0].Name = "pl|ain" // ranked 2nd (score 0.75)
	b.Comparison = &results.Comparison{
		Settings: results.ComparisonSettings{Metrics: []string{"ndcg@1"}, Family: "all", Test: "randomization", Alpha: 0.05, CIMethod: "bca", Bootstrap: 100, Seed: 3},
		Blocks: []results.MetricComparison{{Metric: "ndcg@1", Direction: "forward", NQueries: 2,
			Results: []results.ResultSummary{
				{Name: "plain[pca_2]", Mean: 1, CI: results.Interval{Low: 0.9, High: 1}, Beats: []string{"pl|ain", "plain[pca_3]"}},
				{Name: "pl|ain", Mean: 0.5, CI: results.Interval{Low: 0.25, High: 0.75}, Beats: []string{}},
			},
			Pairs: []results.PairComparison{{A: "plain[pca_2]", B: "pl|ain", MeanDiff: 0.5, CI: results.Interval{Low: 0.125, High: 0.875},
				TTestP: 0.2, RandomizationP: 0.00002, RandomizationPAdjusted: 0.04, Significant: true, EffectSize: &es}},
		}},
	}
	md, err := Markdown(b)
	if err != nil {
		t.Fatal(err)
	}
	got := string(md)
	for _, want := range []string{
		"| key | rank | extractor | primary score | ndcg@1 | 95 % CI | mrr | map |\n| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n",
		"| a | 1 | plain[pca_2] | 1.0000 | 1.0000<sup>bc</sup> | [0.9000, 1.0000] |",
		"| b | 2 | pl\\|ain | 0.7500 | 0.5000 | [0.2500, 0.7500] |",
		"| c | 3 | plain[pca_3] | 0.0000 | 0.0000 | - |",
		"Superscripts: the keys of the results whose forward ndcg@1 this result is significantly better than (paired sign-flip randomization test, Holm-adjusted p < 0.05 over every pair of compared results). 95 % CI: BCa bootstrap interval of the mean, 100 resamples, seed 3.\n",
		"## Comparison\n\n| metric | direction | A | B | mean diff (A − B) | 95 % CI | randomization p | Holm p | significant | effect size |\n",
		"| ndcg@1 | forward | plain[pca_2] | pl\\|ain | 0.5000 | [0.1250, 0.8750] | 2.0e-05 | 0.0400 | yes | 1.5000 |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, got)
		}
	}
}
