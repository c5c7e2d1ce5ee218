package stats

import (
	"context"
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

// The BCa bias correction z0 = Φ⁻¹(c/2B) with the mid-rank count
// c = 2·#below + #equal (SPEC §13), clamped to [1, 2B − 1].
func TestMidRankZ0(t *testing.T) {
	for _, c := range []struct {
		c, B int
		want float64
	}{
		{4, 4, 0}, // half below, or all equal: no bias
		{2, 4, mathext.NormalQuantile(0.25)},
		{6, 4, -mathext.NormalQuantile(0.25)},
		{0, 4, mathext.NormalQuantile(0.125)}, // clamped to 1/2B
		{8, 4, -mathext.NormalQuantile(0.125)},
		{1, 1000, mathext.NormalQuantile(0.0005)},
		{1999, 1000, -mathext.NormalQuantile(0.0005)},
		{1000, 1000, 0},
		{1001, 1000, -mathext.NormalQuantile(999.0 / 2000)},
	} {
		if got := midRankZ0(c.c, c.B); got != c.want {
			t.Errorf("midRankZ0(%d, %d) = %.17g, want %.17g", c.c, c.B, got, c.want)
		}
	}
	for B := 1; B <= 300; B++ {
		for c := 0; c <= 2*B; c++ {
			if a, b := midRankZ0(c, B), midRankZ0(2*B-c, B); a != -b {
				t.Fatalf("midRankZ0(%d, %d) = %v, midRankZ0(%d, %d) = %v: not exactly opposite", c, B, a, 2*B-c, B, b)
			}
		}
	}
}

// Hand-computed: x = (0, 1) and the four resamples (0,0), (0,1), (1,0),
// (1,1) have means 0, ½, ½, 1 and θ̂ = ½: one below, two equal, so the
// mid-rank is (2·1 + 2)/8 = ½ and z0 = 0; the jackknife means (1, 0) are
// symmetric, so a = 0. BCa then equals the percentile interval, the
// quantiles at 0.025 and 0.975 of (0, ½, ½, 1): positions 0.075 and 2.925,
// that is 0.0375 and 0.9625. Counting ties as "not below" (z0 = Φ⁻¹(¼))
// gave about [0.0007, 0.595] instead.
func TestBootstrapBCaTiesCountHalf(t *testing.T) {
	idx := [][]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}}
	for _, m := range []CIMethod{BCa, Percentile} {
		iv, err := BootstrapMeanIndices([]float64{0, 1}, 0.95, m, idx)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(iv.Low-0.0375) > 1e-12 || math.Abs(iv.High-0.9625) > 1e-12 {
			t.Errorf("%s: [%.17g, %.17g], want [0.0375, 0.9625]", m, iv.Low, iv.High)
		}
	}
	// Every resample mean equals θ̂ (an odd mass at the estimate): z0 = 0.
	iv, err := BootstrapMeanIndices([]float64{0, 1}, 0.95, BCa, [][]int{{0, 1}, {1, 0}, {0, 1}})
	if err != nil || iv != (Interval{0.5, 0.5}) {
		t.Errorf("all resamples at the estimate: %v %v", iv, err)
	}
}

// tieHeavy returns n per-query differences of two results on a discrete
// metric (mrr-like values 1, ½, ⅓, ¼, 0): most differences are 0, the
// rest few distinct values.
func tieHeavy(seed uint64, n int) (a, b []float64) {
	r := Stream(seed, "tie-heavy")
	vals := []float64{1, 0.5, 1.0 / 3, 0.25, 0}
	a, b = make([]float64, n), make([]float64, n)
	for i := range a {
		a[i] = vals[r.IntN(len(vals))]
		b[i] = a[i]
		if r.IntN(4) == 0 {
			b[i] = vals[r.IntN(len(vals))]
		}
	}
	return a, b
}

// The interval of the paired difference B − A is exactly the negated
// interval of A − B (same stream, hence the same resamples), for both
// methods, over random and tie-heavy samples, on the exact fixed-point path
// and on the float fallback (values spanning more binary orders than the
// 128-bit sums hold), through every entry point.
func TestBootstrapAntisymmetric(t *testing.T) {
	type sample struct {
		name string
		a, b []float64
	}
	var samples []sample
	for s := range uint64(12) {
		n := 3 + int(s)*7
		a, b := tieHeavy(s, n)
		samples = append(samples, sample{fmt.Sprintf("tie-heavy n=%d", n), a, b})
		r := Stream(s, "random")
		ra, rb := make([]float64, n), make([]float64, n)
		for i := range ra {
			ra[i], rb[i] = r.Float64(), r.Float64()*0.9
		}
		samples = append(samples, sample{fmt.Sprintf("random n=%d", n), ra, rb})
		fa, fb := make([]float64, n), make([]float64, n)
		for i := range fa {
			fa[i] = math.Ldexp(r.Float64(), r.IntN(200)-100)
			fb[i] = fa[i]
			if i%3 == 0 {
				fb[i] = math.Ldexp(r.Float64(), r.IntN(200)-100)
			}
		}
		fa[0], fb[0] = 0x1p100, 0 // 160 binary orders apart: the float fallback
		fa[1], fb[1] = 0x1p-60, 0
		samples = append(samples, sample{fmt.Sprintf("float fallback n=%d", n), fa, fb})
	}
	// A pure point mass at 0 apart from two opposite queries.
	samples = append(samples, sample{"symmetric mass", []float64{1, 0, 0, 0, 0, 0, 0, 0}, []float64{0, 1, 0, 0, 0, 0, 0, 0}})
	for _, sm := range samples {
		ab, _ := Differences(sm.a, sm.b)
		ba, _ := Differences(sm.b, sm.a)
		if fv := newFixed(ab); sm.name[:5] == "float" && fv.exact {
			t.Fatalf("%s: expected the float fallback", sm.name)
		}
		for _, m := range []CIMethod{BCa, Percentile} {
			for seed := range uint64(3) {
				for _, via := range []struct {
					name string
					f    func(x []float64) (Interval, error)
				}{
					{"Source", func(x []float64) (Interval, error) {
						return BootstrapMeanSource(context.Background(), x, 0.95, 999, m, NewSource(seed, "pair", sm.name))
					}},
					{"Rand", func(x []float64) (Interval, error) {
						return BootstrapMean(x, 0.95, 999, m, Stream(seed, "pair", sm.name))
					}},
				} {
					x, err := via.f(ab)
					if err != nil {
						t.Fatal(err)
					}
					y, err := via.f(ba)
					if err != nil {
						t.Fatal(err)
					}
					if y.Low != -x.High || y.High != -x.Low {
						t.Errorf("%s %s seed %d via %s: B−A [%.17g, %.17g], A−B [%.17g, %.17g]: not exactly negated",
							sm.name, m, seed, via.name, y.Low, y.High, x.Low, x.High)
					}
					if x.Low > x.High {
						t.Errorf("%s %s: inverted interval %v", sm.name, m, x)
					}
				}
			}
		}
	}
}

// A symmetric tie-heavy difference (mean 0, a large point mass at 0) has a
// BCa interval symmetric about 0 (z0 = 0 by the mid-rank; a = 0 by
// symmetry), so it cannot exclude 0 while the randomization p is 1.
func TestBootstrapSymmetricMass(t *testing.T) {
	d := []float64{1, -1, 0.5, -0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	// The exact enumeration over every resample of n = 2 is too small; use
	// the resample set closed under negation: for each index row, its image
	// under the permutation i ↔ partner(i) that swaps 1 ↔ −1 and ½ ↔ −½.
	partner := []int{1, 0, 3, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	r := Stream(5, "symmetric")
	var idx [][]int
	for range 500 {
		row, mirror := make([]int, len(d)), make([]int, len(d))
		for j := range row {
			row[j] = r.IntN(len(d))
			mirror[j] = partner[row[j]]
		}
		idx = append(idx, row, mirror)
	}
	iv, err := BootstrapMeanIndices(d, 0.95, BCa, idx)
	if err != nil {
		t.Fatal(err)
	}
	if iv.Low != -iv.High || !(iv.Low < 0) {
		t.Errorf("interval [%.17g, %.17g], want symmetric about 0", iv.Low, iv.High)
	}
	sf, err := SignFlipTest(d, 1<<16, nil)
	if err != nil || sf.P != 1 {
		t.Errorf("sign-flip p %v %v, want 1", sf.P, err)
	}
}
