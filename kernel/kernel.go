// Package kernel computes blocks of similarity scores under the determinism
// rule of SPEC §4.2: every (query, candidate) score is one accumulator that
// walks the dimension in index order with a correctly rounded fused
// multiply-add, starting from +0. Tiling only changes which accumulators are
// live at the same time, never the order of operations inside one, so every
// kernel here (and any SIMD kernel that keeps one lane per accumulator)
// produces the same bits.
package kernel

import "math"

// Dot64 writes out[i*gn+j] = Σ_k fma(q[i,k], g[j,k]) for the qn×d rows of q
// and the gn×d rows of g (row-major, packed).
func Dot64(q []float64, qn int, g []float64, gn int, d int, out []float64) {
	i := 0
	for ; i+2 <= qn; i += 2 {
		q0, q1 := q[i*d:(i+1)*d], q[(i+1)*d:(i+2)*d]
		j := 0
		for ; j+4 <= gn; j += 4 {
			g0 := g[j*d : (j+1)*d]
			g1 := g[(j+1)*d : (j+2)*d]
			g2 := g[(j+2)*d : (j+3)*d]
			g3 := g[(j+3)*d : (j+4)*d]
			var a00, a01, a02, a03, a10, a11, a12, a13 float64
			for k := 0; k < d; k++ {
				x0, x1 := q0[k], q1[k]
				y0, y1, y2, y3 := g0[k], g1[k], g2[k], g3[k]
				a00 = math.FMA(x0, y0, a00)
				a01 = math.FMA(x0, y1, a01)
				a02 = math.FMA(x0, y2, a02)
				a03 = math.FMA(x0, y3, a03)
				a10 = math.FMA(x1, y0, a10)
				a11 = math.FMA(x1, y1, a11)
				a12 = math.FMA(x1, y2, a12)
				a13 = math.FMA(x1, y3, a13)
			}
			o0, o1 := out[i*gn+j:i*gn+j+4], out[(i+1)*gn+j:(i+1)*gn+j+4]
			o0[0], o0[1], o0[2], o0[3] = a00, a01, a02, a03
			o1[0], o1[1], o1[2], o1[3] = a10, a11, a12, a13
		}
		for ; j < gn; j++ {
			gj := g[j*d : (j+1)*d]
			out[i*gn+j] = DotRow64(q0, gj)
			out[(i+1)*gn+j] = DotRow64(q1, gj)
		}
	}
	for ; i < qn; i++ {
		qi := q[i*d : (i+1)*d]
		for j := 0; j < gn; j++ {
			out[i*gn+j] = DotRow64(qi, g[j*d:(j+1)*d])
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

// SqDist64 writes out[i*gn+j] = Σ_k fma(t, t) with t = q[i,k] − g[j,k]
// (the squared Euclidean distance; callers negate it).
func SqDist64(q []float64, qn int, g []float64, gn int, d int, out []float64) {
	i := 0
	for ; i+2 <= qn; i += 2 {
		q0, q1 := q[i*d:(i+1)*d], q[(i+1)*d:(i+2)*d]
		j := 0
		for ; j+4 <= gn; j += 4 {
			g0 := g[j*d : (j+1)*d]
			g1 := g[(j+1)*d : (j+2)*d]
			g2 := g[(j+2)*d : (j+3)*d]
			g3 := g[(j+3)*d : (j+4)*d]
			var a00, a01, a02, a03, a10, a11, a12, a13 float64
			for k := 0; k < d; k++ {
				x0, x1 := q0[k], q1[k]
				y0, y1, y2, y3 := g0[k], g1[k], g2[k], g3[k]
				t := x0 - y0
				a00 = math.FMA(t, t, a00)
				t = x0 - y1
				a01 = math.FMA(t, t, a01)
				t = x0 - y2
				a02 = math.FMA(t, t, a02)
				t = x0 - y3
				a03 = math.FMA(t, t, a03)
				t = x1 - y0
				a10 = math.FMA(t, t, a10)
				t = x1 - y1
				a11 = math.FMA(t, t, a11)
				t = x1 - y2
				a12 = math.FMA(t, t, a12)
				t = x1 - y3
				a13 = math.FMA(t, t, a13)
			}
			o0, o1 := out[i*gn+j:i*gn+j+4], out[(i+1)*gn+j:(i+1)*gn+j+4]
			o0[0], o0[1], o0[2], o0[3] = a00, a01, a02, a03
			o1[0], o1[1], o1[2], o1[3] = a10, a11, a12, a13
		}
		for ; j < gn; j++ {
			gj := g[j*d : (j+1)*d]
			out[i*gn+j] = SqDistRow64(q0, gj)
			out[(i+1)*gn+j] = SqDistRow64(q1, gj)
		}
	}
	for ; i < qn; i++ {
		qi := q[i*d : (i+1)*d]
		for j := 0; j < gn; j++ {
			out[i*gn+j] = SqDistRow64(qi, g[j*d:(j+1)*d])
		}
	}
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

// FMA32 is the correctly rounded float32 fused multiply-add. The product of
// two float32 values is exact in float64; the float64 sum is computed with
// round-to-odd (TwoSum plus a sticky-bit fix-up), which makes the final
// rounding to float32 correct: a plain float32(math.FMA(...)) can round twice.
func FMA32(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b))
	cc := float64(c)
	s := p + cc
	bb := s - p
	e := (p - (s - bb)) + (cc - bb)
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

// Dot32 is Dot64 in float32 with FMA32.
func Dot32(q []float32, qn int, g []float32, gn int, d int, out []float32) {
	for i := 0; i < qn; i++ {
		qi := q[i*d : (i+1)*d]
		j := 0
		for ; j+4 <= gn; j += 4 {
			g0 := g[j*d : (j+1)*d]
			g1 := g[(j+1)*d : (j+2)*d]
			g2 := g[(j+2)*d : (j+3)*d]
			g3 := g[(j+3)*d : (j+4)*d]
			var a0, a1, a2, a3 float32
			for k, x := range qi {
				a0 = FMA32(x, g0[k], a0)
				a1 = FMA32(x, g1[k], a1)
				a2 = FMA32(x, g2[k], a2)
				a3 = FMA32(x, g3[k], a3)
			}
			o := out[i*gn+j : i*gn+j+4]
			o[0], o[1], o[2], o[3] = a0, a1, a2, a3
		}
		for ; j < gn; j++ {
			out[i*gn+j] = DotRow32(qi, g[j*d:(j+1)*d])
		}
	}
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

// SqDist32 is SqDist64 in float32 (float32 subtraction, FMA32).
func SqDist32(q []float32, qn int, g []float32, gn int, d int, out []float32) {
	for i := 0; i < qn; i++ {
		qi := q[i*d : (i+1)*d]
		for j := 0; j < gn; j++ {
			out[i*gn+j] = SqDistRow32(qi, g[j*d:(j+1)*d])
		}
	}
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
