package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/plots"
	"github.com/vertebrae-eval/vertebrae/results"
)

//go:embed html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Parse(htmlSource))

// HTML renders the self-contained HTML report of SPEC §5.8: the Markdown
// report's values as tables, the worst queries, and the figures of
// package plots as inline SVG. The page loads nothing and runs no script;
// html/template escapes every dynamic value. Equal inputs give
// byte-identical pages.
func HTML(b *results.Benchmark) ([]byte, error) {
	v, err := newHTMLView(b)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("HTML report: %w", err)
	}
	return buf.Bytes(), nil
}

type keyValue struct {
	Key, Value string
	JSON       bool // the value is canonical JSON (set in monospace)
}

type htmlView struct {
	Summary     []keyValue
	Primary     string
	Ranking     []htmlRankRow
	HasCI       bool   // the ranking shows keys, intervals and significance marks
	SigNote     string // how the superscripts and intervals were computed
	LeftOut     string // the results a cap left out of the comparison, and why
	HasMatrix   bool   // some block is shown as a pairwise significance matrix
	TestP       string // head of the chosen test's p-value column
	Comparison  []htmlBlock
	Compression []htmlCompressionRow
	Figures     []htmlFigure
	Details     []htmlDetail
	Fingerprint string
	Version     string
}

type htmlRankRow struct {
	Rank                          int
	Name                          string
	Score, PrimaryValue, MRR, MAP string
	Color                         template.CSS // the result's colour in the figures
	Key                           string       // key letter, when compared
	CI                            string       // interval of the primary metric's mean, when compared
	Beats                         string       // keys of the results it beats significantly
}

type htmlBlock struct {
	Metric, Direction string
	NQueries          int
	Pairs             []htmlPairRow
	Matrix            *htmlMatrix // more than results.MatrixAbove results, "all" family
}

// htmlMatrix is a pairwise significance matrix: rows and columns are the
// compared results in ranked order, columns headed by their keys.
type htmlMatrix struct {
	Note string
	Keys []string
	Rows []htmlMatrixRow
}

type htmlMatrixRow struct {
	Key, Name string
	Cells     []htmlMatrixCell
}

type htmlMatrixCell struct {
	Text, Mark string
	Class      string // "better", "worse", "diag" or ""
}

type htmlPairRow struct {
	A, B, MeanDiff, CI, P, HolmP, Effect string
	Significant                          bool
}

type htmlCompressionRow struct {
	Name, Method, Applied, Dim, Bytes, Ratio, Score string
}

type htmlFigure struct {
	Name, Title, Caption string
	SVG                  template.HTML
}

type htmlDetail struct {
	Rank        int
	Name        string
	Directions  []string   // "forward", and "reverse" when bidirectional
	Overall     []keyValue // metrics without a cut-off (mrr, map), forward
	OverallRev  []keyValue // the same, reverse
	Families    []string   // column heads of the k grid
	AtK         []htmlKRow // one row per cut-off
	Similarity  []htmlSimRow
	Compression string
	Warnings    []string
	WorstKeys   []string
	Worst       []htmlWorstRow
}

// htmlKRow is one cut-off of the k grid: the forward values of every
// family, then the reverse ones.
type htmlKRow struct {
	K      string
	Values []string
}

// htmlSimRow is one similarity diagnostic of SPEC §4.7 in one direction.
type htmlSimRow struct {
	Direction, What        string
	Mean, Median, Min, Max string
}

type htmlWorstRow struct {
	QueryID string
	Values  []string
}

func newHTMLView(b *results.Benchmark) (*htmlView, error) {
	ranked := b.Ranked()
	for _, r := range ranked {
		if r.Forward == nil {
			return nil, fmt.Errorf("HTML report: result %s has no forward score result", msgfmt.Quote(r.Name))
		}
	}
	v := &htmlView{
		Primary:     b.Metadata.RetrievalConfig.PrimaryMetric,
		Fingerprint: b.Metadata.ProtocolFingerprint,
		Version:     b.Metadata.VertebraeVersion,
	}
	if len(ranked) > 0 {
		v.Primary = ranked[0].Forward.PrimaryMetric
	}
	var err error
	if v.Summary, err = htmlSummary(b); err != nil {
		return nil, err
	}
	colors := plots.Colors(b)
	for i, r := range ranked {
		row := htmlRankRow{Rank: i + 1, Name: r.Name, Color: template.CSS("background:" + colors[r.Name])}
		if row.Score, err = fixed4(r.PrimaryScore, r.Name, "primary_score"); err != nil {
			return nil, err
		}
		for _, c := range []struct {
			key string
			dst *string
		}{{v.Primary, &row.PrimaryValue}, {"mrr", &row.MRR}, {"map", &row.MAP}} {
			x, ok := r.Forward.Metrics.Get(c.key)
			if !ok {
				return nil, fmt.Errorf("HTML report: result %s has no forward metric %s", msgfmt.Quote(r.Name), msgfmt.Quote(c.key))
			}
			if *c.dst, err = fixed4(x, r.Name, c.key); err != nil {
				return nil, err
			}
		}
		v.Ranking = append(v.Ranking, row)
	}
	if err := addComparison(v, b, ranked); err != nil {
		return nil, err
	}
	if hasCompression(ranked) {
		for _, r := range ranked {
			row, err := compressionRow(r)
			if err != nil {
				return nil, err
			}
			v.Compression = append(v.Compression, row)
		}
	}
	figs, err := plots.Figures(b)
	if err != nil {
		return nil, err
	}
	for _, f := range figs {
		svg, err := f.SVG()
		if err != nil {
			return nil, err
		}
		v.Figures = append(v.Figures, htmlFigure{Name: f.Name, Title: f.Title, Caption: f.Caption, SVG: inlineSVG(svg, f.Title)})
	}
	for i, r := range ranked {
		d, err := detail(i+1, r, v.Primary)
		if err != nil {
			return nil, err
		}
		v.Details = append(v.Details, d)
	}
	return v, nil
}

// htmlSummary is the Markdown report's dataset summary (SPEC §2.11 order),
// unescaped, with the canonical-JSON values marked for monospace.
func htmlSummary(b *results.Benchmark) ([]keyValue, error) {
	entries, err := summaryEntries(b.DatasetSummary)
	if err != nil {
		return nil, fmt.Errorf("HTML report: %w", err)
	}
	out := make([]keyValue, len(entries))
	for i, e := range entries {
		out[i] = keyValue{Key: e.Key, Value: e.Value, JSON: e.Key == "identity" || e.Key == "metadata"}
	}
	return out, nil
}

// compressionRow holds the cells of the Markdown compression table.
func compressionRow(r *results.ExtractorResult) (htmlCompressionRow, error) {
	md := r.CompressionMetadata
	method, _ := md["method"].(string)
	applied, _ := md["applied"].(bool)
	row := htmlCompressionRow{Name: r.Name, Method: method, Applied: strconv.FormatBool(applied), Dim: "-", Bytes: "-", Ratio: "-"}
	if d, ok := asInt(md["compressed_dim"]); ok {
		row.Dim = strconv.Itoa(d)
	}
	row.Bytes, row.Ratio = galleryBytesCells(r)
	var err error
	row.Score, err = fixed4(r.PrimaryScore, r.Name, "primary_score")
	return row, err
}

// atKFamilies are the column heads of the k grid, in canonical order.
var atKFamilies = []string{"precision", "recall", "hit_rate", "ndcg"}

// detail lays a result's metrics out as in the Markdown details, but as a
// grid of cut-off × metric family (so many cut-offs add rows, not columns),
// and its worst queries with the metrics at the primary cut-off.
func detail(rank int, r *results.ExtractorResult, primary string) (htmlDetail, error) {
	d := htmlDetail{Rank: rank, Name: r.Name, Warnings: r.Warnings, Directions: []string{"forward"}, Families: atKFamilies}
	dirs := []*results.ScoreResult{r.Forward}
	if r.Reverse != nil {
		dirs = append(dirs, r.Reverse)
		d.Directions = append(d.Directions, "reverse")
	}
	var ks []string
	for _, key := range r.Forward.Metrics.Keys {
		if fam, k, ok := strings.Cut(key, "@"); ok && slices.Contains(atKFamilies, fam) && !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	for i, s := range dirs {
		var overall []keyValue
		for j, key := range s.Metrics.Keys {
			if strings.Contains(key, "@") {
				continue
			}
			v, err := fixed4(s.Metrics.Vals[j], r.Name, key)
			if err != nil {
				return d, err
			}
			overall = append(overall, keyValue{Key: key, Value: v})
		}
		if i == 0 {
			d.Overall = overall
		} else {
			d.OverallRev = overall
		}
	}
	for _, k := range ks {
		row := htmlKRow{K: k}
		for _, s := range dirs {
			for _, fam := range atKFamilies {
				cell := "-"
				if v, ok := s.Metrics.Get(fam + "@" + k); ok {
					var err error
					if cell, err = fixed4(v, r.Name, fam+"@"+k); err != nil {
						return d, err
					}
				}
				row.Values = append(row.Values, cell)
			}
		}
		d.AtK = append(d.AtK, row)
	}
	for i, s := range dirs {
		rows, err := similarityRows(d.Directions[i], s, r.Name)
		if err != nil {
			return d, err
		}
		d.Similarity = append(d.Similarity, rows...)
	}
	if method, ok := r.CompressionMetadata["method"].(string); ok && method != "" && method != "none" {
		applied, _ := r.CompressionMetadata["applied"].(bool)
		d.Compression = fmt.Sprintf("%s, applied=%t", method, applied)
	}
	worst := r.Forward.Diagnostics.WorstQueries
	if len(worst) == 0 {
		return d, nil
	}
	d.WorstKeys = worstKeys(worst[0].Metrics.Keys, primary, ks)
	for _, q := range worst {
		row := htmlWorstRow{QueryID: q.QueryID}
		for _, key := range d.WorstKeys {
			cell := "-"
			if v, ok := q.Metrics.Get(key); ok {
				var err error
				if cell, err = fixed4(v, r.Name, "worst query "+key); err != nil {
					return d, err
				}
			}
			row.Values = append(row.Values, cell)
		}
		d.Worst = append(d.Worst, row)
	}
	return d, nil
}

// similarityRows are the §4.7 summaries of one direction (those with
// values; evaluate-run has none).
func similarityRows(dir string, s *results.ScoreResult, name string) ([]htmlSimRow, error) {
	var rows []htmlSimRow
	for _, x := range []struct {
		what string
		sum  metrics.Summary
	}{
		{"positive similarity", s.Diagnostics.PositiveSimilarity},
		{"nearest negative", s.Diagnostics.NearestNegativeSimilarity},
		{"retrieval margin", s.Diagnostics.RetrievalMargin},
	} {
		if x.sum.Mean == nil || x.sum.Median == nil || x.sum.Min == nil || x.sum.Max == nil {
			continue
		}
		row := htmlSimRow{Direction: dir, What: x.what}
		for _, c := range []struct {
			v   float64
			dst *string
		}{{*x.sum.Mean, &row.Mean}, {*x.sum.Median, &row.Median}, {*x.sum.Min, &row.Min}, {*x.sum.Max, &row.Max}} {
			var err error
			if *c.dst, err = fixed4(c.v, name, x.what); err != nil {
				return nil, err
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// worstKeys are the worst-queries columns: the primary metric, mrr, map,
// and the other families at the primary's cut-off (the largest cut-off
// when the primary has none). The JSON report and the CSV export hold
// every per-query metric.
func worstKeys(keys []string, primary string, ks []string) []string {
	out := []string{primary}
	for _, k := range []string{"mrr", "map"} {
		if k != primary && slices.Contains(keys, k) {
			out = append(out, k)
		}
	}
	_, cut, ok := strings.Cut(primary, "@")
	if !ok && len(ks) > 0 {
		cut = ks[len(ks)-1]
	}
	for _, fam := range atKFamilies {
		if key := fam + "@" + cut; key != primary && slices.Contains(keys, key) {
			out = append(out, key)
		}
	}
	return out
}

// svgProlog matches what a standalone SVG file needs and an inline one
// must not carry: the XML declaration, the generator comment and the
// namespace declarations (HTML puts <svg> in the SVG namespace itself;
// leaving them out keeps every "http://" out of the page).
var svgProlog = regexp.MustCompile(`<\?xml[^>]*\?>\s*|<!--[^>]*-->\s*|\s+xmlns(:xlink)?="[^"]*"`)

// inlineSVG prepares a figure rendered by package plots, whose text
// content gonum escapes, for inclusion in the page as markup, labelled for
// screen readers with its (escaped) title.
func inlineSVG(svg []byte, title string) template.HTML {
	out := svgProlog.ReplaceAll(svg, nil)
	out = bytes.Replace(out, []byte("<svg "), []byte(`<svg role="img" aria-label="`+html.EscapeString(title)+`" `), 1)
	return template.HTML(out) // generated markup, texts escaped by vgsvg
}

// addComparison adds the SPEC §13 values exactly as the Markdown report
// (comparison_md.go) shows them, with the same legend sentence: key letters, the interval of the primary metric (forward)
// and superscripts naming by key the results each one beats, then every
// pair of every compared metric and direction.
func addComparison(v *htmlView, b *results.Benchmark, ranked []*results.ExtractorResult) error {
	c := b.Comparison
	if c == nil || len(c.Blocks) == 0 {
		return nil
	}
	keys := rankingKeys(ranked)
	if blk := primaryBlock(b, v.Primary); blk != nil {
		v.HasCI = true
		summary := map[string]results.ResultSummary{}
		for _, r := range blk.Results {
			summary[r.Name] = r
		}
		for i := range v.Ranking {
			row := &v.Ranking[i]
			row.Key, row.CI = keys[row.Name], "-"
			s, ok := summary[row.Name]
			if !ok {
				continue
			}
			var err error
			if row.CI, err = interval(s.CI, row.Name); err != nil {
				return err
			}
			for _, beaten := range s.Beats {
				row.Beats += keys[beaten]
			}
		}
	}
	st := c.Settings
	v.TestP = "randomization p"
	if st.Test == "ttest" {
		v.TestP = "t-test p"
	}
	family := "every pair of compared results"
	if st.Baseline != nil {
		family = "each result against the baseline " + *st.Baseline
	}
	v.SigNote = fmt.Sprintf("Superscripts: the keys of the results whose forward %s this result is significantly better than "+
		"(%s, Holm-adjusted p < %s over %s). 95 %% CI: %s bootstrap interval of the mean, %d resamples, seed %d.",
		v.Primary, testName(st.Test), formatAlpha(st.Alpha), family, ciName(st.CIMethod), st.Bootstrap, st.Seed)
	v.LeftOut = leftOutNote(st, func(s string) string { return s })
	for bi := range c.Blocks {
		blk := &c.Blocks[bi]
		hb := htmlBlock{Metric: blk.Metric, Direction: blk.Direction, NQueries: blk.NQueries}
		if c.ShowsMatrix(blk) {
			m, err := htmlPairMatrix(st, blk, ranked, keys)
			if err != nil {
				return err
			}
			hb.Matrix, v.HasMatrix = m, true
		}
		for _, p := range blk.Pairs {
			name := p.A + " vs " + p.B
			row := htmlPairRow{A: p.A, B: p.B, Significant: p.Significant, Effect: "-"}
			var err error
			if row.MeanDiff, err = fixed4(p.MeanDiff, name, "mean_diff"); err != nil {
				return err
			}
			if row.CI, err = interval(p.CI, name); err != nil {
				return err
			}
			raw, adj := p.RandomizationP, p.RandomizationPAdjusted
			if st.Test == "ttest" {
				raw, adj = p.TTestP, p.TTestPAdjusted
			}
			if !finite(raw) || !finite(adj) {
				return fmt.Errorf("HTML report: %s: non-finite p-value", msgfmt.Quote(name))
			}
			row.P, row.HolmP = formatP(raw), formatP(adj)
			if p.EffectSize != nil {
				if row.Effect, err = fixed4(*p.EffectSize, name, "effect_size"); err != nil {
					return err
				}
			}
			hb.Pairs = append(hb.Pairs, row)
		}
		v.Comparison = append(v.Comparison, hb)
	}
	return nil
}

// htmlPairMatrix holds the cells of the Markdown matrix (writeMatrix).
func htmlPairMatrix(st results.ComparisonSettings, blk *results.MetricComparison, ranked []*results.ExtractorResult, keys map[string]string) (*htmlMatrix, error) {
	names := matrixNames(blk, ranked)
	cells := blk.Matrix(names)
	m := &htmlMatrix{Note: matrixNote(st, blk)}
	for i, row := range names {
		m.Keys = append(m.Keys, keys[row])
		hr := htmlMatrixRow{Key: keys[row], Name: row}
		for j, col := range names {
			text, mark, err := matrixCell(cells[i][j], i == j, row+" vs "+col)
			if err != nil {
				return nil, err
			}
			cell := htmlMatrixCell{Text: text, Mark: mark}
			switch {
			case i == j:
				cell.Class = "diag"
			case mark == markBetter:
				cell.Class = "better"
			case mark == markWorse:
				cell.Class = "worse"
			}
			hr.Cells = append(hr.Cells, cell)
		}
		m.Rows = append(m.Rows, hr)
	}
	return m, nil
}

func interval(in results.Interval, name string) (string, error) {
	lo, err := fixed4(in.Low, name, "ci.low")
	if err != nil {
		return "", err
	}
	hi, err := fixed4(in.High, name, "ci.high")
	return "[" + lo + ", " + hi + "]", err
}
