package stats

import (
	"errors"
	"math"
)

// ErrEmpty is returned for an empty sample.
var ErrEmpty = errors.New("stats: empty sample")

// ErrLength is returned when paired samples differ in length.
var ErrLength = errors.New("stats: paired samples differ in length")

// Mean is the sum of x in index order divided by len(x) (0 for an empty
// x): the aggregation of SPEC §4.6, so a comparison's means equal the
// report's metrics bit for bit.
func Mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// StdDev is the sample standard deviation (n − 1 denominator, two-pass
// about the mean); 0 when len(x) < 2.
func StdDev(x []float64) float64 {
	return math.Sqrt(variance(x, Mean(x)))
}

func variance(x []float64, mean float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var s float64
	for _, v := range x {
		d := v - mean
		s += float64(d * d) // the conversion forbids FMA fusion (SPEC §4.2)
	}
	return s / float64(len(x)-1)
}

// Differences returns a_i − b_i.
func Differences(a, b []float64) ([]float64, error) {
	if len(a) != len(b) {
		return nil, ErrLength
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d, nil
}

// EffectSize is mean(d)/sd(d), the standardised mean difference of paired
// values; ok is false when sd(d) = 0 (the ratio does not exist).
func EffectSize(d []float64) (es float64, ok bool) {
	sd := StdDev(d)
	if sd == 0 {
		return 0, false
	}
	return Mean(d) / sd, true
}

// normalCDF is Φ(x).
func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
