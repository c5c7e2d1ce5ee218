//go:build amd64 && !purego

package kernel

import "math"

// lanes16 is the first index vector of scan32AVX512.
var lanes16 = [16]int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// withScans sets m's row scans to the kernels of v (vecAVX2 or vecAVX512).
// The AVX-512 kernels and their AVX2 forms share one contract (16 values
// per step, the same outputs), so one Go wrapper each runs either; the
// kernels are called directly, so that their output arrays stay on the
// stack.
func withScans(m *impl, v vecISA) *impl {
	m.maxFinite32 = func(x []float32) (float32, bool) { return maxFinite32Go(v, x) }
	m.scan32 = func(x []float32, c Cut, idx []int32) (int, []int32) { return scan32Go(v, x, c, idx) }
	m.convertNorm64 = func(x []float64, y []float32) (float64, bool) { return convertNorm64Go(v, x, y) }
	return m
}

// maxFinite32Go runs the kernel over the whole vectors of x and finishes
// the tail in Go.
func maxFinite32Go(v vecISA, x []float32) (float32, bool) {
	nv := len(x) / 16
	if nv == 0 {
		return maxFinite32Generic(x)
	}
	var out [32]float32
	if v == vecAVX512 {
		maxFinite32AVX512(&x[0], nv, &out[0])
	} else {
		maxFinite32AVX2(&x[0], nv, &out[0])
	}
	m, bad := float32(math.Inf(-1)), uint32(0)
	for l := range 16 { // comparisons, not the max builtin: the maximum is meaningless unless every value is finite
		if out[l] > m {
			m = out[l]
		}
		bad |= math.Float32bits(out[16+l])
	}
	if nv*16 == len(x) {
		return m, bad == 0
	}
	tm, tf := maxFinite32Generic(x[nv*16:])
	if tm > m {
		m = tm
	}
	return m, bad == 0 && tf
}

func scan32Go(v vecISA, x []float32, c Cut, idx []int32) (int, []int32) {
	nv := len(x) / 16
	if nv == 0 {
		return scan32Generic(x, c, idx)
	}
	idx = idx[:len(x)]
	var cnt [16]int32
	cut := [4]float32{c.Above, c.Lo, c.Hi, c.High}
	var n int
	if v == vecAVX512 {
		n = scan32AVX512(&x[0], nv, &cut[0], &lanes16[0], &idx[0], &cnt[0])
	} else {
		n = scan32AVX2(&x[0], nv, &cut[0], &lanes16[0], &idx[0], &cnt[0])
	}
	nAbove := 0
	for _, c := range cnt {
		nAbove += int(c)
	}
	ta, th := scan32Generic(x[nv*16:], c, idx[n:])
	for i := range th {
		th[i] += int32(nv * 16)
	}
	return nAbove + ta, idx[:n+len(th)]
}

// convertNorm64Go: sixteen lane chains of the kernel added in lane order,
// then the tail's chain (a term meets at most ⌈d/16⌉ + 17 roundings).
func convertNorm64Go(v vecISA, x []float64, y []float32) (float64, bool) {
	n := len(x) / 16
	if n == 0 {
		return convertNorm64Generic(x, y)
	}
	y = y[:len(x)]
	var out [16 + 8]float64
	if v == vecAVX512 {
		convertNorm64AVX512(&x[0], n, &y[0], &out[0])
	} else {
		convertNorm64AVX2(&x[0], n, &y[0], &out[0])
	}
	var acc float64
	for _, v := range out[:16] {
		acc += v
	}
	bad := uint64(0)
	for _, v := range out[16:] {
		bad |= math.Float64bits(v)
	}
	var tail float64
	fits := bad == 0
	for k := n * 16; k < len(x); k++ {
		v := x[k]
		f := float32(v)
		y[k] = f
		fits = fits && f-f == 0
		tail = math.FMA(v, v, tail)
	}
	return acc + tail, fits
}
