//go:build !amd64 || purego

package kernel

func int16SIMD() bool { return false }

func dotInt16Tile(qa, ga []int32, np int, qs, gs []float32, dst []float32, ldo int) {
	dotInt16TileGeneric(qa, ga, np, qs, gs, dst, ldo)
}

func gatherSIMD() bool { return false }

func dot32GatherSIMD(q, g []float32, d int, off []int32, out []float32) {
	panic("unreachable")
}
