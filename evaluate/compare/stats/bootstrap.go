package stats

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mathext"
)

// CIMethod selects how a bootstrap interval is read off the resamples.
type CIMethod int

const (
	// BCa is Efron's bias-corrected and accelerated interval (default).
	BCa CIMethod = iota
	// Percentile is the plain percentile interval.
	Percentile
)

// String is "bca" or "percentile".
func (m CIMethod) String() string {
	if m == Percentile {
		return "percentile"
	}
	return "bca"
}

// Interval is a confidence interval [Low, High].
type Interval struct{ Low, High float64 }

// BootstrapMean is the level (e.g. 0.95) bootstrap confidence interval of
// the mean of x from `resamples` resamples with replacement drawn from r
// (each resample: n indices, each uniform in [0, n)).
func BootstrapMean(x []float64, level float64, resamples int, method CIMethod, r *rand.Rand) (Interval, error) {
	return BootstrapMeanContext(context.Background(), x, level, resamples, method, r)
}

// BootstrapMeanContext is BootstrapMean that gives up with ctx's error once
// ctx is done (polled every 64 resamples).
func BootstrapMeanContext(ctx context.Context, x []float64, level float64, resamples int, method CIMethod, r *rand.Rand) (Interval, error) {
	n := len(x)
	if resamples < 1 {
		return Interval{}, errorf("bootstrap resamples must be >= 1")
	}
	if uint64(n) >= 1<<32 {
		return bootstrap(ctx, x, level, resamples, method, func(_ int, dst []int) {
			for j := range dst {
				dst[j] = int(uniformIndex(r, uint64(n)))
			}
		})
	}
	src := &indexSource{r: r}
	return bootstrapFrom(ctx, x, level, resamples, method, func(_ int, dst []int) {
		src.fill(dst, uint64(n))
	}, src)
}

// BootstrapMeanSource is BootstrapMeanContext drawing from src: with
// src = NewSource(seed, labels...) and r = Stream(seed, labels...) both give
// the same interval bit for bit, this one faster.
func BootstrapMeanSource(ctx context.Context, x []float64, level float64, resamples int, method CIMethod, src *Source) (Interval, error) {
	n := len(x)
	if resamples < 1 {
		return Interval{}, errorf("bootstrap resamples must be >= 1")
	}
	if uint64(n) >= 1<<32 {
		return bootstrap(ctx, x, level, resamples, method, func(_ int, dst []int) {
			for j := range dst {
				dst[j] = int(uniformIndex(src, uint64(n)))
			}
		})
	}
	is := &indexSource{src: src}
	return bootstrapFrom(ctx, x, level, resamples, method, func(_ int, dst []int) {
		is.fill(dst, uint64(n))
	}, is)
}

// BootstrapMeanIndices is BootstrapMean over given resamples: idx[b] holds
// the n indices of resample b. It lets tests feed the resamples of an
// independent implementation.
func BootstrapMeanIndices(x []float64, level float64, method CIMethod, idx [][]int) (Interval, error) {
	for b, row := range idx {
		if len(row) != len(x) {
			return Interval{}, errorf("resample %d has %d indices for %d values", b, len(row), len(x))
		}
		for _, i := range row {
			if i < 0 || i >= len(x) {
				return Interval{}, errorf("resample %d: index %d out of range", b, i)
			}
		}
	}
	if len(idx) == 0 {
		return Interval{}, errorf("bootstrap resamples must be >= 1")
	}
	return bootstrap(context.Background(), x, level, len(idx), method, func(b int, dst []int) { copy(dst, idx[b]) })
}

// bootstrap computes the interval. The resample means are exact sums
// (fixedVec) divided by n, and the comparison of each resample mean with
// the estimate for the BCa bias correction compares exact sums, so ties
// (frequent with discrete metrics) are decided exactly.
//
// Definitions (Efron & Tibshirani 1993, §14.3; as scipy.stats.bootstrap):
// the quantile q of the B sorted resample means θ*_(0..B−1) is the linear
// interpolation at position q·(B−1); percentile: q = α/2 and 1 − α/2 with
// α = 1 − level; BCa: z0 = Φ⁻¹((#{θ* < θ̂} + #{θ* ≤ θ̂}) / 2B), the mid-rank
// of the estimate among the resample means (ties at θ̂ count half, SPEC
// §13, scipy's _percentile_of_score), acceleration a from the jackknife
// means θ_(i) = (Σx − x_i)/(n − 1),
// a = Σ(θ̄ − θ_(i))³ / (6 (Σ(θ̄ − θ_(i))²)^{3/2}) (0 when n < 2 or all
// equal), q = Φ(z0 + (z0 + z)/(1 − a(z0 + z))) for z = Φ⁻¹(α/2) and
// z = −Φ⁻¹(α/2). When the mid-rank count is 0 or 2B, z0 would be
// infinite; the count is clamped to [1, 2B − 1]. A sample whose values are
// all equal has the degenerate interval [x_0, x_0].
//
// The computation is antisymmetric bit for bit: for −x and the same
// resamples the interval is exactly [−High, −Low]. The resample means, the
// mid-rank count (c becomes 2B − c), z0 (computed from the smaller tail),
// a and the z values change sign exactly, and the upper bound is read off
// from the top of the sorted means with the upper-tail probability
// Φ(−(z0 + (z0 + z)/(1 − a(z0 + z)))), just as the lower bound of −x is read
// off from the bottom. So the interval of a paired difference B − A is the
// negated interval of A − B.
func bootstrap(ctx context.Context, x []float64, level float64, B int, method CIMethod, next func(b int, dst []int)) (Interval, error) {
	return bootstrapFrom(ctx, x, level, B, method, next, nil)
}

// bootstrapFrom is bootstrap; when src is the source behind next, exact
// resample sums are drawn and added in one pass (indexSource.sumFixed), the
// same draws in the same order as next, without storing the indices.
func bootstrapFrom(ctx context.Context, x []float64, level float64, B int, method CIMethod, next func(b int, dst []int), src *indexSource) (Interval, error) {
	n := len(x)
	if n == 0 {
		return Interval{}, ErrEmpty
	}
	if !(level > 0 && level < 1) {
		return Interval{}, errorf("confidence level must lie in (0, 1)")
	}
	if allEqual(x) {
		return Interval{x[0], x[0]}, nil
	}
	fv := newFixed(x)
	var obs int128
	var obsF float64
	for i, v := range x {
		if fv.exact {
			obs = obs.add(fv.v[i])
		}
		obsF += v
	}
	means := make([]float64, B)
	below, equal := 0, 0
	idx := make([]int, n)
	for b := 0; b < B; b++ {
		if b%64 == 0 {
			if err := ctx.Err(); err != nil {
				return Interval{}, err
			}
		}
		if fv.exact && src != nil {
			s := src.sumFixed(fv.v)
			switch s.cmp(obs) {
			case -1:
				below++
			case 0:
				equal++
			}
			means[b] = fv.sumFloat(s) / float64(n)
			continue
		}
		next(b, idx)
		if fv.exact {
			var s int128
			for _, i := range idx {
				s = s.add(fv.v[i])
			}
			switch s.cmp(obs) {
			case -1:
				below++
			case 0:
				equal++
			}
			means[b] = fv.sumFloat(s) / float64(n)
		} else {
			var s float64
			for _, i := range idx {
				s += x[i]
			}
			switch {
			case s < obsF:
				below++
			case s == obsF:
				equal++
			}
			means[b] = s / float64(n)
		}
	}
	slices.Sort(means)
	alpha := 1 - level
	// Tail probabilities: the lower bound lies at lower-tail probability
	// tlo from the bottom, the upper bound at upper-tail probability thi
	// from the top.
	tlo, thi := alpha/2, alpha/2
	if method == BCa {
		total := obsF
		if fv.exact {
			total = fv.sumFloat(obs)
		}
		z0 := midRankZ0(2*below+equal, B)
		a := acceleration(x, total)
		arg := func(z float64) float64 {
			return z0 + (z0+z)/(1-float64(a*(z0+z)))
		}
		z := mathext.NormalQuantile(alpha / 2)
		tlo, thi = normalCDF(arg(z)), normalCDF(-arg(-z))
	}
	return Interval{quantile(means, tlo), quantileFromTop(means, thi)}, nil
}

// midRankZ0 is the BCa bias correction Φ⁻¹(c/2B) for the mid-rank count
// c = #{θ* < θ̂} + #{θ* ≤ θ̂} = 2·below + equal, with c clamped to
// [1, 2B − 1] so that z0 stays finite. It is evaluated on the smaller tail
// so that midRankZ0(2B − c, B) = −midRankZ0(c, B) exactly.
func midRankZ0(c, B int) float64 {
	c = min(max(c, 1), 2*B-1)
	switch {
	case c == B:
		return 0
	case c > B:
		return -mathext.NormalQuantile(float64(2*B-c) / float64(2*B))
	}
	return mathext.NormalQuantile(float64(c) / float64(2*B))
}

// acceleration is the jackknife estimate of the BCa acceleration.
func acceleration(x []float64, total float64) float64 {
	n := len(x)
	if n < 2 {
		return 0
	}
	jack := make([]float64, n)
	var mean float64
	for i, v := range x {
		jack[i] = (total - v) / float64(n-1)
		mean += jack[i]
	}
	mean /= float64(n)
	var s2, s3 float64
	for _, j := range jack {
		d := mean - j
		s2 += float64(d * d)
		s3 += float64(d * d * d)
	}
	if s2 == 0 {
		return 0
	}
	return s3 / (6 * math.Pow(s2, 1.5))
}

// quantile interpolates the sorted values linearly at position q·(len−1).
func quantile(sorted []float64, q float64) float64 {
	q = min(max(q, 0), 1)
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + float64((h-float64(lo))*(sorted[lo+1]-sorted[lo]))
}

// quantileFromTop is the quantile at 1 − t (t the upper-tail probability)
// computed from the top: the mirror image of quantile, so that for the
// negated values quantileFromTop(s, t) = −quantile(−s reversed, t) exactly.
// It equals quantile(sorted, 1 − t) up to the rounding of 1 − t.
func quantileFromTop(sorted []float64, t float64) float64 {
	t = min(max(t, 0), 1)
	top := len(sorted) - 1
	h := t * float64(top)
	lo := int(math.Floor(h))
	if lo >= top {
		return sorted[0]
	}
	return sorted[top-lo] + float64((h-float64(lo))*(sorted[top-lo-1]-sorted[top-lo]))
}

func allEqual(x []float64) bool {
	for _, v := range x[1:] {
		if v != x[0] {
			return false
		}
	}
	return true
}
