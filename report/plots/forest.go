package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/vertebrae-eval/vertebrae/results"
)

// forestRow is one result's paired difference to the reference result.
type forestRow struct {
	s           series
	diff        float64
	ci          results.Interval
	significant bool
}

// comparison draws comparison.svg, a forest plot of the SPEC §13
// comparison of the primary metric (forward): for every other result the
// mean per-query difference to the reference (the best result, or the
// baseline of a baseline family) with its confidence interval; filled
// markers are significant after Holm adjustment.
func comparison(rs *resultSet) (*Figure, error) {
	c, block := rs.primaryForward()
	if c == nil {
		return nil, nil
	}
	if block == nil || len(block.Results) < 2 {
		return nil, nil
	}
	ref := block.Results[0].Name
	refWhat := "the best result"
	if c.Settings.Family == "baseline" && c.Settings.Baseline != nil {
		ref, refWhat = *c.Settings.Baseline, "the baseline"
	}
	byName := map[string]series{}
	for _, s := range rs.results {
		byName[s.r.Name] = s
	}
	var rows []forestRow
	for _, r := range block.Results {
		if r.Name == ref {
			continue
		}
		s, ok := byName[r.Name]
		if !ok {
			return nil, fmt.Errorf("plots: comparison names result %q, which the report does not hold", r.Name)
		}
		for _, p := range block.Pairs {
			// Differences are a − b; the plot shows result − reference.
			switch {
			case p.A == r.Name && p.B == ref:
				rows = append(rows, forestRow{s: s, diff: p.MeanDiff, ci: p.CI, significant: p.Significant})
			case p.A == ref && p.B == r.Name:
				rows = append(rows, forestRow{s: s, diff: -p.MeanDiff,
					ci: results.Interval{Low: -p.CI.High, High: -p.CI.Low}, significant: p.Significant})
			default:
				continue
			}
			break
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	for _, r := range rows {
		for _, v := range []float64{r.diff, r.ci.Low, r.ci.High} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("plots: comparison of %q has a non-finite value", r.s.r.Name)
			}
		}
	}
	level := fmt.Sprintf("%g %%", c.Settings.ConfidenceLevel*100)
	disagree := 0
	for _, r := range rows {
		if excludesZero(r.ci) != r.significant {
			disagree++
		}
	}
	note := ""
	if disagree > 0 {
		note = fmt.Sprintf(" In %d of the %d rows the interval and the marker disagree (an interval that excludes 0 with a hollow marker, "+
			"or one that includes 0 with a filled marker): the interval is a bootstrap interval of the pair alone, not adjusted for "+
			"multiple comparisons, while the marker shows the %s test after Holm adjustment over %d pairs; the comparison section explains each case.",
			disagree, len(rows), c.Settings.Test, len(block.Pairs))
	}
	fig := &Figure{
		Name:  "comparison",
		Title: "Paired comparison",
		Caption: fmt.Sprintf("Mean per-query difference in %s (forward) of each result to %s, %s, "+
			"with its %s %s bootstrap confidence interval. Filled markers: significant after Holm adjustment "+
			"(%s test, α = %g); hollow: not significant.",
			rs.primary, refWhat, label(ref), level, ciName(c.Settings.CIMethod), c.Settings.Test, c.Settings.Alpha) + note + leftOut(c.Settings),
		w: vg.Inch * 7.5, h: vg.Inch*1.3 + vg.Inch*0.42*vg.Length(len(rows)),
	}
	fig.draw = func(dc draw.Canvas) error {
		p := newPlot()
		p.Title.Text = "difference to " + label(ref)
		p.X.Label.Text = "mean difference in " + rs.primary + " (result − " + label(ref) + "), " + level + " CI"
		grid := plotter.NewGrid()
		grid.Vertical.Color = lightGrey
		grid.Horizontal = draw.LineStyle{}
		p.Add(grid)
		n := len(rows)
		lo, hi := 0.0, 0.0
		for _, r := range rows {
			lo, hi = min(lo, r.ci.Low, r.diff), max(hi, r.ci.High, r.diff)
		}
		zl, err := plotter.NewLine(plotter.XYs{{X: 0, Y: -0.5}, {X: 0, Y: float64(n) - 0.5}})
		if err != nil {
			return err
		}
		zl.LineStyle = draw.LineStyle{Color: color.Gray{Y: 0x60}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
		p.Add(zl, &forest{rows: rows})
		p.X.Min, p.X.Max = padRange(lo, hi, math.Inf(-1), math.Inf(1))
		p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
		names := make([]string, n)
		for i, r := range rows {
			names[n-1-i] = r.s.label
		}
		p.NominalY(names...)
		p.Draw(draw.Crop(dc, vg.Points(4), -vg.Points(12), vg.Points(4), -vg.Points(4)))
		return nil
	}
	return fig, nil
}

// excludesZero reports whether the interval lies wholly above or below 0.
func excludesZero(in results.Interval) bool { return in.Low > 0 || in.High < 0 }

// leftOut names, for a caption, the results an explicit cap left out of
// the comparison ("" when every result is compared).
func leftOut(s results.ComparisonSettings) string {
	if len(s.LeftOut) == 0 {
		return ""
	}
	names := make([]string, len(s.LeftOut))
	for i, n := range s.LeftOut {
		names[i] = label(n)
	}
	return fmt.Sprintf(" Not compared (the comparison was limited to the %d best-ranked results): %s.", len(s.Results), strings.Join(names, ", "))
}

func ciName(method string) string {
	if method == "percentile" {
		return "percentile"
	}
	return "BCa"
}

// forest draws an interval and a marker per row, the first row on top.
type forest struct{ rows []forestRow }

func (f *forest) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, r := range f.rows {
		xmin, xmax = min(xmin, r.ci.Low, r.diff), max(xmax, r.ci.High, r.diff)
	}
	return xmin, xmax, -0.5, float64(len(f.rows)) - 0.5
}

func (f *forest) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(f.rows)
	for i, r := range f.rows {
		y := trY(float64(n - 1 - i))
		col := r.s.color()
		line := draw.LineStyle{Color: col, Width: vg.Points(2)}
		capH := vg.Points(5)
		c.StrokeLine2(line, trX(r.ci.Low), y, trX(r.ci.High), y)
		c.StrokeLine2(line, trX(r.ci.Low), y-capH, trX(r.ci.Low), y+capH)
		c.StrokeLine2(line, trX(r.ci.High), y-capH, trX(r.ci.High), y+capH)
		pt := vg.Point{X: trX(r.diff), Y: y}
		if r.significant {
			c.DrawGlyph(draw.GlyphStyle{Color: col, Radius: vg.Points(4.5), Shape: draw.CircleGlyph{}}, pt)
		} else {
			c.DrawGlyph(draw.GlyphStyle{Color: color.White, Radius: vg.Points(4.5), Shape: draw.CircleGlyph{}}, pt)
			c.DrawGlyph(draw.GlyphStyle{Color: col, Radius: vg.Points(4.5), Shape: draw.RingGlyph{}}, pt)
		}
	}
}

// primaryForward returns the comparison and its block of the primary
// metric's forward direction (nil when the report has no comparison; a
// nil block when it does not compare that metric).
func (rs *resultSet) primaryForward() (*results.Comparison, *results.MetricComparison) {
	c := rs.b.Comparison
	if c == nil {
		return nil, nil
	}
	for i := range c.Blocks {
		if c.Blocks[i].Metric == rs.primary && c.Blocks[i].Direction == "forward" {
			return c, &c.Blocks[i]
		}
	}
	return c, nil
}
