//go:build !amd64 || purego

package kernel

var divSIMD = false

func div32to64AVX512(*float32, int, float64, *float64) { panic("unreachable") }

func div64AVX512(*float64, int, float64, *float64) { panic("unreachable") }

func maxAbs32AVX512(*float32, int, *float32) { panic("unreachable") }

func maxAbs64AVX512(*float64, int, *float64) { panic("unreachable") }

func div32to32AVX512(*float32, int, float64, *float32) { panic("unreachable") }
