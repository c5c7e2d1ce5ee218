package stats

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

func TestMeanStdDev(t *testing.T) {
	for _, c := range []struct {
		x        []float64
		mean, sd float64
	}{
		{[]float64{1, 2, 3, 4}, 2.5, math.Sqrt(5.0 / 3)},
		{[]float64{2}, 2, 0},
		{[]float64{1, 1, 1}, 1, 0},
		{nil, 0, 0},
	} {
		if m, s := Mean(c.x), StdDev(c.x); m != c.mean || math.Abs(s-c.sd) > 1e-15 {
			t.Errorf("%v: mean %v sd %v, want %v %v", c.x, m, s, c.mean, c.sd)
		}
	}
}

func TestEffectSize(t *testing.T) {
	es, ok := EffectSize([]float64{1, 2, 3, 4}) // 2.5 / sqrt(5/3)
	if !ok || math.Abs(es-2.5/math.Sqrt(5.0/3)) > 1e-15 {
		t.Errorf("effect size %v %v", es, ok)
	}
	if _, ok := EffectSize([]float64{0.5, 0.5}); ok {
		t.Error("constant differences have no effect size")
	}
}

// Hand-computed Holm adjustments, ties keeping their order.
func TestHolm(t *testing.T) {
	for _, c := range []struct{ p, want []float64 }{
		{[]float64{0.01, 0.04, 0.03}, []float64{0.03, 0.06, 0.06}},
		{[]float64{0.5, 0.001, 0.2, 0.2}, []float64{0.6, 0.004, 0.6, 0.6}},
		{[]float64{0.9, 0.8}, []float64{1, 1}},
		{[]float64{0.02}, []float64{0.02}},
		{nil, []float64{}},
	} {
		got := Holm(c.p)
		if len(got) != len(c.want) {
			t.Fatalf("%v: %v", c.p, got)
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-15 {
				t.Errorf("Holm(%v) = %v, want %v", c.p, got, c.want)
				break
			}
		}
	}
}

func TestTTestEdgeCases(t *testing.T) {
	if _, p, _ := OneSampleTTest([]float64{0, 0, 0}); p != 1 {
		t.Errorf("all-zero differences: p = %v, want 1", p)
	}
	if _, p, _ := OneSampleTTest([]float64{0.3}); p != 1 {
		t.Errorf("n = 1: p = %v, want 1", p)
	}
	if tt, p, _ := OneSampleTTest([]float64{0.25, 0.25, 0.25}); p != 0 || !math.IsInf(tt, 1) {
		t.Errorf("constant non-zero differences: t=%v p=%v, want +Inf 0", tt, p)
	}
	if _, _, err := PairedTTest([]float64{1}, []float64{1, 2}); err != ErrLength {
		t.Errorf("length mismatch: %v", err)
	}
	if _, _, err := OneSampleTTest(nil); err != ErrEmpty {
		t.Errorf("empty: %v", err)
	}
}

// Sums that are mathematically equal but differ in float64 summation order
// count as ties. For d = (0.1, 0.2, −0.3, 0.3, −0.1, −0.2) the exact sum of
// the doubles is 0, so every sign vector is at least as extreme: p = 1.
// Float64 sums in index order get 62 of the 64 vectors "less extreme than"
// a rounding residue of 2.8e-17, which is why the sums are exact.
func TestSignFlipExactTies(t *testing.T) {
	d := []float64{0.1, 0.2, -0.3, 0.3, -0.1, -0.2}
	res, err := SignFlipTest(d, 64, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exact || !res.ExactSums || res.P != 1 {
		t.Errorf("got %+v, want exact p = 1", res)
	}
	fsum := func(m int) float64 {
		var s float64
		for i, v := range d {
			if m>>i&1 == 1 {
				v = -v
			}
			s += v
		}
		return s
	}
	obs, floatCount := math.Abs(fsum(0)), 0
	for m := 0; m < 64; m++ {
		if math.Abs(fsum(m)) >= obs {
			floatCount++
		}
	}
	if floatCount == 64 {
		t.Error("float sums decide these ties correctly; the example no longer shows the rounding problem")
	}
}

// Monte Carlo p = (1 + count)/(1 + N): never 0, and for a strong effect it
// is exactly 1/(1+N).
func TestSignFlipMonteCarlo(t *testing.T) {
	d := make([]float64, 40)
	for i := range d {
		d[i] = 0.1 + 0.01*float64(i)
	}
	res, err := SignFlipTest(d, 999, Stream(1, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Exact || res.P != 1.0/1000 {
		t.Errorf("got %+v, want Monte Carlo p = 1/1000", res)
	}
	// A null sample: p is roughly uniform; with symmetric values it is large.
	null := []float64{1, -1, 0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, 0.25, -0.25, 1, -1, 0.5, -0.5, 0.2}
	res, err = SignFlipTest(null, 2000, Stream(2, "y"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Exact || res.P < 0.5 {
		t.Errorf("null sample: %+v, want p ≥ 0.5", res)
	}
	// Same stream, same answer.
	again, _ := SignFlipTest(null, 2000, Stream(2, "y"))
	if again != res {
		t.Errorf("same stream gave %+v then %+v", res, again)
	}
	if _, err := SignFlipTest(d, 0, Stream(1, "x")); err == nil {
		t.Error("0 permutations with n = 40 must fail")
	}
}

// Values spanning more binary orders than 128 bits hold fall back to
// float64 sums (and say so).
func TestSignFlipFallback(t *testing.T) {
	d := []float64{1e30, 1e-30, -3, 2}
	res, err := SignFlipTest(d, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExactSums || !res.Exact {
		t.Errorf("got %+v, want exact enumeration with float sums", res)
	}
	// |±1e30 ± …| ≥ |1e30 + …| holds for every vector: p = 1.
	if res.P != 1 {
		t.Errorf("p = %v, want 1", res.P)
	}
}

// newFixed represents values exactly: the float value of a single term's
// fixed-point form is the term.
func TestFixedRoundTrip(t *testing.T) {
	x := []float64{1, 0.5, 1.0 / 3, -0.1, 0.001 - 0.0009, 0, -1, 0.630929753571457}
	fv := newFixed(x)
	if !fv.exact {
		t.Fatal("not exact")
	}
	for i, v := range x {
		if got := fv.sumFloat(fv.v[i]); got != v {
			t.Errorf("term %d: %v round-trips to %v", i, v, got)
		}
	}
	var s int128
	for _, v := range fv.v {
		s = s.add(v)
	}
	for _, v := range fv.v {
		s = s.sub(v)
	}
	if s != (int128{}) {
		t.Errorf("sum minus terms = %v, want 0", s)
	}
}

func TestStreamIndependentOfLabelsOrder(t *testing.T) {
	a := Stream(7, "ab", "c").Uint64()
	if b := Stream(7, "ab", "c").Uint64(); a != b {
		t.Error("same labels, different streams")
	}
	// Length prefixes keep ("ab","c") and ("a","bc") apart.
	if b := Stream(7, "a", "bc").Uint64(); a == b {
		t.Error("label boundaries are not part of the key")
	}
	if b := Stream(8, "ab", "c").Uint64(); a == b {
		t.Error("the seed is not part of the key")
	}
}

// uniformIndex stays in range and is close to uniform.
func TestUniformIndex(t *testing.T) {
	r := Stream(3, "u")
	var counts [7]int
	for i := 0; i < 70000; i++ {
		counts[uniformIndex(r, 7)]++
	}
	for i, c := range counts {
		if c < 9500 || c > 10500 {
			t.Errorf("bucket %d: %d of 70000", i, c)
		}
	}
	src := &indexSource{r: Stream(4, "u32")}
	counts = [7]int{}
	for i := 0; i < 70000; i++ {
		counts[src.index(7)]++
	}
	for i, c := range counts {
		if c < 9500 || c > 10500 {
			t.Errorf("32-bit source, bucket %d: %d of 70000", i, c)
		}
	}
}

func TestBootstrapDegenerate(t *testing.T) {
	iv, err := BootstrapMean([]float64{0.5, 0.5, 0.5}, 0.95, 100, BCa, Stream(0))
	if err != nil || iv != (Interval{0.5, 0.5}) {
		t.Errorf("constant sample: %v %v", iv, err)
	}
	if _, err := BootstrapMean(nil, 0.95, 100, BCa, Stream(0)); err != ErrEmpty {
		t.Errorf("empty: %v", err)
	}
	if _, err := BootstrapMean([]float64{1, 2}, 1, 100, BCa, Stream(0)); err == nil {
		t.Error("level 1 must fail")
	}
	if _, err := BootstrapMeanIndices([]float64{1, 2}, 0.95, BCa, [][]int{{0, 2}}); err == nil {
		t.Error("out-of-range index must fail")
	}
}

// Coverage: over 400 simulated samples (n = 40, normal and exponential) the
// 95 % BCa and percentile intervals contain the true mean 92–98 % of the
// time. Seeds are fixed, so the test is deterministic; the bounds are ±3
// binomial standard deviations around 95 %.
func TestBootstrapCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("coverage simulation")
	}
	const trials, n = 400, 40
	for _, dist := range []struct {
		name string
		mean float64
		draw func(r *rand.Rand) float64
	}{
		{"normal", 0.5, func(r *rand.Rand) float64 { return 0.5 + 0.2*r.NormFloat64() }},
		{"exponential", 1, func(r *rand.Rand) float64 { return r.ExpFloat64() }},
	} {
		for _, m := range []CIMethod{BCa, Percentile} {
			hits := 0
			for trial := 0; trial < trials; trial++ {
				r := Stream(uint64(trial), "coverage", dist.name)
				x := make([]float64, n)
				for i := range x {
					x[i] = dist.draw(r)
				}
				iv, err := BootstrapMean(x, 0.95, 1000, m, r)
				if err != nil {
					t.Fatal(err)
				}
				if iv.Low <= dist.mean && dist.mean <= iv.High {
					hits++
				}
			}
			cov := float64(hits) / trials
			t.Logf("%s %s: coverage %.3f", dist.name, m, cov)
			if cov < 0.92 || cov > 0.98 {
				t.Errorf("%s %s: coverage %.3f outside [0.92, 0.98]", dist.name, m, cov)
			}
		}
	}
}

func TestCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if _, err := BootstrapMeanContext(ctx, x, 0.95, 1000, BCa, Stream(0)); err != context.Canceled {
		t.Errorf("bootstrap: %v", err)
	}
	if _, err := SignFlipTestContext(ctx, x, 1000, Stream(0)); err != context.Canceled {
		t.Errorf("sign flip (random): %v", err)
	}
	if _, err := SignFlipTestContext(ctx, x[:12], 1<<12, nil); err != context.Canceled {
		t.Errorf("sign flip (exact): %v", err)
	}
}
