package plots

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// niceTicks places major ticks at whole multiples of a step of 1, 2 or 5
// × 10ⁿ (at most eight of them) and one minor tick between two majors, with
// labels of as many decimals as the step needs: 0.72, 0.76, 0.80 rather
// than gonum's default offsets such as 0.775, 0.875.
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	// The smallest step giving at most seven intervals.
	span := hi - lo
	step := math.Inf(1)
	for e := math.Floor(math.Log10(span)) - 2; math.IsInf(step, 1); e++ {
		for _, m := range []float64{1, 2, 5} {
			if s := m * math.Pow(10, e); span/s <= 7 {
				step = s
				break
			}
		}
	}
	decimals := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	var ticks []plot.Tick
	first := math.Ceil(lo/step - 1e-9)
	for i := first; i*step <= hi+step*1e-9; i++ {
		v := i * step
		if math.Abs(v) < step*1e-9 {
			v = 0 // no "-0"
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		if half := v + step/2; half <= hi {
			ticks = append(ticks, plot.Tick{Value: half})
		}
	}
	if first*step-step/2 >= lo { // minor tick below the first major
		ticks = append([]plot.Tick{{Value: first*step - step/2}}, ticks...)
	}
	return ticks
}
