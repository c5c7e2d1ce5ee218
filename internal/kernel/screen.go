package kernel

import "math"

// The screening kernels of rank's screened exact scoring (SPEC §4.2
// "Screened evaluation", rank/screen.md). They are not the exact rule:
// their values are cheap scores c with a proven bound on |c − s|, used to
// decide comparisons where the bound makes them certain.

// ScreenChunk is the chunk length of DotBlocked32.
const ScreenChunk = 32

// DotBlocked32 writes, for the qn×d rows of q and the gn×d rows of g, a
// float32 dot product in which each accumulator restarts at +0 every
// ScreenChunk dimensions and the chunk sums are added in order into a
// total: every product meets at most ScreenChunk + ⌈d/ScreenChunk⌉
// roundings instead of d, which tightens the screen's bound (rank/screen.md
// §6). Every implementation produces the bits of DotBlockedRow32.
func DotBlocked32(q []float32, qn int, g []float32, gn int, d int, out []float32) {
	active.Load().dotBlk32(q, qn, g, gn, d, out)
}

// DotBlockedRow32 is one accumulator of DotBlocked32.
func DotBlockedRow32(a, b []float32) float32 {
	b = b[:len(a)]
	var total float32
	for k0 := 0; k0 < len(a); k0 += ScreenChunk {
		var acc float32
		for k := k0; k < min(k0+ScreenChunk, len(a)); k++ {
			acc = FMA32(a[k], b[k], acc)
		}
		total += acc
	}
	return total
}

// MaxFinite32 returns the largest value of x (−Inf for an empty x; which
// zero when +0 and −0 tie) and whether every value is finite. The maximum
// is meaningful only when they are.
func MaxFinite32(x []float32) (m float32, finite bool) {
	return active.Load().maxFinite32(x)
}

// Cut are the thresholds of Scan32.
type Cut struct{ Above, Lo, Hi, High float32 }

// Scan32 counts the values of x greater than c.Above and writes the
// offsets of the values in [c.Lo, c.Hi] or at least c.High, in order, to
// idx (which needs room for len(x)), returning them. NaN compares false.
func Scan32(x []float32, c Cut, idx []int32) (nAbove int, hits []int32) {
	return active.Load().scan32(x, c, idx[:len(x)])
}

func dotBlk32Generic(q []float32, qn int, g []float32, gn int, d int, out []float32) {
	if qn <= 0 || gn <= 0 {
		return
	}
	out = out[:qn*gn]
	step := chunkRows(d, 4)
	for j0 := 0; j0 < gn; j0 += step {
		j1 := min(j0+step, gn)
		for i := 0; i < qn; i++ {
			qi := q[i*d : (i+1)*d]
			oi := out[i*gn : (i+1)*gn]
			j := j0
			for ; j+4 <= j1; j += 4 {
				g0 := g[j*d:][:len(qi)]
				g1 := g[(j+1)*d:][:len(qi)]
				g2 := g[(j+2)*d:][:len(qi)]
				g3 := g[(j+3)*d:][:len(qi)]
				var t0, t1, t2, t3 float32
				for k0 := 0; k0 < d; k0 += ScreenChunk {
					k1 := min(k0+ScreenChunk, d)
					var a0, a1, a2, a3 float32
					for k := k0; k < k1; k++ {
						x := float64(qi[k])
						a0, a1, a2, a3 = fma32x4(x*float64(g0[k]), x*float64(g1[k]), x*float64(g2[k]), x*float64(g3[k]), a0, a1, a2, a3)
					}
					t0, t1, t2, t3 = t0+a0, t1+a1, t2+a2, t3+a3
				}
				o := oi[j : j+4]
				o[0], o[1], o[2], o[3] = t0, t1, t2, t3
			}
			for ; j < j1; j++ {
				oi[j] = DotBlockedRow32(qi, g[j*d:(j+1)*d])
			}
		}
	}
}

func maxFinite32Generic(x []float32) (float32, bool) {
	m0, m1 := float32(math.Inf(-1)), float32(math.Inf(-1))
	var c0, c1 float32 // Σ v·0: NaN as soon as one value is not finite
	k := 0
	for ; k+2 <= len(x); k += 2 {
		v0, v1 := x[k], x[k+1]
		c0 += v0 * 0
		c1 += v1 * 0
		if v0 > m0 {
			m0 = v0
		}
		if v1 > m1 {
			m1 = v1
		}
	}
	if k < len(x) {
		v := x[k]
		c0 += v * 0
		if v > m0 {
			m0 = v
		}
	}
	return max(m0, m1), c0+c1 == 0
}

func scan32Generic(x []float32, c Cut, idx []int32) (int, []int32) {
	nAbove, n := 0, 0
	idx = idx[:len(x)]
	for k, v := range x {
		nAbove += b2i(v > c.Above)
		idx[n] = int32(k)
		n += b2i(v >= c.Lo && v <= c.Hi || v >= c.High)
	}
	return nAbove, idx[:n]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ConvertNorm64 writes the float32 rounding of x to y (len(y) ≥ len(x))
// and returns Σ x_k² and whether every rounding is finite. The sum is
// formed by FMA chains and additions in an order that depends on the
// implementation, in which every term meets at most len(x) + 32 roundings
// (the bound rank's screen relies on, rank/screen.md §2).
func ConvertNorm64(x []float64, y []float32) (sumSq float64, fits bool) {
	return active.Load().convertNorm64(x, y[:len(x)])
}

// convertNorm64Generic: four interleaved FMA chains added pairwise (every
// term meets at most ⌈d/4⌉ + 2 roundings).
func convertNorm64Generic(x []float64, y []float32) (float64, bool) {
	fits := true
	y = y[:len(x)]
	for k, v := range x {
		f := float32(v)
		y[k] = f
		fits = fits && f-f == 0
	}
	var a0, a1, a2, a3 float64
	k := 0
	for ; k+4 <= len(x); k += 4 {
		v := x[k : k+4 : k+4]
		a0 = math.FMA(v[0], v[0], a0)
		a1 = math.FMA(v[1], v[1], a1)
		a2 = math.FMA(v[2], v[2], a2)
		a3 = math.FMA(v[3], v[3], a3)
	}
	for ; k < len(x); k++ {
		a0 = math.FMA(x[k], x[k], a0)
	}
	return (a0 + a1) + (a2 + a3), fits
}
