package report

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/report/htmlcheck"
	"github.com/vertebrae-eval/vertebrae/report/plots"
	"github.com/vertebrae-eval/vertebrae/results"
)

// The page opens with the dataset summary as a table, identity and
// metadata field by field (nested fields as paths, lists joined, digests
// in monospace); their JSON appears only in a collapsed block after the
// details, never above the ranking.
func TestHTMLSummaryTable(t *testing.T) {
	b := testBenchmark()
	digest := strings.Repeat("0123456789abcdef", 4)
	b.DatasetSummary.Identity = map[string]any{"mode": "manifest", "dataset_id": "beir/scifact", "manifest_sha256": digest, "key": digest, "schema_version": 2}
	b.DatasetSummary.Metadata = map[string]any{
		"source": "BEIR", "splits": []any{"test", "dev"}, "sizes": map[string]any{"corpus": 5183, "queries": 300},
		"files": []any{map[string]any{"path": "corpus.jsonl"}}, "extra": map[string]any{}, "ratio": 0.25, "ok": true, "none": nil,
	}
	page, err := HTML(b)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	top := s[strings.Index(s, `<h2 id="dataset">`):strings.Index(s, `<h2 id="ranking">`)]
	if strings.Contains(top, "{") || strings.Contains(top, "&#34;") {
		t.Errorf("JSON above the ranking:\n%s", top)
	}
	want := `<tr class="group"><th scope="rowgroup" colspan="2">identity</th></tr>
<tr class="sub"><th scope="row">dataset_id</th><td>beir/scifact</td></tr>
<tr class="sub"><th scope="row">manifest_sha256</th><td class="mono">` + digest + `</td></tr>
<tr class="sub"><th scope="row">mode</th><td>manifest</td></tr>
<tr class="sub"><th scope="row">key</th><td class="mono">` + digest + `</td></tr>
<tr class="sub"><th scope="row">schema_version</th><td>2</td></tr>
<tr class="group"><th scope="rowgroup" colspan="2">metadata</th></tr>
<tr class="sub"><th scope="row">extra</th><td>(empty)</td></tr>
<tr class="sub"><th scope="row">files[0].path</th><td>corpus.jsonl</td></tr>
<tr class="sub"><th scope="row">none</th><td>null</td></tr>
<tr class="sub"><th scope="row">ok</th><td>true</td></tr>
<tr class="sub"><th scope="row">ratio</th><td>0.25</td></tr>
<tr class="sub"><th scope="row">sizes.corpus</th><td>5183</td></tr>
<tr class="sub"><th scope="row">sizes.queries</th><td>300</td></tr>
<tr class="sub"><th scope="row">source</th><td>BEIR</td></tr>
<tr class="sub"><th scope="row">splits</th><td>test, dev</td></tr>
</tbody>`
	if !strings.Contains(top, want) {
		t.Errorf("summary table lacks\n%s\nin\n%s", want, top)
	}
	raw := strings.Index(s, `<details class="raw">`)
	if raw < strings.Index(s, `<h2 id="details">`) || strings.Contains(s, `<details class="raw" open`) ||
		!strings.Contains(s[raw:], "&#34;sizes&#34;: {\n      &#34;corpus&#34;: 5183,") {
		t.Errorf("raw JSON not collapsed at the end:\n%s", s[max(raw, 0):])
	}
	// An empty metadata object is one row.
	b.DatasetSummary.Metadata = map[string]any{}
	page, err = HTML(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<tr><th scope="row">metadata</th><td>-</td></tr>`) {
		t.Error("empty metadata not shown as -")
	}
}

// Where a pair's interval and its Holm-adjusted test disagree, one
// sentence says so and why, in the Markdown report (after the pair table,
// nothing else changed) and in the HTML page (a dagger on the pair's
// significance cell, the sentence under the table).
func TestCIHolmDisagreement(t *testing.T) {
	base, err := Markdown(comparedBenchmark())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(p *results.PairComparison)
		want string
	}{
		{"excluded, not significant after Holm", func(p *results.PairComparison) {
			p.CI = results.Interval{Low: 0.125, High: 0.875}
			p.RandomizationP, p.RandomizationPAdjusted = 0.02, 0.06
		}, "plain[pca_2] vs plain (ndcg@1, forward): the 95 % interval of the difference, [0.1250, 0.8750], excludes 0, " +
			"but after Holm adjustment over 3 pairs the paired sign-flip randomization test is not significant at α = 0.05 " +
			"(p = 0.0200, Holm p = 0.0600): the interval is not adjusted for multiple comparisons."},
		{"excluded, not significant before Holm", func(p *results.PairComparison) {
			p.CI = results.Interval{Low: 0.125, High: 0.875}
		}, "plain[pca_2] vs plain (ndcg@1, forward): the 95 % interval of the difference, [0.1250, 0.8750], excludes 0, " +
			"but the paired sign-flip randomization test is not significant at α = 0.05 even before Holm adjustment (p = 0.7500): " +
			"the bootstrap interval and the test are different procedures and can disagree near the boundary."},
		{"included, significant", func(p *results.PairComparison) {
			p.Significant, p.RandomizationP, p.RandomizationPAdjusted = true, 0.01, 0.03
		}, "plain[pca_2] vs plain (ndcg@1, forward): the 95 % interval of the difference, [0.0000, 1.0000], includes 0, " +
			"but the paired sign-flip randomization test is significant at α = 0.05 after Holm adjustment over 3 pairs (Holm p = 0.0300): " +
			"the bootstrap interval and the test are different procedures and can disagree near the boundary."},
	} {
		b := comparedBenchmark()
		c.edit(&b.Comparison.Blocks[0].Pairs[0])
		md, err := Markdown(b)
		if err != nil {
			t.Fatal(err)
		}
		got := string(md)
		line := "\n- " + c.want + "\n"
		if strings.Count(got, "\n- plain[pca_2] vs ") != 1 || !strings.Contains(got, "|\n"+line+"\n## Compression") {
			t.Errorf("%s: Markdown lacks the note after the pair table\n%s\n%s", c.name, line, got)
		}
		// Nothing else changes but the edited pair's row.
		strip := func(s string) string {
			s = strings.Replace(s, line, "", 1)
			return regexp.MustCompile(`(?m)^\| ndcg@1 \| forward \| plain\[pca_2\] \| plain \|.*\n`).ReplaceAllString(s, "")
		}
		if strip(got) != strip(string(base)) {
			t.Errorf("%s: Markdown changed beyond the note", c.name)
		}
		page, err := HTML(b)
		if err != nil {
			t.Fatal(err)
		}
		s := string(page)
		if strings.Count(s, "<sup>†</sup>") != 1 || !strings.Contains(s, "<ul class=\"notes\">\n<li>† "+escapeHTML(c.want)+"</li>\n</ul>") {
			t.Errorf("%s: page lacks the dagger or the note", c.name)
		}
	}
	// Agreeing intervals and tests: no note.
	page, err := HTML(comparedBenchmark())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "†") || strings.Contains(string(base), "disagree") || strings.Contains(string(base), "\n- plain[pca_2] vs") {
		t.Error("a note where interval and test agree")
	}
}

func escapeHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// Inline figures scale down with the screen (max-width: 100 %; height:
// auto) but not below the width that keeps their smallest text at 9 CSS
// px; below it they scroll in their own box.
func TestHTMLFiguresScale(t *testing.T) {
	b := comparedBenchmark()
	page, err := HTML(b)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	if !strings.Contains(s, "figure svg { display: block; max-width: 100%; height: auto; }") ||
		!strings.Contains(s, "figure svg { max-height: 230mm; min-width: 0 !important; }") {
		t.Error("figure CSS missing")
	}
	figs, err := plots.Figures(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		minW := int(math.Ceil(f.LegibleWidth(minFigureTextPx)))
		w, _ := f.Size()
		if natural := w.Points() * 4 / 3; float64(minW) > natural+1 || float64(minW) < natural*0.5 {
			t.Errorf("%s: min width %d px for a %.0f px figure", f.Name, minW, natural)
		}
		want := regexp.MustCompile(`<figure id="figure-` + regexp.QuoteMeta(f.Name) + `">\n<h3>[^<]*</h3>\n<div class="scroll">\n<svg role="img" aria-label="[^"]*" style="min-width:` + strconv.Itoa(minW) + `px" width="`)
		if !want.MatchString(s) {
			t.Errorf("%s: no scroll box or min-width %d px", f.Name, minW)
		}
	}
}

// stressBenchmark has 14 results with long names (a 40-character one, a
// 70-character one with no break), a pairwise matrix, long metadata.
func stressBenchmark(t *testing.T) *results.Benchmark {
	t.Helper()
	names := make([]string, 14)
	for i := range names {
		switch i % 4 {
		case 0:
			names[i] = fmt.Sprintf("sentence-transformers/all-MiniLM-L6-v2-%02d", i) // 41 characters
		case 1:
			names[i] = fmt.Sprintf("organisation-with-a-long-name/model-family-variant-%02d-finetuned-v2.1", i)
		default:
			names[i] = fmt.Sprintf("r%02d", i)
		}
	}
	b := manyNamedResults(t, names, compare.Options{})
	b.DatasetSummary.Metadata = map[string]any{
		"source":      "a long description of where the data came from, with a path /data/corpora/beir/scifact/corpus.jsonl",
		"unbreakable": strings.Repeat("x", 120),
	}
	b.ExtractorResults[0].Warnings = []string{"Warning text with a long unbreakable token " + strings.Repeat("y", 90)}
	return b
}

// In a real browser the page is readable from a 360 px phone (and at 400
// and 1280 px) to a 1920 px
// screen: it never scrolls sideways (wide tables and figures scroll in
// their own boxes), name columns keep a usable width, figure text stays
// legible.
func TestHTMLReadableWidths(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium; skipped with -short")
	}
	b := stressBenchmark(t)
	page, err := HTML(b)
	if err != nil {
		t.Fatal(err)
	}
	layouts := htmlcheck.CheckReadable(t, page, 360, 400, 1280, 1920)
	// The 14 × 14 matrix, the ranking and the pair lists all have name cells.
	if len(layouts) == 4 && len(layouts[0].Names) < 14*3 {
		t.Errorf("%d name cells", len(layouts[0].Names))
	}
}
