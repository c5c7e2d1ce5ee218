package plots

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/vertebrae-eval/vertebrae/results"
)

// Format is an image format of the figure files.
type Format string

// The formats --plot-format offers. PDF is left out: gonum's PDF output
// carries a creation date and is not byte-stable.
const (
	SVG Format = "svg"
	PNG Format = "png"
)

// ParseFormats reads a --plot-format value: svg, png or both.
func ParseFormats(s string) ([]Format, error) {
	switch s {
	case "svg":
		return []Format{SVG}, nil
	case "png":
		return []Format{PNG}, nil
	case "both":
		return []Format{SVG, PNG}, nil
	}
	return nil, fmt.Errorf("plot format must be one of svg, png, both; got %q", s)
}

// File is one rendered figure file; Name is relative to the plots
// directory, so the caller writes the set atomically (SPEC §6.1).
type File struct {
	Name string
	Data []byte
}

// Figure is one figure of SPEC §5.8, ready to render.
type Figure struct {
	Name    string // file stem, e.g. "metrics_at_k"
	Title   string // short heading for the HTML report
	Caption string // what the figure shows, for the HTML report

	w, h    vg.Length
	minFont vg.Length // size of the smallest text (defaultMinFont when 0)
	draw    func(dc draw.Canvas) error
}

// defaultMinFont is the smallest text of most figures: tick labels and
// legend entries (newPlot).
const defaultMinFont = 10

// Size is the figure's size in points (1/72 inch; an SVG viewer shows a
// point as 4/3 CSS pixels).
func (f Figure) Size() (w, h vg.Length) { return f.w, f.h }

// LegibleWidth is the narrowest width, in CSS pixels, at which the
// figure's smallest text is still minTextPx CSS pixels high when the
// figure is scaled down to fit (never more than its natural width).
func (f Figure) LegibleWidth(minTextPx float64) float64 {
	font := f.minFont
	if font <= 0 {
		font = vg.Points(defaultMinFont)
	}
	natural := f.w.Points() * 4 / 3
	return min(natural, f.w.Points()*minTextPx/font.Points())
}

// pngDPI renders PNG files at twice the 96 dpi of a screen, sharp on
// high-density displays and in print.
const pngDPI = 192

// Render returns every figure that applies to b in each requested format,
// in figure order, each format's files in the order of formats.
func Render(b *results.Benchmark, formats []Format) ([]File, error) {
	figs, err := Figures(b)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, f := range figs {
		for _, format := range formats {
			var data []byte
			switch format {
			case SVG:
				data, err = f.SVG()
			case PNG:
				data, err = f.PNG()
			default:
				err = fmt.Errorf("unknown plot format %q", format)
			}
			if err != nil {
				return nil, err
			}
			files = append(files, File{Name: f.Name + "." + string(format), Data: data})
		}
	}
	return files, nil
}

// Figures lists the figures that apply to b: metrics_at_k,
// per_query_<primary metric>, margins (when any query has a margin),
// compression_frontier (when compression variants exist), comparison
// (when b holds a comparison section) and comparison_matrix (when the
// reports show the comparison as a pairwise matrix: an "all" family of more
// than results.MatrixAbove results).
func Figures(b *results.Benchmark) ([]Figure, error) {
	rs, err := newResultSet(b)
	if err != nil {
		return nil, err
	}
	if len(rs.results) == 0 {
		return nil, nil
	}
	var figs []Figure
	for _, build := range []func(*resultSet) (*Figure, error){
		metricsAtK, perQuery, margins, compressionFrontier, comparison, comparisonMatrix,
	} {
		f, err := build(rs)
		if err != nil {
			return nil, err
		}
		if f != nil {
			figs = append(figs, *f)
		}
	}
	return figs, nil
}

// SVG renders the figure as a standalone SVG document.
func (f Figure) SVG() ([]byte, error) {
	c := vgsvg.New(f.w, f.h)
	if err := f.render(c); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("figure %s: %w", f.Name, err)
	}
	return fontFallbacks(buf.Bytes()), nil
}

// PNG renders the figure as a PNG image at pngDPI.
func (f Figure) PNG() ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(f.w, f.h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	if err := f.render(c); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("figure %s: %w", f.Name, err)
	}
	return buf.Bytes(), nil
}

// render draws the figure on c. gonum/plot reports some impossible
// layouts by panicking; they become errors here so no input can crash
// the CLI.
func (f Figure) render(c vg.CanvasSizer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("figure %s: %v", f.Name, r)
		}
	}()
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	if err := f.draw(dc); err != nil {
		return fmt.Errorf("figure %s: %w", f.Name, err)
	}
	return nil
}

// sans is the typeface of every text: Liberation Sans is embedded in
// gonum/plot (text widths are measured with it) and metric-compatible
// with Arial and Helvetica, the fallbacks fontFallbacks names.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// fontFallbacks lets a viewer without Liberation Sans use a
// metric-compatible face instead of a serif default, so labels keep the
// widths the layout measured. The SVG references no font file.
func fontFallbacks(svg []byte) []byte {
	return bytes.ReplaceAll(svg, []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
}

// newPlot returns a plot with every text in the sans face at sizes that
// stay legible when the figure is shown at 100 %.
func newPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = font.From(sans, 12)
	p.Title.Padding = vg.Points(6)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sans, 11)
		ax.Tick.Label.Font = font.From(sans, 10)
		ax.Padding = vg.Points(3)
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	p.Legend.TextStyle.Font = font.From(sans, 10)
	return p
}

// palette holds 12 colours that stay apart on white (CIE76 ΔE ≥ 26
// between any two): Okabe and Ito's colour-blind-safe set (yellow left
// out: it vanishes on white), then Paul Tol's wine, olive and indigo, a
// brown and a grey. A result keeps its colour in every figure: colour
// i mod 12 belongs to the i-th result in run order.
var palette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xFF}, // blue
	{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xFF}, // orange
	{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	{0x00, 0x00, 0x00, 0xFF}, // black
	{0x88, 0x22, 0x55, 0xFF}, // wine
	{0x99, 0x99, 0x33, 0xFF}, // olive
	{0x33, 0x22, 0x88, 0xFF}, // indigo
	{0x8C, 0x51, 0x0A, 0xFF}, // brown
	{0x88, 0x88, 0x88, 0xFF}, // grey
}

// markers give each result a marker shape as well, so lines stay apart in
// grey-scale print and results past the 12th (whose colour repeats) still
// differ: result i gets marker (i + ⌊i/12⌋) mod 12, so two results of one
// colour never share a marker among the first 144.
var markers = []marker{
	{shape: shapeCircle}, {shape: shapeSquare}, {shape: shapeTriangleUp}, {shape: shapeDiamond},
	{shape: shapeTriangleDown}, {shape: shapePlus},
	{shape: shapeCircle, open: true}, {shape: shapeSquare, open: true}, {shape: shapeTriangleUp, open: true},
	{shape: shapeDiamond, open: true}, {shape: shapeTriangleDown, open: true}, {shape: shapeCross},
}

// dashes vary once the colours repeat.
var dashes = [][]vg.Length{nil, {vg.Points(5), vg.Points(2)}, {vg.Points(1), vg.Points(2)}}

// styleOf returns the colour, marker and dash indices of the i-th result
// in run order.
func styleOf(i int) (colour, mark, dash int) {
	return i % len(palette), (i%len(markers) + i/len(palette)) % len(markers), (i / len(palette)) % len(dashes)
}

// maxLabelRunes bounds a result name in a figure; longer names keep their
// start and end (where variant suffixes such as "[pca_16]" sit) around an
// ellipsis, so legends and axes never overflow. Tables keep full names.
const maxLabelRunes = 40

func label(name string) string {
	name = strings.Join(strings.Fields(name), " ") // no line breaks in a figure
	r := []rune(name)
	if len(r) <= maxLabelRunes {
		return name
	}
	head := (maxLabelRunes - 1) / 2
	tail := maxLabelRunes - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// errNoForward reports a result that cannot be drawn.
var errNoForward = errors.New("has no forward score result")

// Colors maps each result name of b to the colour its figures draw it in
// ("#rrggbb"), so tables can key their rows to the figures.
func Colors(b *results.Benchmark) map[string]string {
	out := make(map[string]string, len(b.ExtractorResults))
	for i, r := range b.ExtractorResults {
		ci, _, _ := styleOf(i)
		c := palette[ci]
		out[r.Name] = fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
	}
	return out
}
