package plots

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/results"
)

// twelveCompared is fakeBenchmark with 12 results and an "all" family over
// all 66 pairs; pairs more than 0.1 apart are significant.
func twelveCompared(t *testing.T) *results.Benchmark {
	t.Helper()
	b := fakeBenchmark(t)
	for i := range 7 {
		b.ExtractorResults = append(b.ExtractorResults, fakeResult(fmt.Sprintf("extra-%d", i), 0.3+float64(i)*0.05, "none", 8, 0))
	}
	if err := b.Finalize(); err != nil {
		t.Fatal(err)
	}
	return twelveComparedFrom(b)
}

// With 12 compared results the figures include comparison_matrix: a key
// and label per row, a key per column, a tinted cell per significant pair
// on each side of the diagonal; the forest plot has a row for every other
// result. Up to 6 results, or with a baseline family, there is no matrix.
func TestComparisonMatrixFigure(t *testing.T) {
	b := twelveCompared(t)
	figs, err := Figures(b)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
	}
	if !slices.Equal(names[len(names)-2:], []string{"comparison", "comparison_matrix"}) {
		t.Fatalf("figures %v", names)
	}
	m := figs[len(figs)-1]
	svg, err := m.SVG()
	if err != nil {
		t.Fatal(err)
	}
	checkSVG(t, File{Name: "comparison_matrix.svg", Data: svg})
	s := string(svg)
	for i, r := range b.Ranked() {
		if !strings.Contains(s, ">"+keyLetter(i)+"  "+escape(label(r.Name))+"<") || !strings.Contains(s, ">"+keyLetter(i)+"<") {
			t.Errorf("row or column of %s (key %s) missing", r.Name, keyLetter(i))
		}
	}
	sig := 0
	for _, p := range b.Comparison.Blocks[0].Pairs {
		if p.Significant {
			sig++
		}
	}
	better := strings.Count(s, fmt.Sprintf("fill:#%02X%02X%02X", betterFill.R, betterFill.G, betterFill.B))
	worse := strings.Count(s, fmt.Sprintf("fill:#%02X%02X%02X", worseFill.R, worseFill.G, worseFill.B))
	// One tinted cell per significant pair and side, plus the legend swatch.
	if sig == 0 || better != sig+1 || worse != sig+1 {
		t.Errorf("%d significant pairs: %d better and %d worse fills", sig, better, worse)
	}
	if !strings.Contains(s, ">+0.") || !strings.Contains(s, ">-0.") {
		t.Error("cells carry no differences")
	}
	again, _ := m.SVG()
	if !bytes.Equal(svg, again) {
		t.Error("matrix figure differs between renderings")
	}
	rs, err := newResultSet(b)
	if err != nil {
		t.Fatal(err)
	}
	fig, err := comparison(rs)
	if err != nil || fig == nil {
		t.Fatal(err)
	}
	if fsvg, _ := fig.SVG(); strings.Count(string(fsvg), "<text") < 11 {
		t.Error("forest plot lacks rows")
	}

	// 30 results: the cells drop their numbers but keep marks.
	big := twelveCompared(t)
	for i := range 18 {
		big.ExtractorResults = append(big.ExtractorResults, fakeResult(fmt.Sprintf("more-%d", i), 0.2+float64(i)*0.01, "none", 8, 0))
	}
	if err := big.Finalize(); err != nil {
		t.Fatal(err)
	}
	twelveComparedFrom(big)
	if figs, err := Figures(big); err != nil || figs[len(figs)-1].Name != "comparison_matrix" {
		t.Fatalf("30 results: %v", err)
	} else if svg, err := figs[len(figs)-1].SVG(); err != nil || strings.Contains(string(svg), ">+0.") {
		t.Errorf("30 results: numbers in cells or %v", err)
	}

	base := "beta"
	b.Comparison.Settings.Family, b.Comparison.Settings.Baseline = "baseline", &base
	if figs, _ := Figures(b); figs[len(figs)-1].Name == "comparison_matrix" {
		t.Error("baseline family drew a matrix")
	}
	if figs, _ := Figures(fakeBenchmark(t)); figs[len(figs)-1].Name == "comparison_matrix" {
		t.Error("5 results drew a matrix")
	}
}

// twelveComparedFrom builds the all-pairs comparison of b's results.
func twelveComparedFrom(b *results.Benchmark) *results.Benchmark {
	ranked := b.Ranked()
	blk := results.MetricComparison{Metric: "ndcg@10", Direction: "forward", NQueries: 40}
	for _, r := range ranked {
		blk.Results = append(blk.Results, results.ResultSummary{Name: r.Name, Mean: r.PrimaryScore,
			CI: results.Interval{Low: r.PrimaryScore - 0.02, High: r.PrimaryScore + 0.02}})
	}
	for i := range ranked {
		for j := i + 1; j < len(ranked); j++ {
			d := ranked[i].PrimaryScore - ranked[j].PrimaryScore
			blk.Pairs = append(blk.Pairs, results.PairComparison{A: ranked[i].Name, B: ranked[j].Name, MeanDiff: d,
				CI: results.Interval{Low: d - 0.03, High: d + 0.03}, Significant: d > 0.1})
		}
	}
	b.Comparison = &results.Comparison{Settings: results.ComparisonSettings{Metrics: []string{"ndcg@10"}, Family: "all", Test: "randomization",
		Alpha: 0.05, ConfidenceLevel: 0.95, CIMethod: "bca", Bootstrap: 1000, Permutations: 1000, Adjustment: "holm"}, Blocks: []results.MetricComparison{blk}}
	return b
}

// escape is the XML escaping of vgsvg's text content.
func escape(s string) string {
	var buf bytes.Buffer
	_ = xml.EscapeText(&buf, []byte(s))
	return buf.String()
}
