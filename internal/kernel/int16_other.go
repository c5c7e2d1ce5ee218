//go:build !amd64 || purego

package kernel

func int16Kind() int16TileKind { return int16TileFor(Name(), false, false) }

func int16Kinds() []int16TileKind { return []int16TileKind{int16Generic} }

func dotInt16Tile(k int16TileKind, qa, ga []int32, np int, qs, gs []float32, dst []float32, ldo int) {
	if k != int16Generic {
		panic("kernel: int16 tile " + k.String() + " not available in this build")
	}
	dotInt16TileGeneric(qa, ga, np, qs, gs, dst, ldo)
}

func gatherSIMD() bool { return false }

func pairs32Kind() pairs32Impl { return pairs32For(Name(), false, false) }

func pairs32Kinds() []pairs32Impl { return []pairs32Impl{pairs32Scalar} }

func dot32PairsAVX2(q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32) {
	panic("unreachable")
}

func dot32PairsSIMD(q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32) {
	panic("unreachable")
}

func absMaxSumSq32(x []float32) (mx, ss float64) { return absMaxSumSq32Generic(x) }

func quantise16(x []float32, inv, sigma float64, q []int16) (n2, rr float64) {
	return quantise16Generic(x, inv, sigma, q)
}

func placeSIMD() bool { return false }

func placeBuckets32SIMD(b *Buckets32, v []float32, g []int32, sc []float32, ix []int32, slot []int32) {
	panic("unreachable")
}
