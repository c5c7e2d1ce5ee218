package plots

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// atKFamilies are the panels of metrics_at_k.svg in SPEC §5.8 order.
var atKFamilies = []string{"recall", "hit_rate", "ndcg", "precision"}

// metricsAtK draws one panel per metric family: the forward mean value
// against k on a log-scaled axis, one line per result.
func metricsAtK(rs *resultSet) (*Figure, error) {
	ks := cutoffs(rs)
	if len(ks) == 0 {
		return nil, nil
	}
	items, err := resultItems(rs.ranked, true)
	if err != nil {
		return nil, err
	}
	legend := legendStrip{items: items, top: vg.Points(28)}
	legendW := legend.width()
	fig := &Figure{
		Name:  "metrics_at_k",
		Title: "Metrics at k",
		Caption: "Mean recall@k, hit_rate@k, ndcg@k and precision@k over the queries (forward direction) " +
			"against the cut-off k on a log scale; one line per result.",
		w: vg.Inch*7.5 + legendW, h: max(vg.Inch*5.6, legend.height()),
	}
	fig.draw = func(dc draw.Canvas) error {
		plots := make([][]*plot.Plot, 2)
		for i, fam := range atKFamilies {
			p := newPlot()
			p.Title.Text = fam + "@k"
			p.X.Label.Text = "k (log scale)"
			p.Y.Label.Text = "mean " + fam + "@k"
			p.X.Scale = plot.LogScale{}
			ticks := make([]plot.Tick, len(ks))
			for j, k := range ks {
				ticks[j] = plot.Tick{Value: float64(k), Label: strconv.Itoa(k)}
			}
			p.X.Tick.Marker = plot.ConstantTicks(ticks)
			grid := plotter.NewGrid()
			grid.Vertical.Color = lightGrey
			grid.Horizontal.Color = lightGrey
			p.Add(grid)
			ymin, ymax := math.Inf(1), math.Inf(-1)
			for _, s := range rs.results {
				pts := make(plotter.XYs, 0, len(ks))
				for _, k := range ks {
					v, ok := s.r.Forward.Metrics.Get(fam + "@" + strconv.Itoa(k))
					if !ok {
						continue
					}
					pts = append(pts, plotter.XY{X: float64(k), Y: v})
					ymin, ymax = min(ymin, v), max(ymax, v)
				}
				if len(pts) == 0 {
					continue
				}
				line, scatter, err := plotter.NewLinePoints(pts)
				if err != nil {
					return err
				}
				line.LineStyle = s.lineStyle()
				scatter.GlyphStyle = s.glyphStyle()
				p.Add(line, scatter)
			}
			p.X.Min, p.X.Max = float64(ks[0])/1.3, float64(ks[len(ks)-1])*1.3
			p.Y.Min, p.Y.Max = padRange(ymin, ymax, 0, 1)
			plots[i/2] = append(plots[i/2], p)
		}
		main := draw.Crop(dc, 0, -legendW, 0, 0)
		tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Points(18), PadY: vg.Points(14),
			PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
		canvases := plot.Align(plots, tiles, main)
		for r := range plots {
			for c := range plots[r] {
				plots[r][c].Draw(canvases[r][c])
			}
		}
		legend.draw(dc)
		return nil
	}
	return fig, nil
}

// cutoffs returns the sorted distinct k of the forward metric keys
// "<family>@<k>" of every result.
func cutoffs(rs *resultSet) []int {
	var ks []int
	for _, s := range rs.results {
		for _, key := range s.r.Forward.Metrics.Keys {
			fam, kText, ok := strings.Cut(key, "@")
			if !ok || !slices.Contains(atKFamilies, fam) {
				continue
			}
			if k, err := strconv.Atoi(kText); err == nil && k > 0 && !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
	}
	slices.Sort(ks)
	return ks
}

// padRange widens [lo, hi] by 8 % on each side (a fixed span when the
// values are equal), kept within [floor, ceil].
func padRange(lo, hi, floor, ceil float64) (float64, float64) {
	if lo > hi { // no values
		return floor, ceil
	}
	pad := (hi - lo) * 0.08
	if pad < 1e-9 {
		pad = max(math.Abs(hi)*0.05, 0.01)
	}
	return max(lo-pad, floor), min(hi+pad, ceil)
}
