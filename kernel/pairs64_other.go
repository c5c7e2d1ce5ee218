//go:build !amd64 || purego

package kernel

func dot64PairsQuerySIMD(q []float64, g []float64, goff []int32, d int, out []float64) {
	panic("unreachable")
}
