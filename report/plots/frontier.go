package plots

import (
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/vertebrae-eval/vertebrae/compress"
)

// frontierPoint is one result on the compression frontier.
type frontierPoint struct {
	s          series
	bytes      float64
	score      float64
	compressed bool
	base       string // extractor the variant belongs to
}

// frontierPoints are the points of the compression frontier, in run order,
// and whether any result is a compression variant. A point's x is
// compress.GalleryBytes, the "gallery bytes" of the report's compression
// table (bytes as stored by the method; the float32 baseline for
// uncompressed results, whatever the source dtype).
func frontierPoints(rs *resultSet) (pts []frontierPoint, anyCompressed bool) {
	for _, s := range rs.results {
		md := s.r.CompressionMetadata
		method, _ := md["method"].(string)
		compressed := method != "" && method != "none"
		anyCompressed = anyCompressed || compressed
		nGallery := 0
		if s.r.Forward != nil {
			nGallery = s.r.Forward.Metadata.NGallery
		}
		bytes, ok := compress.GalleryBytes(md, nGallery)
		if !ok {
			continue
		}
		pts = append(pts, frontierPoint{s: s, bytes: float64(bytes), score: s.r.PrimaryScore, compressed: compressed, base: variantBase(s.r.Name)})
	}
	return pts, anyCompressed
}

// compressionFrontier draws primary score against the gallery bytes (log
// scale), one marker per result in the result's colour and shape (as in
// every figure), uncompressed results ringed, a thin line joining the
// variants of one extractor. Only when some result is compressed.
func compressionFrontier(rs *resultSet) (*Figure, error) {
	pts, anyCompressed := frontierPoints(rs)
	if !anyCompressed || len(pts) == 0 {
		return nil, nil
	}
	legend := legendStrip{items: frontierLegend(rs.ranked, pts), top: vg.Points(12)}
	legendW := legend.width()
	fig := &Figure{
		Name:  "compression_frontier",
		Title: "Compression frontier",
		Caption: "Primary score against the gallery bytes of the compression table (log scale): the gallery as stored by each method " +
			"(int8/uint8: 1-byte codes plus per-dimension parameters; float16: 2 bytes per value); uncompressed results count float32, " +
			"4 bytes per value, whatever the source dtype. " +
			"Each result has its colour and marker of the other figures; a ring marks the uncompressed results; a grey line joins the variants of one extractor. " +
			"Uncompressed sparse galleries have no byte count in the report and are left out.",
		w: vg.Inch*6.5 + legendW, h: max(vg.Inch*4.2, legend.height()),
	}
	fig.draw = func(dc draw.Canvas) error {
		p := newPlot()
		p.X.Label.Text = "gallery bytes as stored (log scale)"
		p.Y.Label.Text = "primary score (" + rs.primary + ")"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = byteTicks{}
		grid := plotter.NewGrid()
		grid.Vertical.Color = lightGrey
		grid.Horizontal.Color = lightGrey
		p.Add(grid)
		// Join the points of each extractor.
		var bases []string
		byBase := map[string]plotter.XYs{}
		for _, pt := range pts {
			if _, ok := byBase[pt.base]; !ok {
				bases = append(bases, pt.base)
			}
			byBase[pt.base] = append(byBase[pt.base], plotter.XY{X: pt.bytes, Y: pt.score})
		}
		for _, base := range bases {
			if xy := byBase[base]; len(xy) > 1 {
				// Left to right, so the line traces quality against size.
				sort.SliceStable(xy, func(i, j int) bool { return xy[i].X < xy[j].X })
				l, err := plotter.NewLine(xy)
				if err != nil {
					return err
				}
				l.LineStyle = draw.LineStyle{Color: color.Gray{Y: 0xA0}, Width: vg.Points(1)}
				p.Add(l)
			}
		}
		xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, pt := range pts {
			sc, err := plotter.NewScatter(plotter.XYs{{X: pt.bytes, Y: pt.score}})
			if err != nil {
				return err
			}
			sc.GlyphStyle = frontierGlyph(pt.s)
			if !pt.compressed {
				ring, err := plotter.NewScatter(plotter.XYs{{X: pt.bytes, Y: pt.score}})
				if err != nil {
					return err
				}
				ring.GlyphStyle = uncompressedRing
				p.Add(ring)
			}
			p.Add(sc)
			xmin, xmax = min(xmin, pt.bytes), max(xmax, pt.bytes)
			ymin, ymax = min(ymin, pt.score), max(ymax, pt.score)
		}
		p.X.Min, p.X.Max = xmin/1.6, xmax*1.6
		p.Y.Min, p.Y.Max = padRange(ymin, ymax, 0, 1)
		p.Draw(draw.Crop(dc, vg.Points(4), -legendW, vg.Points(4), -vg.Points(8)))
		legend.draw(dc)
		return nil
	}
	return fig, nil
}

// frontierGlyph is a result's marker on the frontier (larger than on the
// lines of metrics_at_k: the points stand alone).
func frontierGlyph(s series) draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.color(), Radius: vg.Points(4.5), Shape: s.marker()}
}

// uncompressedRing circles the uncompressed results on the frontier.
var uncompressedRing = draw.GlyphStyle{Color: color.Gray{Y: 0x40}, Radius: vg.Points(8), Shape: marker{shape: shapeCircle, open: true}}

// frontierLegend names each drawn result by its colour and marker, then
// explains the ring.
func frontierLegend(entries []series, pts []frontierPoint) []legendItem {
	shown := map[string]bool{}
	for _, pt := range pts {
		shown[pt.s.r.Name] = true
	}
	var items []legendItem
	for _, s := range entries {
		if shown[s.r.Name] {
			items = append(items, legendItem{text: s.label, thumbs: []plot.Thumbnailer{glyphThumb{frontierGlyph(s)}}})
		}
	}
	grey := draw.GlyphStyle{Color: color.Gray{Y: 0x40}, Radius: vg.Points(3), Shape: marker{shape: shapeCircle}}
	ring := uncompressedRing
	ring.Radius = vg.Points(6)
	items = append(items,
		legendItem{text: "uncompressed (ringed)", thumbs: []plot.Thumbnailer{glyphThumb{ring, grey}}},
		legendItem{text: "compressed variant", thumbs: []plot.Thumbnailer{glyphThumb{grey}}})
	return items
}

// variantBase strips a SPEC §8.5 variant suffix "[…]".
func variantBase(name string) string {
	if strings.HasSuffix(name, "]") {
		if i := strings.LastIndex(name, "["); i > 0 {
			return name[:i]
		}
	}
	return name
}

// byteTicks labels a log-scaled byte axis at powers of ten in B, kB, MB,
// GB (decimal units), with minor ticks at 2× and 5×.
type byteTicks struct{}

func (byteTicks) Ticks(lo, hi float64) []plot.Tick {
	// Over a few decades, label the 2× and 5× ticks as well.
	labelAll := math.Log10(hi)-math.Log10(lo) <= 3
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for _, m := range []float64{1, 2, 5} {
			v := base * m
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || labelAll {
				t.Label = byteLabel(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

func byteLabel(v float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	i := 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + units[i]
}
