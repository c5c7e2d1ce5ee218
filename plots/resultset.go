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
	style int    // index into palette/glyphs/dashes: run order
}

func (s series) color() color.Color { return palette[s.style%len(palette)] }

func (s series) lineStyle() draw.LineStyle {
	return draw.LineStyle{
		Color:  s.color(),
		Width:  vg.Points(1.5),
		Dashes: dashes[(s.style/len(palette))%len(dashes)],
	}
}

func (s series) glyphStyle() draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.color(), Radius: vg.Points(3), Shape: glyphs[s.style%len(glyphs)]}
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

// legendWidth is the width of the legend strip right of the plot area.
func legendWidth(entries []series) vg.Length {
	p := newPlot()
	w := vg.Length(0)
	for _, s := range entries {
		w = max(w, p.Legend.TextStyle.Rectangle(s.label).Max.X)
	}
	return w + p.Legend.ThumbnailWidth + vg.Points(24)
}

// legendHeight bounds the height of a legend of n entries (10 pt text,
// 4 pt apart) plus the strip's top offset, so figures with many results
// grow instead of clipping their legend.
func legendHeight(n int) vg.Length {
	return vg.Length(n)*vg.Points(10*1.25+4) + vg.Points(40)
}
