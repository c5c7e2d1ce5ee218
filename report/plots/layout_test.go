package plots

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/results"
)

// textBox is one string a figure drew, with its bounding box in figure
// coordinates (points, origin bottom left).
type textBox struct {
	text                   string
	minX, minY, maxX, maxY float64
}

// affine is a 2-D affine transform: x' = a·x + c·y + e, y' = b·x + d·y + f.
type affine struct{ a, b, c, d, e, f float64 }

func (m affine) mul(n affine) affine { // m then n in local coordinates: m·n
	return affine{
		a: m.a*n.a + m.c*n.b, b: m.b*n.a + m.d*n.b,
		c: m.a*n.c + m.c*n.d, d: m.b*n.c + m.d*n.d,
		e: m.a*n.e + m.c*n.f + m.e, f: m.b*n.e + m.d*n.f + m.f,
	}
}

func (m affine) apply(x, y float64) (float64, float64) {
	return m.a*x + m.c*y + m.e, m.b*x + m.d*y + m.f
}

// recorder is a vg.CanvasSizer that draws nothing and records where every
// string lands, measured with the font face the figure uses (the same
// metrics the SVG's Liberation Sans has in a browser).
type recorder struct {
	w, h  vg.Length
	m     affine
	stack []affine
	texts []textBox
}

func newRecorder(w, h vg.Length) *recorder {
	return &recorder{w: w, h: h, m: affine{a: 1, d: 1}}
}

func (r *recorder) Size() (vg.Length, vg.Length)        { return r.w, r.h }
func (r *recorder) SetLineWidth(vg.Length)              {}
func (r *recorder) SetLineDash([]vg.Length, vg.Length)  {}
func (r *recorder) SetColor(color.Color)                {}
func (r *recorder) Stroke(vg.Path)                      {}
func (r *recorder) Fill(vg.Path)                        {}
func (r *recorder) DrawImage(vg.Rectangle, image.Image) {}
func (r *recorder) Push()                               { r.stack = append(r.stack, r.m) }
func (r *recorder) Pop() {
	r.m = r.stack[len(r.stack)-1]
	r.stack = r.stack[:len(r.stack)-1]
}
func (r *recorder) Rotate(rad float64) {
	s, c := math.Sincos(rad)
	r.m = r.m.mul(affine{a: c, b: s, c: -s, d: c})
}
func (r *recorder) Translate(pt vg.Point) {
	r.m = r.m.mul(affine{a: 1, d: 1, e: pt.X.Points(), f: pt.Y.Points()})
}
func (r *recorder) Scale(x, y float64) { r.m = r.m.mul(affine{a: x, d: y}) }

func (r *recorder) FillString(f font.Face, pt vg.Point, s string) {
	ext := f.Extents()
	x0, x1 := pt.X.Points(), (pt.X + f.Width(s)).Points()
	y0, y1 := (pt.Y - ext.Descent).Points(), (pt.Y + ext.Ascent).Points()
	b := textBox{text: s, minX: math.Inf(1), minY: math.Inf(1), maxX: math.Inf(-1), maxY: math.Inf(-1)}
	for _, p := range [][2]float64{{x0, y0}, {x1, y0}, {x0, y1}, {x1, y1}} {
		x, y := r.m.apply(p[0], p[1])
		b.minX, b.maxX = min(b.minX, x), max(b.maxX, x)
		b.minY, b.maxY = min(b.minY, y), max(b.maxY, y)
	}
	r.texts = append(r.texts, b)
}

// drawnTexts renders f on a recorder and returns its strings' boxes.
func drawnTexts(t *testing.T, f Figure) []textBox {
	t.Helper()
	rec := newRecorder(f.w, f.h)
	if err := f.render(rec); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	return rec.texts
}

// checkTextInside fails for every string that reaches outside the figure,
// where an SVG viewer or PNG clips it (legend entries such as
// "compressed varia"), and returns the boxes.
func checkTextInside(t *testing.T, what string, f Figure) []textBox {
	t.Helper()
	const tol = 0.01
	texts := drawnTexts(t, f)
	w, h := f.w.Points(), f.h.Points()
	for _, b := range texts {
		if b.minX < -tol || b.minY < -tol || b.maxX > w+tol || b.maxY > h+tol {
			t.Errorf("%s, %s: text %q at x %.1f…%.1f, y %.1f…%.1f is clipped by the %.1f × %.1f pt figure",
				what, f.Name, b.text, b.minX, b.maxX, b.minY, b.maxY, w, h)
		}
	}
	return texts
}

// Every string of every figure lies inside the figure: legends are sized
// to their longest entry ("compressed variant" next to one-letter
// names, 40-character names, 30 results), axes to their labels.
func TestNoClippedText(t *testing.T) {
	name40 := "sentence-transformers/all-MiniLM-L6-v2-x" // 40 characters: shown in full
	if len([]rune(name40)) != maxLabelRunes || label(name40) != name40 {
		t.Fatalf("%q is not a %d-character label", name40, maxLabelRunes)
	}
	cases := map[string]*results.Benchmark{"fakeBenchmark": fakeBenchmark(t)}

	// Names shorter than the frontier key's texts.
	short := frontierBenchmark(t, matrix.Float32, false)
	for i, r := range short.ExtractorResults {
		r.Name = "m" + []string{"", "[p]", "[q]", "[h]"}[i]
	}
	if err := short.Finalize(); err != nil {
		t.Fatal(err)
	}
	cases["short names"] = short

	long := fakeBenchmark(t)
	long.ExtractorResults[3].Name = name40
	long.ExtractorResults = append(long.ExtractorResults, fakeResult(name40+"[quantize_int8]", 0.65, "quantize", 64, 1000*64+64*8))
	long.Comparison = nil
	if err := long.Finalize(); err != nil {
		t.Fatal(err)
	}
	cases["40-character names"] = long

	many := fakeBenchmark(t)
	for i := range 25 {
		many.ExtractorResults = append(many.ExtractorResults, fakeResult(fmt.Sprintf("extra-%02d", i), 0.5+float64(i)/100, "none", 8, 0))
	}
	many.Comparison = nil
	if err := many.Finalize(); err != nil {
		t.Fatal(err)
	}
	cases["30 results"] = many
	cases["12 compared"] = twelveCompared(t)

	for what, b := range cases {
		figs, err := Figures(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range figs {
			texts := checkTextInside(t, what, f)
			if f.Name != "compression_frontier" && f.Name != "metrics_at_k" {
				continue
			}
			// The legend names every result in full (up to the label length)
			// and, on the frontier, explains the ring.
			want := []string{}
			for _, r := range b.ExtractorResults {
				want = append(want, label(r.Name))
			}
			if f.Name == "compression_frontier" {
				want = append(want, "uncompressed (ringed)", "compressed variant")
			}
			for _, w := range want {
				found := false
				for _, tb := range texts {
					found = found || tb.text == w
				}
				if !found {
					t.Errorf("%s, %s: legend lacks %q", what, f.Name, w)
				}
			}
		}
	}
}

// The legend strip is as wide as its longest entry needs and no wider
// than that plus its margins.
func TestLegendStripWidth(t *testing.T) {
	l := newLegend()
	for _, longest := range []string{"compressed variant", strings.Repeat("M", maxLabelRunes), "x"} {
		s := legendStrip{items: []legendItem{{text: "x"}, {text: longest}}}
		need := l.ThumbnailWidth + l.TextStyle.Width(" "+longest)
		if got := s.width(); got < need+2*vg.Points(legendMargin) || got > need+2*vg.Points(legendMargin)+vg.Points(1) {
			t.Errorf("%q: strip %v, need %v", longest, got, need)
		}
	}
}

// Twelve results get twelve colours at least ΔE 20 apart (CIE76) and,
// past the twelfth, each result sharing a colour differs by its marker;
// every figure takes a result's colour from the same place as the tables.
func TestPaletteAndMarkers(t *testing.T) {
	if len(palette) < 12 || len(markers) < 12 {
		t.Fatalf("%d colours, %d markers", len(palette), len(markers))
	}
	for i := range palette {
		for j := i + 1; j < len(palette); j++ {
			if d := deltaE(palette[i], palette[j]); d < 20 {
				t.Errorf("colours %d and %d are ΔE %.1f apart", i, j, d)
			}
		}
	}
	type style struct{ c, m int }
	seen := map[style]int{}
	for i := range 144 {
		c, m, _ := styleOf(i)
		if j, ok := seen[style{c, m}]; ok {
			t.Fatalf("results %d and %d share colour %d and marker %d", j, i, c, m)
		}
		seen[style{c, m}] = i
		if i < 12 && c != i {
			t.Errorf("result %d has colour %d", i, c)
		}
	}
	for i := range markers {
		for j := i + 1; j < len(markers); j++ {
			if markers[i] == markers[j] {
				t.Errorf("markers %d and %d are equal", i, j)
			}
		}
	}
	b := fakeBenchmark(t)
	for i := range 10 {
		b.ExtractorResults = append(b.ExtractorResults, fakeResult(fmt.Sprintf("extra-%02d", i), 0.5, "none", 8, 0))
	}
	colors := Colors(b)
	seenColor := map[string]string{}
	for i, r := range b.ExtractorResults {
		c := colors[r.Name]
		if i < 12 {
			if other, ok := seenColor[c]; ok {
				t.Errorf("%s and %s share %s", other, r.Name, c)
			}
			seenColor[c] = r.Name
		}
		rs, err := newResultSet(b)
		if err != nil {
			t.Fatal(err)
		}
		cr, cg, cb, _ := rs.results[i].color().RGBA()
		if got := fmt.Sprintf("#%02x%02x%02x", cr>>8, cg>>8, cb>>8); got != c {
			t.Errorf("%s: table colour %s, figure colour %s", r.Name, c, got)
		}
	}
}

// deltaE is the CIE76 distance of two sRGB colours in CIELAB (D65).
func deltaE(p, q color.RGBA) float64 {
	lab := func(c color.RGBA) [3]float64 {
		lin := func(v uint8) float64 {
			x := float64(v) / 255
			if x <= 0.04045 {
				return x / 12.92
			}
			return math.Pow((x+0.055)/1.055, 2.4)
		}
		r, g, b := lin(c.R), lin(c.G), lin(c.B)
		x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
		y := 0.2126*r + 0.7152*g + 0.0722*b
		z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
		f := func(t float64) float64 {
			if t > 0.008856 {
				return math.Cbrt(t)
			}
			return 7.787*t + 16.0/116
		}
		return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
	}
	a, b := lab(p), lab(q)
	return math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2]))
}

// A figure scaled down to its legible width still shows its smallest text
// at the requested size.
func TestLegibleWidth(t *testing.T) {
	figs, err := Figures(twelveCompared(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figs {
		w, _ := f.Size()
		natural := w.Points() * 4 / 3
		lw := f.LegibleWidth(9)
		smallest := math.Inf(1)
		rec := newRecorder(f.w, f.h)
		if err := f.render(&fontRecorder{recorder: rec, sizes: &smallest}); err != nil {
			t.Fatal(err)
		}
		// Rendered at lw CSS px the smallest text is smallest pt × 4/3 × lw/natural px.
		if px := smallest * 4 / 3 * lw / natural; px < 9-1e-9 && lw < natural {
			t.Errorf("%s: at %.0f px its %.1f pt text is %.2f px", f.Name, lw, smallest, px)
		}
		if lw > natural+1e-9 {
			t.Errorf("%s: legible width %.0f above natural %.0f", f.Name, lw, natural)
		}
	}
}

// fontRecorder notes the smallest font size drawn.
type fontRecorder struct {
	*recorder
	sizes *float64
}

func (r *fontRecorder) FillString(f font.Face, pt vg.Point, s string) {
	*r.sizes = min(*r.sizes, f.Font.Size.Points())
	r.recorder.FillString(f, pt, s)
}
