//go:build amd64 && !purego

package kernel

// The row loops of an instruction set (v is vecAVX2 or vecAVX512).

func div32to64Vec(v vecISA, x *float32, n int, d float64, y *float64) {
	if v == vecAVX512 {
		div32to64AVX512(x, n, d, y)
	} else {
		div32to64AVX2(x, n, d, y)
	}
}

func div64Vec(v vecISA, x *float64, n int, d float64, y *float64) {
	if v == vecAVX512 {
		div64AVX512(x, n, d, y)
	} else {
		div64AVX2(x, n, d, y)
	}
}

func div32to32Vec(v vecISA, x *float32, n int, d float64, y *float32) {
	if v == vecAVX512 {
		div32to32AVX512(x, n, d, y)
	} else {
		div32to32AVX2(x, n, d, y)
	}
}

func maxAbs32Vec(v vecISA, x *float32, n int, out *float32) {
	if v == vecAVX512 {
		maxAbs32AVX512(x, n, out)
	} else {
		maxAbs32AVX2(x, n, out)
	}
}

func maxAbs64Vec(v vecISA, x *float64, n int, out *float64) {
	if v == vecAVX512 {
		maxAbs64AVX512(x, n, out)
	} else {
		maxAbs64AVX2(x, n, out)
	}
}

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

// div32to64AVX2 is div32to64AVX512 with AVX2 (two ymm of 4 lanes a step).
//
//go:noescape
func div32to64AVX2(x *float32, n int, d float64, y *float64)

// div64AVX2 is div64AVX512 with AVX2.
//
//go:noescape
func div64AVX2(x *float64, n int, d float64, y *float64)

// div32to32AVX2 is div32to32AVX512 with AVX2.
//
//go:noescape
func div32to32AVX2(x *float32, n int, d float64, y *float32)

// maxAbs32AVX2 is maxAbs32AVX512 with AVX2: out lane l < 8 covers the
// values 16m+l, lane 8+l those of 16m+8+l.
//
//go:noescape
func maxAbs32AVX2(x *float32, n int, out *float32)

// maxAbs64AVX2 is maxAbs64AVX512 with AVX2 (steps of 8 values as two ymm).
//
//go:noescape
func maxAbs64AVX2(x *float64, n int, out *float64)
