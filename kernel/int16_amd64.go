//go:build amd64 && !purego

package kernel

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

var (
	hasVNNI     = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI
	hasInt16AVX = cpu.X86.HasAVX2
)

// int16Kind is the tile DotInt16 runs under the active kernel.
func int16Kind() int16TileKind { return int16TileFor(Name(), hasVNNI, hasInt16AVX) }

// int16Kinds lists the tiles this CPU runs, the portable one first.
func int16Kinds() []int16TileKind {
	k := []int16TileKind{int16Generic}
	if hasInt16AVX {
		k = append(k, int16AVX2)
	}
	if hasVNNI {
		k = append(k, int16VNNI)
	}
	return k
}

// dotInt16VNNI is the 12 × 32 tile with AVX-512 VNNI (int16_amd64.s).
//
//go:noescape
func dotInt16VNNI(qa, ga *int32, np int, qs, gs, dst *float32, ldo int)

// dotInt16AVX2 is the 12 × 32 tile with AVX2 (int16avx2_amd64.s).
//
//go:noescape
func dotInt16AVX2(qa, ga *int32, np int, qs, gs, dst *float32, ldo int)

// dotInt16Tile runs the SIMD tile k, which the CPU must have (int16Kinds).
func dotInt16Tile(k int16TileKind, qa, ga []int32, np int, qs, gs []float32, dst []float32, ldo int) {
	if np == 0 || k == int16Generic { // the assembly loops take at least one pair
		dotInt16TileGeneric(qa, ga, np, qs, gs, dst, ldo)
		return
	}
	_ = qa[Int16QueryTile*np-1]
	_ = ga[Int16GalleryTile*np-1]
	_ = qs[Int16QueryTile-1]
	_ = gs[Int16GalleryTile-1]
	_ = dst[(Int16QueryTile-1)*ldo+Int16GalleryTile-1]
	switch {
	case k == int16VNNI && hasVNNI:
		dotInt16VNNI(&qa[0], &ga[0], np, &qs[0], &gs[0], &dst[0], ldo)
	case k == int16AVX2 && hasInt16AVX:
		dotInt16AVX2(&qa[0], &ga[0], np, &qs[0], &gs[0], &dst[0], ldo)
	default:
		panic("kernel: int16 tile " + k.String() + " not available on this CPU")
	}
}

// gatherSIMD reports whether Dot32Pairs runs the AVX-512 chains.
func gatherSIMD() bool { return cpu.X86.HasAVX512F && Name() == "avx512" }

// dot32PairsSIMD runs 16 pairs per dot32PairsT call; a short last group
// repeats its last pair.
func dot32PairsSIMD(q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32) {
	var buf [512]float32
	var qo, gO [16]int32
	var r [16]float32
	n := len(goff)
	for k := 0; k < n; k += 16 {
		if k+16 <= n {
			dot32PairsT(&q[0], &qoff[k], &g[0], &goff[k], d, &buf[0], &out[k])
			continue
		}
		for l := range qo {
			qo[l], gO[l] = qoff[min(k+l, n-1)], goff[min(k+l, n-1)]
		}
		dot32PairsT(&q[0], &qo[0], &g[0], &gO[0], d, &buf[0], &r[0])
		copy(out[k:n], r[:])
	}
}

var hasQuantSIMD = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL

//go:noescape
func absMaxSumSq32AVX512(x *float32, n int, mx *float32, ss *float64)

//go:noescape
func quant16AVX512(x *float32, n int, inv, sigma float64, q *int16, out *float64)

func absMaxSumSq32(x []float32) (mx, ss float64) {
	nb := len(x) / 16
	if !hasQuantSIMD || nb == 0 {
		return absMaxSumSq32Generic(x)
	}
	var m [16]float32
	var s [8]float64
	absMaxSumSq32AVX512(&x[0], nb, &m[0], &s[0])
	tm, ts := absMaxSumSq32Generic(x[nb*16:])
	mx = tm
	for _, v := range m {
		mx = max(mx, float64(v))
	}
	ss = ts
	for _, v := range s {
		ss += v
	}
	return mx, ss
}

func quantise16(x []float32, inv, sigma float64, q []int16) (n2, rr float64) {
	nb := len(x) / 8
	if !hasQuantSIMD || nb == 0 {
		return quantise16Generic(x, inv, sigma, q)
	}
	var out [16]float64
	quant16AVX512(&x[0], nb, inv, sigma, &q[0], &out[0])
	n2, rr = quantise16Generic(x[nb*8:], inv, sigma, q[nb*8:])
	for l := range 8 {
		n2 += out[l]
		rr += out[8+l]
	}
	return n2, rr
}

// dot32PairsT is 16 chains with the rows transposed in registers
// (pairs_amd64.s); buf is 512 floats of scratch.
//
//go:noescape
func dot32PairsT(q *float32, qoff *int32, rows *float32, goff *int32, d int, buf *float32, out *float32)

// placeSIMD reports whether PlaceBuckets32 runs the AVX-512 loop.
func placeSIMD() bool { return cpu.X86.HasAVX512F && Name() == "avx512" }

// placeBuckets32SIMD places len(v), a multiple of 16, scores. Every
// bucket index is at most Top, so the 32-bit gathers of Tab (at 2k bytes)
// stay inside it, and the table is non-increasing, so every threshold the
// kernel reads lies below Tab[0] ≤ len(sc) (the gathers of sc and ix are
// masked to the bucket's thresholds).
func placeBuckets32SIMD(b *Buckets32, v []float32, g []int32, sc []float32, ix []int32, slot []int32) {
	if len(b.Tab) < int(b.Top)+2 || int(b.Tab[0]) > len(sc) || len(ix) < len(sc) {
		panic("kernel: bucket table out of step with its thresholds")
	}
	par := [3]float32{b.Lo, b.Scale, b.Top}
	placeBuckets32AVX512(&v[0], &g[0], len(v)/16, &par[0], &b.Tab[0], unsafe.SliceData(sc), unsafe.SliceData(ix), &slot[0])
}
