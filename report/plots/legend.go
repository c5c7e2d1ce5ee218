package plots

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendItem is one legend entry: its text and the thumbnails drawn in
// front of it.
type legendItem struct {
	text   string
	thumbs []plot.Thumbnailer
}

// legendStrip is a legend in a strip right of the plot area. The strip is
// as wide as its longest entry needs (measured with the font the figure
// is drawn in) and the figure as high as its entries need, so no entry
// is ever clipped, whatever the names.
type legendStrip struct {
	items []legendItem
	top   vg.Length // offset of the first entry below the figure's top edge
}

// legendMargin separates the strip from the plot area on its left and
// from the figure's edge on its right and bottom.
const legendMargin = 8

func newLegend() plot.Legend {
	l := newPlot().Legend
	l.Top, l.Left = true, true
	l.Padding = vg.Points(4)
	return l
}

// textWidth is the width of the longest entry: thumbnail, a space, text
// (what plot.Legend.Rectangle measures).
func (s legendStrip) textWidth() vg.Length {
	l := newLegend()
	w := vg.Length(0)
	for _, it := range s.items {
		w = max(w, l.ThumbnailWidth+l.TextStyle.Rectangle(" "+it.text).Max.X)
	}
	return w
}

// width is the width of the strip.
func (s legendStrip) width() vg.Length {
	return s.textWidth() + 2*vg.Points(legendMargin)
}

// height is the height the strip needs from the figure's top edge.
func (s legendStrip) height() vg.Length {
	l := newLegend()
	n := vg.Length(len(s.items))
	if n == 0 {
		return 0
	}
	enth := vg.Length(0)
	for _, it := range s.items {
		enth = max(enth, l.TextStyle.Rectangle(it.text).Max.Y)
	}
	// gonum's legend starts a descent below the top and sets the last
	// text's descender below its row: two descents.
	return s.top + 2*l.TextStyle.FontExtents().Descent + n*enth + (n-1)*l.Padding + vg.Points(legendMargin)
}

// draw draws the strip at the right edge of dc.
func (s legendStrip) draw(dc draw.Canvas) {
	l := newLegend()
	for _, it := range s.items {
		l.Add(it.text, it.thumbs...)
	}
	l.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-s.width()+vg.Points(legendMargin), 0, 0, -s.top))
}

// resultItems are legend entries for results, each with its marker (and
// its line when withLine).
func resultItems(entries []series, withLine bool) ([]legendItem, error) {
	items := make([]legendItem, 0, len(entries))
	for _, s := range entries {
		sc, err := plotter.NewScatter(plotter.XYs{{}})
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = s.glyphStyle()
		it := legendItem{text: s.label, thumbs: []plot.Thumbnailer{sc}}
		if withLine {
			ln, err := plotter.NewLine(plotter.XYs{{}})
			if err != nil {
				return nil, err
			}
			ln.LineStyle = s.lineStyle()
			it.thumbs = []plot.Thumbnailer{ln, sc}
		}
		items = append(items, it)
	}
	return items, nil
}

// glyphThumb draws glyphs centred in a legend thumbnail.
type glyphThumb []draw.GlyphStyle

func (g glyphThumb) Thumbnail(c *draw.Canvas) {
	p := vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}
	for _, sty := range g {
		c.DrawGlyph(sty, p)
	}
}
