package plots

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Fills of the matrix cells: the row result significantly better (a light
// tint of the palette's blue), significantly worse (of its vermillion),
// the diagonal; cells that are not significant stay white.
var (
	betterFill = color.RGBA{0xD6, 0xE9, 0xF5, 0xFF}
	worseFill  = color.RGBA{0xF7, 0xDD, 0xCC, 0xFF}
	diagFill   = color.RGBA{0xEE, 0xEE, 0xEE, 0xFF}
	betterMark = color.RGBA{0x00, 0x72, 0xB2, 0xFF}
	worseMark  = color.RGBA{0xD5, 0x5E, 0x00, 0xFF}
)

// matrixNumbersUpTo is the largest matrix whose cells carry their
// difference as text; larger ones show the colours and marks only.
const matrixNumbersUpTo = 16

// keyLetter names ranked position i as the reports do: a, b, …, z, then
// 27, 28, ….
func keyLetter(i int) string {
	if i < 26 {
		return string(rune('a' + i))
	}
	return strconv.Itoa(i + 1)
}

// comparisonMatrix draws comparison_matrix.svg when the reports show the
// primary metric's comparison (forward) as a pairwise significance matrix
// (an "all" family of more than results.MatrixAbove results): rows and
// columns are the compared results in ranked order, each cell the mean
// per-query difference row − column, tinted and marked with a triangle
// when the pair is significant after Holm adjustment (▲ row better, ▼ row
// worse).
func comparisonMatrix(rs *resultSet) (*Figure, error) {
	c, block := rs.primaryForward()
	if c == nil {
		return nil, nil
	}
	if block == nil || !c.ShowsMatrix(block) {
		return nil, nil
	}
	in := map[string]bool{}
	for _, r := range block.Results {
		in[r.Name] = true
	}
	var rows []series
	var keys []string
	for i, s := range rs.ranked {
		if in[s.r.Name] {
			rows = append(rows, s)
			keys = append(keys, keyLetter(i))
		}
	}
	if len(rows) != len(block.Results) {
		return nil, fmt.Errorf("plots: the comparison names a result the report does not hold")
	}
	names := make([]string, len(rows))
	for i, s := range rows {
		names[i] = s.r.Name
	}
	cells := block.Matrix(names)
	for i := range cells {
		for j, cell := range cells[i] {
			if math.IsNaN(cell.Diff) || math.IsInf(cell.Diff, 0) {
				return nil, fmt.Errorf("plots: comparison of %q and %q has a non-finite value", names[i], names[j])
			}
		}
	}

	n := len(rows)
	base := newPlot()
	labelSty := base.Y.Tick.Label
	labelSty.Font = font.From(sans, 10)
	cellSty := labelSty
	cellSty.Font = font.From(sans, 8.5)
	titleSty := base.Title.TextStyle
	numbers := n <= matrixNumbersUpTo
	cw, ch := vg.Points(44), vg.Points(20)
	if !numbers {
		cw, ch = vg.Points(18), vg.Points(16)
	}
	rowLabelW := vg.Length(0)
	rowLabels := make([]string, n)
	for i, s := range rows {
		rowLabels[i] = keys[i] + "  " + s.label
		rowLabelW = max(rowLabelW, labelSty.Width(rowLabels[i]))
	}
	const pad = 8
	title := "difference in " + rs.primary + " (row − column)"
	legend := []struct {
		fill color.Color
		up   *bool
		text string
	}{
		{betterFill, ptr(true), "row significantly better"},
		{worseFill, ptr(false), "row significantly worse"},
		{color.White, nil, "not significant"},
	}
	legendW := vg.Length(0)
	for _, l := range legend {
		legendW += vg.Points(14) + labelSty.Width(l.text) + vg.Points(16)
	}
	gridW := vg.Length(n) * cw
	w := max(vg.Points(pad)+rowLabelW+vg.Points(pad)+gridW, legendW, titleSty.Width(title)) + vg.Points(2*pad)
	titleH := titleSty.Height(title) + vg.Points(8)
	headH := vg.Points(18)
	legendH := vg.Points(28)
	h := vg.Points(pad) + titleH + headH + vg.Length(n)*ch + legendH + vg.Points(pad)

	fig := &Figure{
		Name:  "comparison_matrix",
		Title: "Pairwise significance matrix",
		Caption: fmt.Sprintf("Mean per-query difference in %s (forward) of the row result minus the column result, "+
			"every pair of the %d compared results (keys as in the ranking). Tinted cells with a triangle are significant after "+
			"Holm adjustment over the %d pairs (%s test, α = %g): pointing up, the row result is better; down, worse.",
			rs.primary, n, len(block.Pairs), c.Settings.Test, c.Settings.Alpha),
		w: w, h: h,
	}
	if numbers {
		fig.minFont = vg.Points(8.5)
	}
	fig.draw = func(dc draw.Canvas) error {
		top := dc.Max.Y - vg.Points(pad)
		left := dc.Min.X + vg.Points(pad)
		tsty := titleSty
		tsty.XAlign, tsty.YAlign = text.XLeft, text.YTop
		dc.FillText(tsty, vg.Point{X: left, Y: top}, title)
		top -= titleH
		gridX := left + rowLabelW + vg.Points(pad)
		hsty := labelSty
		hsty.XAlign, hsty.YAlign = text.XCenter, text.YBottom
		for j := range rows {
			dc.FillText(hsty, vg.Point{X: gridX + (vg.Length(j)+0.5)*cw, Y: top - headH + vg.Points(4)}, keys[j])
		}
		top -= headH
		rsty := labelSty
		rsty.XAlign, rsty.YAlign = text.XLeft, text.YCenter
		csty := cellSty
		csty.XAlign, csty.YAlign = text.XCenter, text.YCenter
		grid := draw.LineStyle{Color: lightGrey, Width: vg.Points(0.5)}
		for i := range rows {
			y0 := top - vg.Length(i+1)*ch
			dc.FillText(rsty, vg.Point{X: left, Y: y0 + ch/2}, rowLabels[i])
			for j := range rows {
				x0 := gridX + vg.Length(j)*cw
				cell := cells[i][j]
				fill := color.Color(color.White)
				var up *bool
				switch {
				case i == j:
					fill = diagFill
				case cell.OK && cell.Significant && cell.Diff > 0:
					fill, up = betterFill, ptr(true)
				case cell.OK && cell.Significant && cell.Diff < 0:
					fill, up = worseFill, ptr(false)
				}
				rect := []vg.Point{{X: x0, Y: y0}, {X: x0 + cw, Y: y0}, {X: x0 + cw, Y: y0 + ch}, {X: x0, Y: y0 + ch}}
				dc.FillPolygon(fill, rect)
				dc.StrokeLines(grid, append(rect, rect[0]))
				if up != nil {
					triangle(dc, vg.Point{X: x0 + vg.Points(6), Y: y0 + ch/2}, *up)
				}
				if numbers && i != j && cell.OK {
					dc.FillText(csty, vg.Point{X: x0 + cw/2 + vg.Points(4), Y: y0 + ch/2}, signed3(cell.Diff))
				}
			}
		}
		// Legend under the grid.
		y := top - vg.Length(n)*ch - legendH/2 - vg.Points(2)
		x := left
		lsty := labelSty
		lsty.XAlign, lsty.YAlign = text.XLeft, text.YCenter
		for _, l := range legend {
			box := []vg.Point{{X: x, Y: y - vg.Points(5)}, {X: x + vg.Points(10), Y: y - vg.Points(5)}, {X: x + vg.Points(10), Y: y + vg.Points(5)}, {X: x, Y: y + vg.Points(5)}}
			dc.FillPolygon(l.fill, box)
			dc.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 0x90}, Width: vg.Points(0.5)}, append(box, box[0]))
			if l.up != nil {
				triangle(dc, vg.Point{X: x + vg.Points(5), Y: y}, *l.up)
			}
			x += vg.Points(14)
			dc.FillText(lsty, vg.Point{X: x, Y: y}, l.text)
			x += labelSty.Width(l.text) + vg.Points(16)
		}
		return nil
	}
	return fig, nil
}

func ptr[T any](v T) *T { return &v }

// triangle draws the significance mark centred at c: pointing up (row
// better) in blue, down (row worse) in vermillion, so the sign survives
// grey-scale print.
func triangle(dc draw.Canvas, c vg.Point, up bool) {
	r := vg.Points(3.5)
	col, dy := color.Color(betterMark), r
	if !up {
		col, dy = worseMark, -r
	}
	dc.FillPolygon(col, []vg.Point{{X: c.X - r, Y: c.Y - dy*0.8}, {X: c.X + r, Y: c.Y - dy*0.8}, {X: c.X, Y: c.Y + dy}})
}

// signed3 writes a difference with 3 decimals and its sign ("+0.125",
// "-0.050", "0.000").
func signed3(d float64) string {
	s := strconv.FormatFloat(d, 'f', 3, 64)
	switch s {
	case "0.000", "-0.000":
		return "0.000"
	}
	if d > 0 {
		return "+" + s
	}
	return s
}
