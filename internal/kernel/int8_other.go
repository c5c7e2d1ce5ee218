//go:build !amd64 || purego

package kernel

func int8Kind() int8TileKind { return int8TileFor(Name(), false) }

func int8Kinds() []int8TileKind { return []int8TileKind{int8Generic} }

func dotInt8Tile(k int8TileKind, qa, ga []int32, nq int, qs, gs []float32, dst []float32, ldo int) {
	if k != int8Generic {
		panic("kernel: int8 tile " + k.String() + " not available in this build")
	}
	dotInt8TileGeneric(qa, ga, nq, qs, gs, dst, ldo)
}
