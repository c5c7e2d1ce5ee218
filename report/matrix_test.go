package report

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// manyResults is a benchmark of n results r01 … rNN over 24 queries whose
// ndcg@1 (the primary metric) grows with the result's number: r01 is the
// worst; tie-heavy per-query values (0, ½, 1). Its comparison is computed
// by package comparison with the default options (every result).
func manyResults(t *testing.T, n int, opt compare.Options) *results.Benchmark {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("r%02d", i+1)
	}
	return manyNamedResults(t, names, opt)
}

// manyNamedResults is manyResults with the given result names.
func manyNamedResults(t *testing.T, names []string, opt compare.Options) *results.Benchmark {
	t.Helper()
	n := len(names)
	b := &results.Benchmark{
		DatasetSummary: retrieval.Summary{Modality: "retrieval", NQueries: 24, NGallery: 24,
			Identity: map[string]any{"mode": "declared"}, Metadata: map[string]any{}},
		Metadata: results.Metadata{RetrievalConfig: retrieval.Config{PrimaryMetric: "ndcg@1"}},
	}
	for i := range n {
		var rows []results.QueryRow
		var sum float64
		for q := range 24 {
			// In each run of 12 queries result i scores 1 on the first
			// i, ½ on the next one when i is odd, 0 elsewhere.
			v := 0.0
			switch {
			case q%12 < i:
				v = 1
			case q%12 == i && i%2 == 1:
				v = 0.5
			}
			sum += v
			rows = append(rows, row(fmt.Sprintf("q%d", q), vals(v, v, v, v, v, v)))
		}
		m := sum / 24
		b.ExtractorResults = append(b.ExtractorResults, &results.ExtractorResult{
			Name: names[i], Forward: score("ndcg@1", vals(m, m, m, m, m, m), rows...), PrimaryScore: m,
			CompressionMetadata: map[string]any{"method": "none"},
		})
	}
	if err := b.Finalize(); err != nil {
		t.Fatal(err)
	}
	opt.Bootstrap, opt.Permutations = 500, 20000
	c, err := compare.Compute(context.Background(), b, opt)
	if err != nil {
		t.Fatal(err)
	}
	b.Comparison = c
	return b
}

// With 12 results every result has an interval in the ranking (none shows
// "-"), and the comparison starts with a 12 × 12 significance matrix whose
// rows are every result in ranked order; the pair list follows.
func TestMarkdownMatrixTwelveResults(t *testing.T) {
	b := manyResults(t, 12, compare.Options{})
	md, err := Markdown(b)
	if err != nil {
		t.Fatal(err)
	}
	got := string(md)
	ranking := got[strings.Index(got, "## Ranking"):strings.Index(got, "## Comparison")]
	ciRow := regexp.MustCompile(`(?m)^\| ([a-l]) \| (\d+) \| (r\d\d) \| [0-9.]+ \| [0-9.]+(<sup>[a-l]+</sup>)? \| \[-?[0-9.e-]+, -?[0-9.e-]+\] \| `)
	if rows := ciRow.FindAllString(ranking, -1); len(rows) != 12 {
		t.Errorf("%d ranking rows with an interval, want 12:\n%s", len(rows), ranking)
	}
	if strings.Contains(ranking, "| - |") || strings.Contains(got, "Not compared") {
		t.Errorf("a result without interval, or a cap note:\n%s", ranking)
	}
	cmp := got[strings.Index(got, "## Comparison"):strings.Index(got, "## Details")]
	head := "| key | extractor | a | b | c | d | e | f | g | h | i | j | k | l |\n| --- | --- |" + strings.Repeat(" ---: |", 12) + "\n"
	if !strings.Contains(cmp, "**ndcg@1, forward** (n = 24 queries). Each cell: mean per-query difference row − column; ▲ the row result is significantly better, ▼ significantly worse (paired sign-flip randomization test, Holm-adjusted p < 0.05 over the 66 pairs).\n\n"+head) {
		t.Fatalf("no matrix head:\n%s", cmp)
	}
	matrix := cmp[strings.Index(cmp, head)+len(head):]
	matrix = matrix[:strings.Index(matrix, "\n\n")]
	lines := strings.Split(matrix, "\n")
	if len(lines) != 12 {
		t.Fatalf("%d matrix rows, want 12:\n%s", len(lines), matrix)
	}
	// Rows in ranked order r12 … r01; the diagonal is "·"; r12 − r01 is
	// 2·(11 + ½)/24 = 0.9583…, significant (d > 0 on all 24 queries:
	// sign-flip p = 1/20001, at most 66 times that after Holm).
	for i, line := range lines {
		name := fmt.Sprintf("r%02d", 12-i)
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 14 || cells[0] != keyLetter(i) || cells[1] != name || cells[2+i] != "·" {
			t.Errorf("matrix row %d: %q", i, line)
		}
	}
	first := strings.Split(strings.Trim(lines[0], "| "), " | ")
	var pair results.PairComparison
	for _, p := range b.Comparison.Blocks[0].Pairs {
		if p.A == "r12" && p.B == "r01" {
			pair = p
		}
	}
	want := "+0.9583 ▲"
	if pair.MeanDiff != 23.0/24 || !pair.Significant || first[13] != want {
		t.Errorf("r12 vs r01: cell %q, pair %+v", first[13], pair)
	}
	last := strings.Split(strings.Trim(lines[11], "| "), " | ")
	if want := strings.Replace(strings.Replace(want, "+", "-", 1), "▲", "▼", 1); last[2] != want {
		t.Errorf("r01 vs r12: cell %q, want %q", last[2], want)
	}
	if !strings.Contains(cmp, "Every pair, with its interval and p-values:\n\n| metric | direction | A | B |") || strings.Count(cmp, "\n| ndcg@1 | forward | ") != 66 {
		t.Errorf("pair list missing or incomplete:\n%s", cmp)
	}
}

// Up to 6 results keep the pair list only; a baseline family never gets a
// matrix.
func TestMarkdownNoMatrix(t *testing.T) {
	for _, c := range []struct {
		n   int
		opt compare.Options
	}{{6, compare.Options{}}, {9, compare.Options{Baseline: "r03"}}} {
		md, err := Markdown(manyResults(t, c.n, c.opt))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(md), "Each cell") || strings.Contains(string(md), "Every pair, with") {
			t.Errorf("%d results %+v: unexpected matrix:\n%s", c.n, c.opt, md)
		}
	}
}

// An explicit cap is stated: the results it leaves out are named, with
// the reason, beside the ranking (where they show "-") and in the
// comparison section, in Markdown and HTML.
func TestCapStated(t *testing.T) {
	b := manyResults(t, 12, compare.Options{MaxResults: 10})
	md, err := Markdown(b)
	if err != nil {
		t.Fatal(err)
	}
	note := "Not compared (no interval, no significance): r02, r01; the comparison was limited to the 10 best-ranked results (max_results = 10; n results make n(n − 1)/2 pairs)."
	if got := string(md); strings.Count(got, note) != 2 || strings.Count(got, "| - |") != 2 {
		t.Errorf("Markdown lacks the cap note twice or the two uncompared rows:\n%s", got)
	}
	page, err := HTML(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(page); strings.Count(got, note) != 2 {
		t.Errorf("HTML lacks the cap note:\n%s", got)
	}
}

// The HTML report shows the same matrix: a table with a column per key and
// a row per result, significant cells classed, the pair list folded below.
func TestHTMLMatrixTwelveResults(t *testing.T) {
	b := manyResults(t, 12, compare.Options{})
	page, err := HTML(b)
	if err != nil {
		t.Fatal(err)
	}
	got := string(page)
	start := strings.Index(got, `<table class="metrics matrix">`)
	if start < 0 {
		t.Fatalf("no matrix table:\n%s", got)
	}
	table := got[start : start+strings.Index(got[start:], "</table>")]
	if n := strings.Count(table, "<tr>"); n != 13 {
		t.Errorf("%d matrix rows, want 12 and the head", n)
	}
	for i := range 12 {
		if !strings.Contains(table, fmt.Sprintf(`<td class="name">r%02d</td>`, i+1)) || !strings.Contains(table, `<th class="num">`+keyLetter(i)+`</th>`) {
			t.Errorf("result %d missing from the matrix", i+1)
		}
	}
	if strings.Count(table, `class="num diag"`) != 12 || !strings.Contains(got, "table.matrix td.better") {
		t.Errorf("diagonal or CSS missing")
	}
	sig := 0
	for _, p := range b.Comparison.Blocks[0].Pairs {
		if p.Significant {
			sig++
		}
	}
	if sig == 0 || strings.Count(table, `class="num better"`) != sig || strings.Count(table, `class="num worse"`) != sig {
		t.Errorf("%d significant pairs; better cells %d, worse cells %d", sig, strings.Count(table, `class="num better"`), strings.Count(table, `class="num worse"`))
	}
	if !strings.Contains(got, "<details>\n<summary>Every pair (66), with its interval and p-values</summary>") {
		t.Error("pair list not folded under the matrix")
	}
	if !strings.Contains(got, `id="figure-comparison_matrix"`) {
		t.Error("no matrix figure")
	}
}
