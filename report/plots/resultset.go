package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/results"
)

// series is one result as the figures see it.
type series struct {
	r     *results.ExtractorResult
	label string // figure label (bounded length)
	style int    // run-order index: colour, marker and dash (styleOf)
}

func (s series) color() color.Color {
	c, _, _ := styleOf(s.style)
	return palette[c]
}

// marker is the result's marker shape (see markers).
func (s series) marker() marker {
	_, m, _ := styleOf(s.style)
	return markers[m]
}

func (s series) lineStyle() draw.LineStyle {
	_, _, d := styleOf(s.style)
	return draw.LineStyle{Color: s.color(), Width: vg.Points(1.5), Dashes: dashes[d]}
}

func (s series) glyphStyle() draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.color(), Radius: vg.Points(3), Shape: s.marker()}
}

// resultSet holds the results in run order (which fixes colours) and in
// ranked order (which fixes the top-to-bottom order of rows).
type resultSet struct {
	b       *results.Benchmark
	results []series // run order
	ranked  []series // SPEC §5.3 ranked order
	primary string
}

func newResultSet(b *results.Benchmark) (*resultSet, error) {
	rs := &resultSet{b: b, primary: b.Metadata.RetrievalConfig.PrimaryMetric}
	style := map[*results.ExtractorResult]int{}
	for i, r := range b.ExtractorResults {
		if r.Forward == nil {
			return nil, fmt.Errorf("plots: result %s %w", msgfmt.Quote(r.Name), errNoForward)
		}
		for _, v := range r.Forward.Metrics.Vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("plots: result %s has a non-finite metric value", msgfmt.Quote(r.Name))
			}
		}
		style[r] = i
		rs.results = append(rs.results, series{r: r, label: label(r.Name), style: i})
	}
	for _, r := range b.Ranked() {
		rs.ranked = append(rs.ranked, rs.results[style[r]])
	}
	if len(rs.results) > 0 && rs.results[0].r.Forward.PrimaryMetric != "" {
		rs.primary = rs.results[0].r.Forward.PrimaryMetric
	}
	return rs, nil
}
