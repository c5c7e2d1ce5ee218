package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/report/plots"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
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

type keyValue struct{ Key, Value string }

type htmlView struct {
	Summary     []summaryRow
	RawJSON     string // dataset identity and metadata as indented canonical JSON, shown collapsed at the end
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
	Notes             []string    // one sentence per pair whose interval and test disagree
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
	Disagrees                            bool // interval and test disagree: a note under the table explains
}

type htmlCompressionRow struct {
	Name, Method, Applied, Dim, Bytes, Ratio, Score string
}

type htmlFigure struct {
	Name, Title, Caption string
	SVG                  template.HTML
}

// summaryRow is one row of the dataset summary table: a field, a group
// heading ("identity", "metadata") or a field of a group.
type summaryRow struct {
	Key, Value string
	Group      bool // heading of the rows below it
	Sub        bool // a field of the group above
	Mono       bool // a digest, set in monospace
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
	if v.Summary, v.RawJSON, err = htmlSummary(b.DatasetSummary); err != nil {
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
		v.Figures = append(v.Figures, htmlFigure{Name: f.Name, Title: f.Title, Caption: f.Caption, SVG: inlineSVG(svg, f.Title, f.LegibleWidth(minFigureTextPx))})
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

// htmlSummary lays the dataset summary (SPEC §2.11 order) out as a table:
// the counts, then the identity and the metadata field by field (nested
// fields as dotted paths, lists of plain values comma-separated), so the
// page opens with no raw JSON. The identity and metadata are also
// returned as indented canonical JSON, which the page shows collapsed at
// its end.
func htmlSummary(s retrieval.Summary) ([]summaryRow, string, error) {
	rows := []summaryRow{
		{Key: "modality", Value: s.Modality},
		{Key: "query_modality", Value: s.QueryModality},
		{Key: "gallery_modality", Value: s.GalleryModality},
		{Key: "n_queries", Value: strconv.Itoa(s.NQueries)},
		{Key: "n_gallery", Value: strconv.Itoa(s.NGallery)},
		{Key: "n_relevance_pairs", Value: strconv.Itoa(s.NRelevancePairs)},
		{Key: "n_exclusions", Value: strconv.Itoa(s.NExclusions)},
	}
	raw, err := canonjson.Marshal(map[string]any{"identity": s.Identity, "metadata": s.Metadata})
	if err != nil {
		return nil, "", fmt.Errorf("HTML report: dataset summary: %w", err)
	}
	var generic struct{ Identity, Metadata any }
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, "", fmt.Errorf("HTML report: dataset summary: %w", err)
	}
	for _, g := range []struct {
		name  string
		v     any
		first []string // fields shown first, in this order
	}{
		{"identity", generic.Identity, []string{"dataset_id", "revision", "manifest_sha256", "mode", "key"}},
		{"metadata", generic.Metadata, nil},
	} {
		fields := flattenJSON("", g.v, g.first)
		if len(fields) == 0 {
			rows = append(rows, summaryRow{Key: g.name, Value: "-"})
			continue
		}
		rows = append(rows, summaryRow{Key: g.name, Group: true})
		rows = append(rows, fields...)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, raw, "", "  "); err != nil {
		return nil, "", fmt.Errorf("HTML report: dataset summary: %w", err)
	}
	return rows, pretty.String(), nil
}

// hexDigest matches a hash written in hex (set in monospace).
var hexDigest = regexp.MustCompile(`^[0-9a-f]{32,}$`)

// flattenJSON lists the fields of a decoded JSON value as summary rows:
// objects by dotted path (keys in first, then in canonical order), lists
// of plain values comma-separated, other lists by index.
func flattenJSON(path string, v any, first []string) []summaryRow {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			if path == "" {
				return nil
			}
			return []summaryRow{{Key: path, Value: "(empty)", Sub: true}}
		}
		keys := make([]string, 0, len(x))
		for _, k := range first {
			if _, ok := x[k]; ok {
				keys = append(keys, k)
			}
		}
		var rest []string
		for k := range x {
			if !slices.Contains(keys, k) {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		var rows []summaryRow
		for _, k := range append(keys, rest...) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			rows = append(rows, flattenJSON(p, x[k], nil)...)
		}
		return rows
	case []any:
		plain := make([]string, 0, len(x))
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				var rows []summaryRow
				for i, e := range x {
					rows = append(rows, flattenJSON(fmt.Sprintf("%s[%d]", path, i), e, nil)...)
				}
				return rows
			}
			plain = append(plain, jsonScalar(e))
		}
		if len(plain) == 0 {
			return []summaryRow{{Key: path, Value: "(empty)", Sub: true}}
		}
		return []summaryRow{{Key: path, Value: strings.Join(plain, ", "), Sub: true}}
	}
	val := jsonScalar(v)
	return []summaryRow{{Key: path, Value: val, Sub: true, Mono: hexDigest.MatchString(val)}}
}

// jsonScalar writes a decoded JSON scalar: strings as they are, numbers as
// canonical JSON wrote them.
func jsonScalar(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
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

// minFigureTextPx is the smallest size, in CSS pixels, figure text may
// shrink to when a figure is scaled down to a narrow screen; below the
// width that keeps it (plots.Figure.LegibleWidth) the figure scrolls
// sideways in its own box instead.
const minFigureTextPx = 9

// inlineSVG prepares a figure rendered by package plots, whose text
// content gonum escapes, for inclusion in the page as markup, labelled for
// screen readers with its (escaped) title. The page scales it down to the
// width of the screen (max-width: 100 %) but not below minWidth CSS
// pixels, where its text would become illegible.
func inlineSVG(svg []byte, title string, minWidth float64) template.HTML {
	out := svgProlog.ReplaceAll(svg, nil)
	attrs := `<svg role="img" aria-label="` + html.EscapeString(title) + `" style="min-width:` + strconv.Itoa(int(math.Ceil(minWidth))) + `px" `
	out = bytes.Replace(out, []byte("<svg "), []byte(attrs), 1)
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
			if note, ok := disagreement(st, blk, p, func(s string) string { return s }); ok {
				row.Disagrees = true
				hb.Notes = append(hb.Notes, note)
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
