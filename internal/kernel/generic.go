package kernel

import "math"

// The generic kernels are the portable fallback. Each accumulator is the
// row definition's fma chain; a tile keeps four of them live (one query
// against four gallery rows): independent chains hide the FMA latency, and
// the hot loop stays small enough for registers even on GOAMD64=v1, where
// every math.FMA carries a feature test and a call fallback that forces
// spills around it (eight accumulators are slower there).
//
// The gallery is walked in chunks small enough to stay in L2 while every
// query passes over them.

// genericChunkBytes is the size of the gallery slice that all queries sweep
// before the next one is read.
const genericChunkBytes = 256 << 10

func chunkRows(d, elemSize int) int {
	return max(8, genericChunkBytes/max(1, d*elemSize)/8*8)
}

func dot64Generic(q []float64, qn int, g []float64, gn int, d int, out []float64) {
	if qn <= 0 || gn <= 0 {
		return
	}
	out = out[:qn*gn]
	step := chunkRows(d, 8)
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
				var a0, a1, a2, a3 float64
				for k, x := range qi {
					a0 = math.FMA(x, g0[k], a0)
					a1 = math.FMA(x, g1[k], a1)
					a2 = math.FMA(x, g2[k], a2)
					a3 = math.FMA(x, g3[k], a3)
				}
				o := oi[j : j+4]
				o[0], o[1], o[2], o[3] = a0, a1, a2, a3
			}
			for ; j < j1; j++ {
				oi[j] = DotRow64(qi, g[j*d:(j+1)*d])
			}
		}
	}
}

func sqDist64Generic(q []float64, qn int, g []float64, gn int, d int, out []float64) {
	if qn <= 0 || gn <= 0 {
		return
	}
	out = out[:qn*gn]
	step := chunkRows(d, 8)
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
				var a0, a1, a2, a3 float64
				for k, x := range qi {
					t0, t1, t2, t3 := x-g0[k], x-g1[k], x-g2[k], x-g3[k]
					a0 = math.FMA(t0, t0, a0)
					a1 = math.FMA(t1, t1, a1)
					a2 = math.FMA(t2, t2, a2)
					a3 = math.FMA(t3, t3, a3)
				}
				o := oi[j : j+4]
				o[0], o[1], o[2], o[3] = a0, a1, a2, a3
			}
			for ; j < j1; j++ {
				oi[j] = SqDistRow64(qi, g[j*d:(j+1)*d])
			}
		}
	}
}

func dot32Generic(q []float32, qn int, g []float32, gn int, d int, out []float32) {
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
				var a0, a1, a2, a3 float32
				for k, x := range qi {
					x := float64(x)
					a0, a1, a2, a3 = fma32x4(x*float64(g0[k]), x*float64(g1[k]), x*float64(g2[k]), x*float64(g3[k]), a0, a1, a2, a3)
				}
				o := oi[j : j+4]
				o[0], o[1], o[2], o[3] = a0, a1, a2, a3
			}
			for ; j < j1; j++ {
				oi[j] = DotRow32(qi, g[j*d:(j+1)*d])
			}
		}
	}
}

func sqDist32Generic(q []float32, qn int, g []float32, gn int, d int, out []float32) {
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
				var a0, a1, a2, a3 float32
				for k, x := range qi {
					t0, t1, t2, t3 := float64(x-g0[k]), float64(x-g1[k]), float64(x-g2[k]), float64(x-g3[k])
					a0, a1, a2, a3 = fma32x4(t0*t0, t1*t1, t2*t2, t3*t3, a0, a1, a2, a3)
				}
				o := oi[j : j+4]
				o[0], o[1], o[2], o[3] = a0, a1, a2, a3
			}
			for ; j < j1; j++ {
				oi[j] = SqDistRow32(qi, g[j*d:(j+1)*d])
			}
		}
	}
}

// fma32x4 is FMA32 on four accumulators given the four exact products, with
// the common case (no float32 tie) inlined.
func fma32x4(p0, p1, p2, p3 float64, a0, a1, a2, a3 float32) (float32, float32, float32, float32) {
	s0, s1, s2, s3 := p0+float64(a0), p1+float64(a1), p2+float64(a2), p3+float64(a3)
	if oneRounding(s0) && oneRounding(s1) && oneRounding(s2) && oneRounding(s3) {
		return float32(s0), float32(s1), float32(s2), float32(s3)
	}
	return fma32Slow(p0, float64(a0), s0), fma32Slow(p1, float64(a1), s1),
		fma32Slow(p2, float64(a2), s2), fma32Slow(p3, float64(a3), s3)
}
