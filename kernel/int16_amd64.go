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
