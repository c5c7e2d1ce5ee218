//go:build amd64 && !purego

package kernel

import "golang.org/x/sys/cpu"

// divSIMD selects the AVX-512 division loops (a variable so that tests
// compare them with the scalar loop).
var divSIMD = cpu.X86.HasAVX512F

// div32to64AVX512 writes float64(x[i]) / d to y[i] for i < 8n (n ≥ 1).
//
//go:noescape
func div32to64AVX512(x *float32, n int, d float64, y *float64)

// div64AVX512 writes x[i] / d to y[i] for i < 8n (n ≥ 1).
//
//go:noescape
func div64AVX512(x *float64, n int, d float64, y *float64)
