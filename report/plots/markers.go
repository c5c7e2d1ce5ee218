package plots

import (
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Marker shapes of the figures.
const (
	shapeCircle = iota
	shapeSquare
	shapeTriangleUp
	shapeDiamond
	shapeTriangleDown
	shapePlus
	shapeCross
)

// marker is a draw.GlyphDrawer of one shape, filled or drawn as an outline
// (plus and cross are always lines). Outlines are 1.2 pt wide, thick
// enough to tell an open marker from a filled one at print size. Every
// shape covers about the same area for a given radius.
type marker struct {
	shape int
	open  bool
}

// markerLine is the stroke width of open markers, plus and cross.
const markerLine = 1.2

// DrawGlyph implements draw.GlyphDrawer.
func (m marker) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	var p vg.Path
	switch m.shape {
	case shapeCircle:
		p.Move(vg.Point{X: pt.X + r, Y: pt.Y})
		p.Arc(pt, r, 0, 2*math.Pi)
		p.Close()
	case shapeSquare:
		h := r * 0.886 // same area as the circle
		p.Move(vg.Point{X: pt.X - h, Y: pt.Y - h})
		p.Line(vg.Point{X: pt.X + h, Y: pt.Y - h})
		p.Line(vg.Point{X: pt.X + h, Y: pt.Y + h})
		p.Line(vg.Point{X: pt.X - h, Y: pt.Y + h})
		p.Close()
	case shapeTriangleUp, shapeTriangleDown:
		t := r * 1.3
		dir := vg.Length(1)
		if m.shape == shapeTriangleDown {
			dir = -1
		}
		p.Move(vg.Point{X: pt.X, Y: pt.Y + dir*t})
		p.Line(vg.Point{X: pt.X - t*0.866, Y: pt.Y - dir*t*0.5})
		p.Line(vg.Point{X: pt.X + t*0.866, Y: pt.Y - dir*t*0.5})
		p.Close()
	case shapeDiamond:
		d := r * 1.25
		p.Move(vg.Point{X: pt.X, Y: pt.Y + d})
		p.Line(vg.Point{X: pt.X + d, Y: pt.Y})
		p.Line(vg.Point{X: pt.X, Y: pt.Y - d})
		p.Line(vg.Point{X: pt.X - d, Y: pt.Y})
		p.Close()
	case shapePlus, shapeCross:
		c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(markerLine + 0.3)})
		l := r * 1.15
		a, b := vg.Point{X: l, Y: 0}, vg.Point{X: 0, Y: l}
		if m.shape == shapeCross {
			a, b = vg.Point{X: l * 0.8, Y: l * 0.8}, vg.Point{X: l * 0.8, Y: -l * 0.8}
		}
		for _, d := range []vg.Point{a, b} {
			var s vg.Path
			s.Move(vg.Point{X: pt.X - d.X, Y: pt.Y - d.Y})
			s.Line(vg.Point{X: pt.X + d.X, Y: pt.Y + d.Y})
			c.Stroke(s)
		}
		return
	}
	if m.open {
		c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(markerLine)})
		c.Stroke(p)
		return
	}
	c.Fill(p)
}
