//go:build amd64 && !purego

package kernel

// int8Kind is the tile DotInt8 runs under the active kernel (hasVNNI:
// AVX-512F and AVX-512 VNNI, int16_amd64.go).
func int8Kind() int8TileKind { return int8TileFor(Name(), hasVNNI) }

// int8Kinds lists the tiles this CPU runs, the portable one first.
func int8Kinds() []int8TileKind {
	k := []int8TileKind{int8Generic}
	if hasVNNI {
		k = append(k, int8VNNI)
	}
	return k
}

// dotInt8VNNI is the 12 × 32 tile with AVX-512 VNNI (int8_amd64.s); nq ≥ 1.
//
//go:noescape
func dotInt8VNNI(qa, ga *int32, nq int, qs, gs, dst *float32, ldo int)

// dotInt8Tile runs the SIMD tile k, which the CPU must have (int8Kinds).
func dotInt8Tile(k int8TileKind, qa, ga []int32, nq int, qs, gs []float32, dst []float32, ldo int) {
	if nq == 0 || k == int8Generic { // the assembly loop takes at least one quad
		dotInt8TileGeneric(qa, ga, nq, qs, gs, dst, ldo)
		return
	}
	_ = qa[Int8QueryTile*nq-1]
	_ = ga[2*(nq+1)*int8Lanes-1]
	_ = qs[Int8QueryTile-1]
	_ = gs[Int8GalleryTile-1]
	_ = dst[(Int8QueryTile-1)*ldo+Int8GalleryTile-1]
	if k != int8VNNI || !hasVNNI {
		panic("kernel: int8 tile " + k.String() + " not available on this CPU")
	}
	dotInt8VNNI(&qa[0], &ga[0], nq, &qs[0], &gs[0], &dst[0], ldo)
}
