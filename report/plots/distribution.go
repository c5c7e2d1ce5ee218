package plots

import (
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var lightGrey = color.Gray{Y: 0xE0}

// perQuery draws per_query_<primary metric>: the distribution of the
// forward per-query primary metric, one box per result, best on top.
func perQuery(rs *resultSet) (*Figure, error) {
	rows := make([]boxRow, 0, len(rs.ranked))
	for _, s := range rs.ranked {
		var vals []float64
		for _, q := range s.r.Forward.PerQuery {
			if v, ok := q.Metrics.Get(rs.primary); ok {
				vals = append(vals, v)
			}
		}
		rows = append(rows, boxRow{s: s, values: vals})
	}
	return boxFigure(rows, boxSpec{
		name:  "per_query_" + rs.primary,
		title: "Per-query " + rs.primary,
		caption: "Distribution of " + rs.primary + " over the queries (forward direction), one row per result in rank order. " +
			boxLegend,
		xLabel: rs.primary + " of a query",
		lo:     0, hi: 1,
	})
}

// margins draws margins: the distribution of the per-query retrieval
// margin of SPEC §4.7 (max positive score − nearest negative score).
func margins(rs *resultSet) (*Figure, error) {
	rows := make([]boxRow, 0, len(rs.ranked))
	for _, s := range rs.ranked {
		rows = append(rows, boxRow{s: s, values: slices.Clone(s.r.Forward.Margins)})
	}
	sim := rs.b.Metadata.RetrievalConfig.Similarity
	if len(rs.results) > 0 && rs.results[0].r.Forward.Metadata.Similarity != "" {
		sim = rs.results[0].r.Forward.Metadata.Similarity
	}
	return boxFigure(rows, boxSpec{
		name:  "margins",
		title: "Retrieval margins",
		caption: "Per-query retrieval margin (best positive score minus the nearest negative score, forward direction): " +
			"above 0 the query's best positive outranks every negative. " + boxLegend,
		xLabel: "retrieval margin (" + sim + " score difference)",
		lo:     math.Inf(-1), hi: math.Inf(1),
		zero: true,
	})
}

const boxLegend = "Box: quartiles; thick line: median; whiskers: the furthest values within 1.5 × IQR; " +
	"dots: queries beyond them; white circle: mean."

type boxRow struct {
	s      series
	values []float64
}

type boxSpec struct {
	name, title, caption, xLabel string
	lo, hi                       float64 // bounds of the x axis range
	zero                         bool    // draw a reference line at x = 0
}

// boxFigure lays out horizontal box plots, the result names on the y
// axis (so long names take the room they need instead of overlapping).
// Rows without values are left out; with none at all there is no figure.
func boxFigure(all []boxRow, spec boxSpec) (*Figure, error) {
	var rows []boxRow
	for _, r := range all {
		if len(r.values) > 0 {
			slices.Sort(r.values)
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	fig := &Figure{Name: spec.name, Title: spec.title, Caption: spec.caption,
		w: vg.Inch * 7.5, h: vg.Inch*1.1 + vg.Inch*0.45*vg.Length(len(rows))}
	fig.draw = func(dc draw.Canvas) error {
		p := newPlot()
		p.X.Label.Text = spec.xLabel
		grid := plotter.NewGrid()
		grid.Vertical.Color = lightGrey
		grid.Horizontal = draw.LineStyle{}
		p.Add(grid)
		bx := &boxes{rows: rows}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range rows {
			lo, hi = min(lo, r.values[0]), max(hi, r.values[len(r.values)-1])
		}
		if spec.zero {
			lo, hi = min(lo, 0), max(hi, 0)
			zl, err := plotter.NewLine(plotter.XYs{{X: 0, Y: -0.5}, {X: 0, Y: float64(len(rows)) - 0.5}})
			if err != nil {
				return err
			}
			zl.LineStyle = draw.LineStyle{Color: color.Gray{Y: 0x60}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
			p.Add(zl)
		}
		p.Add(bx)
		p.X.Min, p.X.Max = padRange(lo, hi, spec.lo, spec.hi)
		p.Y.Min, p.Y.Max = -0.5, float64(len(rows))-0.5
		names := make([]string, len(rows))
		for i, r := range rows { // best on top: the first row gets the highest y
			names[len(rows)-1-i] = r.s.label
		}
		p.NominalY(names...)
		p.X.Padding = vg.Points(3)
		p.Draw(draw.Crop(dc, vg.Points(4), -vg.Points(12), vg.Points(4), -vg.Points(8)))
		return nil
	}
	return fig, nil
}

// boxes is a gonum plotter of horizontal Tukey box plots, one per row at
// y = n-1-i. Outlying values are drawn once per distinct half-point
// position, so a million queries make a figure of bounded size.
type boxes struct{ rows []boxRow }

func (b *boxes) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, r := range b.rows {
		xmin, xmax = min(xmin, r.values[0]), max(xmax, r.values[len(r.values)-1])
	}
	return xmin, xmax, -0.5, float64(len(b.rows)) - 0.5
}

func (b *boxes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(b.rows)
	for i, r := range b.rows {
		y := float64(n - 1 - i)
		v := r.values
		q1, med, q3 := quantile(v, 0.25), quantile(v, 0.5), quantile(v, 0.75)
		iqr := q3 - q1
		loFence, hiFence := q1-1.5*iqr, q3+1.5*iqr
		wLo, wHi := med, med
		for _, x := range v {
			if x >= loFence {
				wLo = x
				break
			}
		}
		for j := len(v) - 1; j >= 0; j-- {
			if v[j] <= hiFence {
				wHi = v[j]
				break
			}
		}
		col := r.s.color()
		yc := trY(y)
		half := (trY(y+0.3) - trY(y-0.3)) / 2
		line := draw.LineStyle{Color: col, Width: vg.Points(1.2)}
		// Whiskers and caps.
		c.StrokeLine2(line, trX(wLo), yc, trX(q1), yc)
		c.StrokeLine2(line, trX(q3), yc, trX(wHi), yc)
		c.StrokeLine2(line, trX(wLo), yc-half/2, trX(wLo), yc+half/2)
		c.StrokeLine2(line, trX(wHi), yc-half/2, trX(wHi), yc+half/2)
		// Box, tinted with the result's colour.
		box := []vg.Point{{X: trX(q1), Y: yc - half}, {X: trX(q3), Y: yc - half}, {X: trX(q3), Y: yc + half}, {X: trX(q1), Y: yc + half}}
		c.FillPolygon(tint(col), box)
		c.StrokeLines(line, append(box, box[0]))
		c.StrokeLine2(draw.LineStyle{Color: color.Black, Width: vg.Points(2)}, trX(med), yc-half, trX(med), yc+half)
		// Outliers, one dot per distinct half-point position.
		dot := draw.GlyphStyle{Color: col, Radius: vg.Points(1.6), Shape: draw.CircleGlyph{}}
		last := vg.Length(math.Inf(-1))
		for _, x := range v {
			if x >= loFence && x <= hiFence {
				continue
			}
			px := vg.Length(math.Round(float64(trX(x))*2) / 2)
			if px == last {
				continue
			}
			last = px
			c.DrawGlyph(dot, vg.Point{X: px, Y: yc})
		}
		mean := 0.0
		for _, x := range v {
			mean += x
		}
		mean /= float64(len(v))
		mp := vg.Point{X: trX(mean), Y: yc}
		c.DrawGlyph(draw.GlyphStyle{Color: color.White, Radius: vg.Points(3.2), Shape: draw.CircleGlyph{}}, mp)
		c.DrawGlyph(draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3.2), Shape: draw.RingGlyph{}}, mp)
	}
}

// quantile is the linearly interpolated quantile of sorted values (the
// default of numpy and R, "type 7").
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i] + frac*(sorted[i+1]-sorted[i])
}

// tint mixes c with 70 % white: an opaque fill that prints like a
// transparent one.
func tint(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((float64(v>>8)*0.3 + 255*0.7) + 0.5) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 0xFF}
}
