package kernel

import "math"

// Dot64 writes out[i*gn+j] = Σ_k fma(q[i,k], g[j,k]) for the qn×d rows of q
// and the gn×d rows of g (row-major, packed).
func Dot64(q []float64, qn int, g []float64, gn int, d int, out []float64) {
	if tiny(qn, gn) {
		rows(q, qn, g, gn, d, out, DotRow64)
		return
	}
	active.Load().dot64(q, qn, g, gn, d, out)
}

// SqDist64 writes out[i*gn+j] = Σ_k fma(t, t) with t = q[i,k] − g[j,k]
// (the squared Euclidean distance; callers negate it).
func SqDist64(q []float64, qn int, g []float64, gn int, d int, out []float64) {
	if tiny(qn, gn) {
		rows(q, qn, g, gn, d, out, SqDistRow64)
		return
	}
	active.Load().sqDist64(q, qn, g, gn, d, out)
}

// Dot32 is Dot64 in float32 with FMA32.
func Dot32(q []float32, qn int, g []float32, gn int, d int, out []float32) {
	if tiny(qn, gn) {
		rows(q, qn, g, gn, d, out, DotRow32)
		return
	}
	active.Load().dot32(q, qn, g, gn, d, out)
}

// SqDist32 is SqDist64 in float32 (float32 subtraction, FMA32).
func SqDist32(q []float32, qn int, g []float32, gn int, d int, out []float32) {
	if tiny(qn, gn) {
		rows(q, qn, g, gn, d, out, SqDistRow32)
		return
	}
	active.Load().sqDist32(q, qn, g, gn, d, out)
}

// tiny reports whether a block is so small (an exact positive score, one
// pair at a time) that packing it and padding a SIMD tile would cost more
// than the row definition itself: then the block functions run the row
// functions, which are the definition, so no bit changes.
func tiny(qn, gn int) bool { return qn > 0 && gn > 0 && qn*gn <= 2 }

func rows[T float](q []T, qn int, g []T, gn, d int, out []T, row func(a, b []T) T) {
	out = out[:qn*gn]
	for i := range qn {
		for j := range gn {
			out[i*gn+j] = row(q[i*d:(i+1)*d], g[j*d:(j+1)*d])
		}
	}
}

// DotRow64 is one accumulator of Dot64.
func DotRow64(a, b []float64) float64 {
	b = b[:len(a)]
	var acc float64
	for k, x := range a {
		acc = math.FMA(x, b[k], acc)
	}
	return acc
}

// SqDistRow64 is one accumulator of SqDist64.
func SqDistRow64(a, b []float64) float64 {
	b = b[:len(a)]
	var acc float64
	for k, x := range a {
		t := x - b[k]
		acc = math.FMA(t, t, acc)
	}
	return acc
}

// DotRow32 is one accumulator of Dot32.
func DotRow32(a, b []float32) float32 {
	b = b[:len(a)]
	var acc float32
	for k, x := range a {
		acc = FMA32(x, b[k], acc)
	}
	return acc
}

// SqDistRow32 is one accumulator of SqDist32.
func SqDistRow32(a, b []float32) float32 {
	b = b[:len(a)]
	var acc float32
	for k, x := range a {
		t := x - b[k]
		acc = FMA32(t, t, acc)
	}
	return acc
}

// FMA32 is the correctly rounded float32 fused multiply-add. The product of
// two float32 values is exact in float64, so s = p + c is a·b+c rounded once
// to float64. Rounding s again to float32 is correct unless s is exactly
// halfway between two float32 values (rounding is monotonic and every such
// tie is a float64); only then, or when s is below the float32 normal range,
// does fma32Slow redo the rounding. (A plain float32(math.FMA(...)) can round
// twice.)
func FMA32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	if oneRounding(s) {
		return float32(s)
	}
	return fma32Slow(p, float64(c), s)
}

// oneRounding reports whether float32(s) rounds s as the exact value it
// approximates would round: s is not a float32 tie (in the normal range a tie
// has the 29 bits that float32 drops equal to 1000…0) and is not in the
// float32 subnormal range (where the tie pattern differs), or s is zero.
func oneRounding(s float64) bool {
	b := math.Float64bits(s)
	return b&(1<<29-1) != 1<<28 && b&(0x7ff<<52) >= (1023-126)<<52 || s == 0
}

// fma32Slow rounds p+c to float32 given s = p+c rounded to float64, for any
// p (exact) and c: the error of s (TwoSum) sets a sticky bit, which turns s
// into p+c rounded to odd, and rounding that to float32 is correct.
func fma32Slow(p, c, s float64) float32 {
	if math.IsInf(s, 0) || s != s {
		return float32(s) // an infinite or NaN operand: no rounding to fix
	}
	bb := s - p
	e := (p - (s - bb)) + (c - bb)
	if e != 0 {
		bits := math.Float64bits(s)
		if bits&1 == 0 {
			if (e > 0) == (s > 0) {
				bits++
			} else {
				bits--
			}
			s = math.Float64frombits(bits)
		}
	}
	return float32(s)
}
