package stats

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// PairedTTest is the two-sided paired Student's t-test of H0: mean(a − b)
// = 0, as scipy.stats.ttest_rel: t = mean(d) / (sd(d)/√n) with n − 1
// degrees of freedom, p = P(|T| ≥ |t|) = I_{ν/(ν+t²)}(ν/2, 1/2), the
// regularized incomplete beta function (gonum's mathext.RegIncBeta, a port
// of Cephes incbet, as scipy uses). Where scipy returns NaN the result is
// defined so reports stay finite: every d_i = 0 gives p = 1 (no
// difference, SPEC §13); n < 2 gives p = 1 (no evidence). When sd(d) = 0
// and mean(d) ≠ 0, |t| is infinite and p = 0, as scipy.
func PairedTTest(a, b []float64) (t, p float64, err error) {
	d, err := Differences(a, b)
	if err != nil {
		return 0, 0, err
	}
	return OneSampleTTest(d)
}

// OneSampleTTest is the two-sided t-test of H0: mean(d) = 0 over the
// differences d (see PairedTTest).
func OneSampleTTest(d []float64) (t, p float64, err error) {
	n := len(d)
	if n == 0 {
		return 0, 0, ErrEmpty
	}
	mean := Mean(d)
	if allZero(d) || n < 2 {
		return 0, 1, nil
	}
	v := variance(d, mean)
	if v == 0 {
		return math.Copysign(math.Inf(1), mean), 0, nil
	}
	t = mean / math.Sqrt(v/float64(n))
	df := float64(n - 1)
	p = mathext.RegIncBeta(df/2, 0.5, df/(df+float64(t*t)))
	return t, min(p, 1), nil
}

func allZero(d []float64) bool {
	for _, v := range d {
		if v != 0 {
			return false
		}
	}
	return true
}
