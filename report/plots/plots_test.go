package plots

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// metricKeys is the canonical key order for ks 1, 5, 10.
var metricKeys = func() []string {
	keys := []string{"mrr", "map"}
	for _, k := range []int{1, 5, 10} {
		for _, fam := range []string{"precision", "recall", "hit_rate", "ndcg"} {
			keys = append(keys, fmt.Sprintf("%s@%d", fam, k))
		}
	}
	return keys
}()

// fakeResult is a result whose per-query ndcg@10 values are q/(nq)·quality
// and whose margins spread around quality-0.5; compression metadata as the
// compress package writes it.
func fakeResult(name string, quality float64, method string, dim, residentBytes int) *results.ExtractorResult {
	const nq = 40
	rows := make([]results.QueryRow, nq)
	margins := make([]float64, 0, nq)
	sums := make([]float64, len(metricKeys))
	for q := range rows {
		vals := make([]float64, len(metricKeys))
		for i := range vals {
			vals[i] = math.Min(1, quality*float64(q+1)/nq*(1+float64(i%3)*0.1))
			sums[i] += vals[i]
		}
		rows[q] = results.QueryRow{QueryID: fmt.Sprintf("q%02d", q), Metrics: metrics.Values{Keys: metricKeys, Vals: vals}}
		margins = append(margins, quality-0.5+float64(q%9-4)*0.05)
	}
	mean := make([]float64, len(sums))
	for i, s := range sums {
		mean[i] = s / nq
	}
	mv := metrics.Values{Keys: metricKeys, Vals: mean}
	score, _ := mv.Get("ndcg@10")
	md := map[string]any{"method": method, "applied": method != "none", "enabled": method != "none",
		"compressed_dim": dim, "original_dim": 64, "dtype": "float32", "input_sparse": false, "output_sparse": false, "fit_side": "gallery"}
	if method != "none" {
		md["resident_bytes"] = residentBytes
		md["compression_ratio"] = float64(1000*64*4) / float64(residentBytes)
	}
	return &results.ExtractorResult{
		Name: name, ExtractorType: "test", PrimaryScore: score, CompressionMetadata: md,
		Forward: &results.ScoreResult{
			Score: score, PrimaryMetric: "ndcg@10", Metrics: results.MetricObject{Values: mv},
			Metadata: results.ScoreMetadata{NQueries: nq, NGallery: 1000, Similarity: "cosine", Exact: true},
			PerQuery: rows, Margins: margins,
		},
	}
}

// fakeBenchmark holds three extractors, two compression variants of the
// first, and a comparison of the primary metric against the best result.
func fakeBenchmark(t testing.TB) *results.Benchmark {
	t.Helper()
	b := &results.Benchmark{
		ExtractorResults: []*results.ExtractorResult{
			fakeResult("alpha", 0.9, "none", 64, 0),
			fakeResult("alpha[pca_16]", 0.85, "pca", 16, 1000*16*4),
			fakeResult("alpha[quantize_int8]", 0.88, "quantize", 64, 1000*64+64*8),
			fakeResult("beta", 0.7, "none", 32, 0),
			fakeResult("a-very-long-backbone-name-from-a-model-hub/with-a-path-and-version-v2.1", 0.6, "none", 128, 0),
		},
		Metadata: results.Metadata{RetrievalConfig: retrieval.Config{PrimaryMetric: "ndcg@10", Similarity: "cosine", Ks: []int{1, 5, 10}}},
	}
	if err := b.Finalize(); err != nil {
		t.Fatal(err)
	}
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
				CI: results.Interval{Low: d - 0.03, High: d + 0.03}, Significant: d > 0.03})
		}
	}
	b.Comparison = &results.Comparison{
		Settings: results.ComparisonSettings{Metrics: []string{"ndcg@10"}, Family: "all", Test: "randomization",
			Alpha: 0.05, ConfidenceLevel: 0.95, CIMethod: "bca", Bootstrap: 1000, Permutations: 1000, Adjustment: "holm"},
		Blocks: []results.MetricComparison{blk},
	}
	return b
}

// A run with compression variants, several results and a comparison gets
// every figure of SPEC §5.8, in both formats.
func TestRenderEveryFigure(t *testing.T) {
	b := fakeBenchmark(t)
	files, err := Render(b, []Format{SVG, PNG})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	want := []string{
		"metrics_at_k.svg", "metrics_at_k.png", "per_query_ndcg@10.svg", "per_query_ndcg@10.png",
		"margins.svg", "margins.png", "compression_frontier.svg", "compression_frontier.png",
		"comparison.svg", "comparison.png",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	for _, f := range files {
		switch {
		case strings.HasSuffix(f.Name, ".svg"):
			checkSVG(t, f)
		case strings.HasSuffix(f.Name, ".png"):
			img, err := png.Decode(bytes.NewReader(f.Data))
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			if img.Bounds().Dx() < 1000 {
				t.Errorf("%s: %d px wide, want print resolution", f.Name, img.Bounds().Dx())
			}
		}
	}
	// Equal inputs give byte-identical files.
	again, err := Render(fakeBenchmark(t), []Format{SVG, PNG})
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if !bytes.Equal(files[i].Data, again[i].Data) {
			t.Errorf("%s differs between two renderings", files[i].Name)
		}
	}
}

// checkSVG parses the document and checks what a reader sees: axis labels,
// every result's label, no font file or network reference.
func checkSVG(t *testing.T, f File) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(f.Data))
	var texts []string
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: invalid XML: %v", f.Name, err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			inText = tk.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tk))
			}
		}
	}
	all := strings.Join(texts, "\n")
	if strings.Count(string(f.Data), "http") != 2 { // the two xmlns declarations only
		t.Errorf("%s: unexpected http reference", f.Name)
	}
	if strings.Contains(string(f.Data), "@font-face") || strings.Contains(string(f.Data), "url(") {
		t.Errorf("%s: embeds or loads a font", f.Name)
	}
	if !strings.Contains(string(f.Data), "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;") {
		t.Errorf("%s: no font fallbacks", f.Name)
	}
	long := "a-very-long-backbone-name-from-a-model-hub/with-a-path-and-version-v2.1"
	if strings.Contains(all, long) {
		t.Errorf("%s: long name not shortened", f.Name)
	}
	wantLabels := map[string][]string{
		"metrics_at_k.svg":         {"recall@k", "hit_rate@k", "ndcg@k", "precision@k", "k (log scale)", "alpha", "beta", label(long)},
		"per_query_ndcg@10.svg":    {"ndcg@10 of a query", "alpha[pca_16]", label(long)},
		"margins.svg":              {"retrieval margin (cosine score difference)", "beta"},
		"compression_frontier.svg": {"gallery bytes as stored (log scale)", "primary score (ndcg@10)", "uncompressed", "compressed variant", "alpha[quantize_int8]"},
		"comparison.svg":           {"difference to alpha", "beta", label(long)},
	}
	for _, l := range wantLabels[f.Name] {
		if !strings.Contains(all, l) {
			t.Errorf("%s: no text %q in %q", f.Name, l, all)
		}
	}
}

// The forest plot shows result − best: every difference is negative here,
// one row per non-best result; markers are filled when significant.
func TestComparisonRows(t *testing.T) {
	b := fakeBenchmark(t)
	rs, err := newResultSet(b)
	if err != nil {
		t.Fatal(err)
	}
	fig, err := comparison(rs)
	if err != nil || fig == nil {
		t.Fatalf("figure %v, err %v", fig, err)
	}
	if strings.Contains(fig.Caption, "disagree") {
		t.Errorf("caption explains a disagreement that does not exist: %s", fig.Caption)
	}
	// An interval that excludes 0 next to a hollow (not significant) marker
	// is explained in the caption.
	for i := range b.Comparison.Blocks[0].Pairs {
		if p := &b.Comparison.Blocks[0].Pairs[i]; p.Significant {
			p.Significant = false
			break
		}
	}
	if fig, err = comparison(rs); err != nil || !strings.Contains(fig.Caption, "In 1 of the 4 rows the interval and the marker disagree") ||
		!strings.Contains(fig.Caption, "Holm adjustment over 10 pairs") {
		t.Errorf("caption %q, err %v", fig.Caption, err)
	}
	// Baseline family: differences to the baseline, pairs (result, baseline).
	base := "beta"
	b.Comparison.Settings.Family, b.Comparison.Settings.Baseline = "baseline", &base
	b.Comparison.Blocks[0].Pairs = []results.PairComparison{{A: "alpha", B: "beta", MeanDiff: 0.1, CI: results.Interval{Low: 0.05, High: 0.15}}}
	fig, err = comparison(rs)
	if err != nil || fig == nil || !strings.Contains(fig.Caption, "the baseline, beta") {
		t.Fatalf("baseline figure %v, err %v", fig, err)
	}
	// An unknown name is an error, not a silent gap.
	b.Comparison.Blocks[0].Results = append(b.Comparison.Blocks[0].Results, results.ResultSummary{Name: "ghost"})
	if _, err := comparison(rs); err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Errorf("err %v", err)
	}
}

func TestNoComparisonNoCompressionNoFigure(t *testing.T) {
	b := fakeBenchmark(t)
	b.Comparison = nil
	b.ExtractorResults = []*results.ExtractorResult{b.ExtractorResults[0], b.ExtractorResults[3]}
	for _, r := range b.ExtractorResults {
		r.Forward.Margins = nil
	}
	figs, err := Figures(b)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"metrics_at_k", "per_query_ndcg@10"}) {
		t.Errorf("figures %v", names)
	}
	if figs, err := Figures(&results.Benchmark{}); err != nil || len(figs) != 0 {
		t.Errorf("empty benchmark: %v %v", figs, err)
	}
}

// Names reach the SVG escaped: a result name cannot inject markup.
func TestNamesEscaped(t *testing.T) {
	b := fakeBenchmark(t)
	b.ExtractorResults[3].Name = `<script>alert(1)</script>&"x"`
	b.Comparison = nil
	if err := b.Finalize(); err != nil {
		t.Fatal(err)
	}
	files, err := Render(b, []Format{SVG})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if bytes.Contains(f.Data, []byte("<script")) {
			t.Errorf("%s: raw <script>", f.Name)
		}
	}
}

func TestNonFiniteRefused(t *testing.T) {
	b := fakeBenchmark(t)
	b.ExtractorResults[1].Forward.Metrics.Vals[3] = math.NaN()
	if _, err := Render(b, []Format{SVG}); err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("err %v", err)
	}
	b = fakeBenchmark(t)
	b.Comparison.Blocks[0].Pairs[0].CI.High = math.Inf(1)
	if _, err := Render(b, []Format{SVG}); err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("err %v", err)
	}
}

func TestLabelAndHelpers(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"short", "short"},
		{"line\nbreak\ttab", "line break tab"},
		{strings.Repeat("x", 40), strings.Repeat("x", 40)},
		{strings.Repeat("a", 30) + strings.Repeat("b", 11) + "[pca_16]", strings.Repeat("a", 19) + "…a" + strings.Repeat("b", 11) + "[pca_16]"},
	} {
		if got := label(c.in); got != c.want {
			t.Errorf("label(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := quantile([]float64{1, 2, 3, 4}, 0.25); got != 1.75 { // numpy: 1.75
		t.Errorf("quantile %v", got)
	}
	if got := quantile([]float64{5}, 0.75); got != 5 {
		t.Errorf("quantile %v", got)
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{1, "1 B"}, {2000, "2 kB"}, {5e6, "5 MB"}, {1e9, "1 GB"}} {
		if got := byteLabel(c.v); got != c.want {
			t.Errorf("byteLabel(%v) = %q", c.v, got)
		}
	}
	for _, c := range []struct{ in, want string }{{"x[pca_16]", "x"}, {"x", "x"}, {"[y]", "[y]"}, {"a[b]c", "a[b]c"}} {
		if got := variantBase(c.in); got != c.want {
			t.Errorf("variantBase(%q) = %q", c.in, got)
		}
	}
	// Colours follow run order, as in the figures.
	c := Colors(fakeBenchmark(t))
	if c["alpha"] != "#0072b2" || c["alpha[pca_16]"] != "#d55e00" || c["beta"] != "#cc79a7" {
		t.Errorf("colours %v", c)
	}
	if _, err := ParseFormats("pdf"); err == nil {
		t.Error("pdf accepted")
	}
}

func TestNiceTicks(t *testing.T) {
	labels := func(lo, hi float64) (major []string, minor int) {
		for _, tk := range (niceTicks{}).Ticks(lo, hi) {
			if tk.Value < lo-1e-12 || tk.Value > hi+1e-12 {
				t.Errorf("[%v, %v]: tick %v outside", lo, hi, tk.Value)
			}
			if tk.Label == "" {
				minor++
			} else {
				major = append(major, tk.Label)
			}
		}
		return major, minor
	}
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0.715, 0.845, []string{"0.72", "0.74", "0.76", "0.78", "0.80", "0.82", "0.84"}},
		{0, 1, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},
		{-0.27, 0.31, []string{"-0.2", "-0.1", "0.0", "0.1", "0.2", "0.3"}},
		{0.0012, 0.0168, []string{"0.005", "0.010", "0.015"}},
		{-0.095, 0.003, []string{"-0.08", "-0.06", "-0.04", "-0.02", "0.00"}},
	} {
		major, minor := labels(c.lo, c.hi)
		if !slices.Equal(major, c.want) {
			t.Errorf("[%v, %v]: %v, want %v", c.lo, c.hi, major, c.want)
		}
		if minor < len(major)-1 {
			t.Errorf("[%v, %v]: %d minor ticks", c.lo, c.hi, minor)
		}
	}
	if got := (niceTicks{}).Ticks(2, 2); len(got) != 1 {
		t.Errorf("degenerate range: %v", got)
	}
}

// With many results the figures grow so every legend entry fits.
func TestManyResultsLegend(t *testing.T) {
	b := fakeBenchmark(t)
	for i := range 25 {
		b.ExtractorResults = append(b.ExtractorResults, fakeResult(fmt.Sprintf("extra-%02d", i), 0.5+float64(i)/100, "none", 8, 0))
	}
	b.Comparison = nil
	if err := b.Finalize(); err != nil {
		t.Fatal(err)
	}
	figs, err := Figures(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		if f.Name == "metrics_at_k" || f.Name == "compression_frontier" {
			// The legend's entries at 10 pt, 4 pt apart, need at least this.
			if need := vg.Points(float64(len(b.ExtractorResults)) * 12); f.h < need {
				t.Errorf("%s: height %v for %d legend entries", f.Name, f.h, len(b.ExtractorResults))
			}
			checkTextInside(t, "30 results", f)
		}
		if _, err := f.SVG(); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
}
