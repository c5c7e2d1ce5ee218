//go:build amd64 && !purego

package kernel

import "golang.org/x/sys/cpu"

// divSIMD selects the AVX-512 loops (a variable so that tests
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

// maxAbs32AVX512 writes, per lane of n ≥ 1 vectors of 16 values at x, the
// largest |x| to out[0:16] and the OR of the bits of |x| − |x| (zero
// exactly when every value is finite) to out[16:32].
//
//go:noescape
func maxAbs32AVX512(x *float32, n int, out *float32)

// maxAbs64AVX512 is maxAbs32AVX512 for n ≥ 1 vectors of 8 float64 values
// (out[0:8] and out[8:16]).
//
//go:noescape
func maxAbs64AVX512(x *float64, n int, out *float64)

// div32to32AVX512 writes float32(float64(x[i]) / d) to y[i] for i < 8n (n ≥ 1).
//
//go:noescape
func div32to32AVX512(x *float32, n int, d float64, y *float32)
