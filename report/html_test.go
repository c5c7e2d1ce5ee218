package report

import (
	"bytes"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/report/plots"
	"github.com/vertebrae-eval/vertebrae/results"
)

// comparedBenchmark is testBenchmark with a comparison of ndcg@1 (forward)
// in which plain[pca_2] (rank 1) beats plain[pca_3] (rank 3).
func comparedBenchmark() *results.Benchmark {
	b := testBenchmark()
	b.Metadata.RetrievalConfig.PrimaryMetric = "ndcg@1"
	b.ExtractorResults[0].Forward.Diagnostics.RetrievalMargin = metrics.Summarise([]float64{-0.25, 0.5, 0.125})
	b.ExtractorResults[0].Forward.Diagnostics.PositiveSimilarity = metrics.Summarise([]float64{0.75, 1})
	es := 1.25
	b.Comparison = &results.Comparison{
		Settings: results.ComparisonSettings{Metrics: []string{"ndcg@1"}, Family: "all", Test: "randomization",
			Alpha: 0.05, ConfidenceLevel: 0.95, CIMethod: "bca", Bootstrap: 10000, Permutations: 10000, Seed: 7, Adjustment: "holm"},
		Blocks: []results.MetricComparison{{
			Metric: "ndcg@1", Direction: "forward", NQueries: 2,
			Results: []results.ResultSummary{
				{Name: "plain[pca_2]", Mean: 1, CI: results.Interval{Low: 1, High: 1}, Beats: []string{"plain[pca_3]"}},
				{Name: "plain", Mean: 0.5, CI: results.Interval{Low: 0, High: 1}},
				{Name: "plain[pca_3]", Mean: 0, CI: results.Interval{Low: 0, High: 0}},
			},
			Pairs: []results.PairComparison{
				{A: "plain[pca_2]", B: "plain", MeanDiff: 0.5, CI: results.Interval{Low: 0, High: 1}, TTestP: 0.5, RandomizationP: 0.75,
					RandomizationExact: true, TTestPAdjusted: 1, RandomizationPAdjusted: 1},
				{A: "plain[pca_2]", B: "plain[pca_3]", MeanDiff: 1, CI: results.Interval{Low: 1, High: 1}, TTestP: 1e-9, RandomizationP: 0.01,
					TTestPAdjusted: 3e-9, RandomizationPAdjusted: 0.03, Significant: true, EffectSize: &es},
				{A: "plain", B: "plain[pca_3]", MeanDiff: 0.5, CI: results.Interval{Low: 0, High: 1}, TTestP: 0.5, RandomizationP: 0.75,
					TTestPAdjusted: 1, RandomizationPAdjusted: 1},
			},
		}},
	}
	return b
}

func TestHTMLGolden(t *testing.T) {
	got, err := HTML(comparedBenchmark())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.html")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("HTML report differs from %s (run with -update after checking the change)", golden)
	}
	again, err := HTML(comparedBenchmark())
	if err != nil || !bytes.Equal(got, again) {
		t.Errorf("HTML differs between renderings (err %v)", err)
	}
}

// The page holds the Markdown report's values, the comparison and the
// figures, inline, and nothing that loads or runs.
func TestHTMLContent(t *testing.T) {
	b := comparedBenchmark()
	page, err := HTML(b)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	CheckSelfContained(t, page)
	for _, want := range []string{
		`<h2 id="dataset">Dataset summary</h2>`,
		`<tr><th scope="row">n_exclusions</th><td>1</td></tr>`,
		// Identity and metadata field by field, HTML-escaped; their JSON only
		// in the collapsed block at the end.
		`<tr class="group"><th scope="rowgroup" colspan="2">identity</th></tr>
<tr class="sub"><th scope="row">dataset_id</th><td>toy</td></tr>
<tr class="sub"><th scope="row">revision</th><td>v1</td></tr>
<tr class="sub"><th scope="row">mode</th><td>declared</td></tr>
<tr class="sub"><th scope="row">key</th><td>ab12</td></tr>
<tr class="sub"><th scope="row">schema_version</th><td>2</td></tr>
<tr class="group"><th scope="rowgroup" colspan="2">metadata</th></tr>
<tr class="sub"><th scope="row">n</th><td>1.5</td></tr>
<tr class="sub"><th scope="row">source</th><td>unit &lt;test&gt;</td></tr>`,
		`<details class="raw">
<summary>Dataset identity and metadata as JSON</summary>
<pre>{
  &#34;identity&#34;: {
    &#34;dataset_id&#34;: &#34;toy&#34;,`,
		`<th>key</th><th class="num">rank</th>`,
		`<th class="num">95 % CI</th>`,
		// Key a beats key c: superscript "c" on its primary metric, with its interval.
		`<tr><td>a</td><td class="num">1</td><td class="name"><span class="swatch" style="background:#d55e00"></span>plain[pca_2]</td><td class="num">1.0000</td><td class="num">1.0000<sup>c</sup></td><td class="num">[1.0000, 1.0000]</td>`,
		`<tr><td>b</td><td class="num">2</td><td class="name"><span class="swatch" style="background:#0072b2"></span>plain</td><td class="num">0.7500</td><td class="num">0.5000</td><td class="num">[0.0000, 1.0000]</td>`,
		`<h2 id="comparison">Comparison</h2>`,
		`<h3>ndcg@1 (forward, n = 2)</h3>`,
		`<th class="num">randomization p</th><th class="num">Holm p</th>`,
		`<td class="name">plain[pca_2]</td><td class="name">plain[pca_3]</td><td class="num">1.0000</td><td class="num">[1.0000, 1.0000]</td><td class="num">0.0100</td><td class="num">0.0300</td><td><strong>yes</strong></td><td class="num">1.2500</td>`,
		`<td class="num">0.7500</td><td class="num">1.0000</td><td>no</td><td class="num">-</td>`,
		`<h2 id="compression">Compression</h2>`,
		`<h2 id="details">Details</h2>`,
		`<th class="group" colspan="4">reverse</th>`,
		`<td class="num">1</td><td class="num">0.5000</td><td class="num">0.5000</td><td class="num">0.5000</td><td class="num">0.5000</td><td class="num">1.0000</td>`, // k=1: forward then reverse
		`Forward: mrr <strong>0.7500</strong>, map <strong>0.6250</strong>; reverse: mrr <strong>1.0000</strong>, map <strong>1.0000</strong>.`,
		`<li>Warning: Query &#34;q1&#34; has no negative candidates.</li>`,
		`@media print`,
		`<tr><td>forward</td><td>positive similarity</td><td class="num">0.8750</td><td class="num">0.8750</td><td class="num">0.7500</td><td class="num">1.0000</td></tr>`,
		`<tr><td>forward</td><td>retrieval margin</td><td class="num">0.1250</td><td class="num">0.1250</td><td class="num">-0.2500</td><td class="num">0.5000</td></tr>`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// The legend under the ranking is the Markdown report's sentence.
	md, err := Markdown(b)
	if err != nil {
		t.Fatal(err)
	}
	var legend string
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "Superscripts:") {
			legend = line
		}
	}
	if legend == "" || !strings.Contains(s, "<p class=\"note\">"+template.HTMLEscapeString(legend)+"</p>") {
		t.Errorf("page lacks the Markdown legend %q", legend)
	}
	figs, err := plots.Figures(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) < 3 || strings.Count(s, "<svg ") != len(figs) || strings.Count(s, "</svg>") != len(figs) {
		t.Errorf("%d figures, %d inline <svg>", len(figs), strings.Count(s, "<svg "))
	}
	for _, f := range figs {
		if !strings.Contains(s, `<figure id="figure-`+f.Name+`">`) {
			t.Errorf("figure %s missing", f.Name)
		}
	}
	// Without a comparison the ranking has no interval column.
	b.Comparison = nil
	page, err = HTML(b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "95 % CI") || strings.Contains(string(page), `id="comparison"`) || strings.Contains(string(page), "<th>key</th>") {
		t.Error("interval or comparison shown without a comparison")
	}
}

// Every dynamic value is escaped: a hostile result name or warning cannot
// open a tag, a script or a new table row, in the tables or the figures.
func TestHTMLEscaping(t *testing.T) {
	b := testBenchmark()
	evil := "a|b\\c\n## injected <script>alert(1)</script></svg><img src=x onerror=y>"
	b.ExtractorResults[0].Name = evil
	b.ExtractorResults[1].Warnings = []string{`</td><script>x</script>`}
	b.DatasetSummary.Modality = "<b>bold</b>"
	page, err := HTML(b)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, bad := range []string{"<script", "<img", "<b>bold", "</td><script"} {
		if strings.Contains(s, bad) {
			t.Errorf("page contains raw %q", bad)
		}
	}
	if !strings.Contains(s, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/svg&gt;&lt;img src=x onerror=y&gt;") {
		t.Error("escaped name missing from the tables")
	}
}

func TestHTMLErrors(t *testing.T) {
	b := testBenchmark()
	b.ExtractorResults[0].Forward = nil
	if _, err := HTML(b); err == nil || !strings.Contains(err.Error(), "no forward score result") {
		t.Errorf("err %v", err)
	}
	b = comparedBenchmark()
	b.Comparison.Blocks[0].Pairs[1].CI.Low = math.NaN()
	if _, err := HTML(b); err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("err %v", err)
	}
}

var networkRef = regexp.MustCompile(`(?i)https?://|//[a-z0-9.-]+\.[a-z]{2,}/|<script|<link|<iframe|<object|<embed|@import|url\(`)

// CheckSelfContained fails when page could load a resource or run a
// script (SPEC §5.8).
func CheckSelfContained(t *testing.T, page []byte) {
	t.Helper()
	if m := networkRef.Find(page); m != nil {
		t.Errorf("page references %q", m)
	}
	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) {
		t.Error("no HTML5 doctype")
	}
}
