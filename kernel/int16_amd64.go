//go:build amd64 && !purego

package kernel

import "golang.org/x/sys/cpu"

var hasVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI

// int16SIMD reports whether DotInt16 runs the AVX-512 VNNI tile: the CPU
// has it and the active kernel is the AVX-512 one (VERTEBRAE_KERNEL=avx2
// or generic also turns the integer tile off).
func int16SIMD() bool { return hasVNNI && Name() == "avx512" }

// dotInt16VNNI is the 12 × 32 tile (int16_amd64.s).
//
//go:noescape
func dotInt16VNNI(qa, ga *int32, np int, qs, gs, dst *float32, ldo int)

func dotInt16Tile(qa, ga []int32, np int, qs, gs []float32, dst []float32, ldo int) {
	_ = qa[Int16QueryTile*np-1]
	_ = ga[Int16GalleryTile*np-1]
	_ = dst[(Int16QueryTile-1)*ldo+Int16GalleryTile-1]
	dotInt16VNNI(&qa[0], &ga[0], np, &qs[0], &gs[0], &dst[0], ldo)
}

// gatherSIMD reports whether Dot32Gather runs the AVX-512 gather chains.
func gatherSIMD() bool { return cpu.X86.HasAVX512F && Name() == "avx512" }

// dot32Gather4 and dot32Gather1 are 64 and 16 chains (gather_amd64.s).
//
//go:noescape
func dot32Gather4(q, rows *float32, d int, off *int32, out *float32)

//go:noescape
func dot32Gather1(q, rows *float32, d int, off *int32, out *float32)

func dot32GatherSIMD(q, g []float32, d int, off []int32, out []float32) {
	n := len(off)
	k := 0
	for ; k+64 <= n; k += 64 {
		dot32Gather4(&q[0], &g[0], d, &off[k], &out[k])
	}
	for ; k+16 <= n; k += 16 {
		dot32Gather1(&q[0], &g[0], d, &off[k], &out[k])
	}
	if k < n {
		var o [16]int32
		var r [16]float32
		for l := range o {
			o[l] = off[min(k+l, n-1)]
		}
		dot32Gather1(&q[0], &g[0], d, &o[0], &r[0])
		copy(out[k:n], r[:])
	}
}
