package stats

import (
	"math"
	"math/bits"
)

// Sums of per-query values decide the tests' tie cases: a sign-flipped sum
// "at least as extreme" as the observed one, a bootstrap mean "below" the
// observed one. Per-query metrics take few distinct values (0, 1, 1/2, …),
// so mathematically equal sums are common, and float64 sums of the same
// terms in another order may differ in the last bit and break such ties at
// random. fixedVec therefore converts a sample to integers on one binary
// scale (x_i = v_i · 2^−shift, exactly) and sums them in 128-bit integer
// arithmetic, which is exact and order-free. Comparing sums rather than
// means also avoids the rounding of the division by n. Samples whose values
// span too many binary orders to fit (never the case for metrics in [0, 1]
// unless values below about 2^−100 occur) fall back to float64 sums in index
// order; fixedVec.exact reports which.

// int128 is a two's-complement 128-bit integer.
type int128 struct {
	hi uint64
	lo uint64
}

func (a int128) add(b int128) int128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return int128{hi, lo}
}

func (a int128) sub(b int128) int128 {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, c)
	return int128{hi, lo}
}

func (a int128) neg() int128 { return int128{}.sub(a) }

func (a int128) negative() bool { return int64(a.hi) < 0 }

func (a int128) abs() int128 {
	if a.negative() {
		return a.neg()
	}
	return a
}

// cmp compares signed values: -1, 0 or +1.
func (a int128) cmp(b int128) int {
	if a.hi != b.hi {
		if int64(a.hi) < int64(b.hi) {
			return -1
		}
		return 1
	}
	switch {
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// float converts to float64 (at most two roundings; deterministic).
func (a int128) float() float64 {
	m := a.abs()
	f := float64(float64(m.hi)*0x1p64) + float64(m.lo)
	if a.negative() {
		return -f
	}
	return f
}

// fixedVec is a sample on a common binary fixed-point scale.
type fixedVec struct {
	x     []float64
	v     []int128 // v[i] = x[i] · 2^shift exactly (when exact)
	shift int
	exact bool
}

// headroom is the number of bits left for the sum of up to n terms: every
// term must stay below 2^(126 − bits(n)) so no sum of n of them (with any
// signs) overflows.
func newFixed(x []float64) fixedVec {
	fv := fixedVec{x: x}
	limit := 126 - bits.Len(uint(len(x)))
	// x = mant · 2^exp with mant odd (trailing zeros stripped).
	shift := math.MinInt
	top := math.MinInt // highest bit position of any |x|, unscaled
	for _, f := range x {
		if f == 0 {
			continue
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fv
		}
		mant, exp := decompose(f)
		shift = max(shift, -exp)
		top = max(top, bits.Len64(mant)+exp)
	}
	if shift == math.MinInt { // all zero
		fv.v = make([]int128, len(x))
		fv.exact = true
		return fv
	}
	if top+shift > limit {
		return fv
	}
	fv.shift = shift
	fv.v = make([]int128, len(x))
	for i, f := range x {
		if f == 0 {
			continue
		}
		mant, exp := decompose(f)
		s := uint(exp + shift) // ≥ 0 by the choice of shift
		var m int128
		if s >= 64 {
			m = int128{hi: mant << (s - 64)}
		} else {
			m = int128{hi: mant >> (64 - s), lo: mant << s} // mant >> 64 is 0 in Go
		}
		if f < 0 {
			m = m.neg()
		}
		fv.v[i] = m
	}
	fv.exact = true
	return fv
}

// decompose returns |f| = mant · 2^exp with mant odd (f ≠ 0, finite).
func decompose(f float64) (mant uint64, exp int) {
	fr, e := math.Frexp(math.Abs(f)) // |f| = fr · 2^e, fr in [0.5, 1)
	mant = uint64(math.Ldexp(fr, 53))
	exp = e - 53
	tz := bits.TrailingZeros64(mant)
	return mant >> tz, exp + tz
}

// sumFloat converts an exact sum back to a float64 value.
func (fv *fixedVec) sumFloat(s int128) float64 { return math.Ldexp(s.float(), -fv.shift) }
