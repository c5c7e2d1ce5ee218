//go:build !amd64 || purego

package kernel

func pairs64Kind() pairs64Impl { return pairs64For(Name(), false, false) }

func pairs64Kinds() []pairs64Impl { return []pairs64Impl{pairs64Scalar} }

func dot64PairsQuerySIMD(q []float64, g []float64, goff []int32, d int, out []float64) {
	panic("unreachable")
}

func dot64PairsQueryAVX2(q []float64, g []float64, goff []int32, d int, out []float64) {
	panic("unreachable")
}
