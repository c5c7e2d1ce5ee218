package kernel

import "math"

// Per-row preparation of large endpoints (SPEC §4.1 steps 3–4): the
// largest magnitude of a row with its finiteness, and the division of a
// row by a scalar (the scaled value x_i / m of the norm and the cosine
// working value y_i = x_i / ‖x‖). IEEE division is correctly rounded and a
// maximum does not depend on the order, so the vector loops give the bits
// of the scalar ones whatever the implementation; they only change the
// speed.

// vecISA names the instruction set of the row loops: the implementation
// in use (Use, VERTEBRAE_KERNEL) carries it, and noVec means the scalar
// loops. The loops (rowprep_amd64.go) take whole steps of 8 values (the
// divisions, maxAbs64) or 16 (maxAbs32). They are called directly, not
// through function values, so that their output arrays stay on the stack.
type vecISA uint8

const (
	noVec vecISA = iota
	vecAVX2
	vecAVX512
)

func rowLoops() vecISA { return active.Load().rows }

// DivTo64 writes float64(x[i]) / d to y[i] for every i (len(y) ≥ len(x)).
func DivTo64(x []float32, d float64, y []float64) {
	y = y[:len(x)]
	n := 0
	if v := rowLoops(); v != noVec && len(x) >= 8 {
		n = len(x) &^ 7
		div32to64Vec(v, &x[0], n/8, d, &y[0])
	}
	for i := n; i < len(x); i++ {
		y[i] = float64(x[i]) / d
	}
}

// DivTo32 writes float32(float64(x[i]) / d) to y[i] for every i (len(y) ≥
// len(x); y may be x): the quotient rounded to float32 once it is formed in
// float64, as the float32 protocol's working values are (SPEC §4.1).
func DivTo32(x []float32, d float64, y []float32) {
	y = y[:len(x)]
	n := 0
	if v := rowLoops(); v != noVec && len(x) >= 8 {
		n = len(x) &^ 7
		div32to32Vec(v, &x[0], n/8, d, &y[0])
	}
	for i := n; i < len(x); i++ {
		y[i] = float32(float64(x[i]) / d)
	}
}

// Div64 writes x[i] / d to y[i] for every i (len(y) ≥ len(x); y may be x).
func Div64(x []float64, d float64, y []float64) {
	y = y[:len(x)]
	n := 0
	if v := rowLoops(); v != noVec && len(x) >= 8 {
		n = len(x) &^ 7
		div64Vec(v, &x[0], n/8, d, &y[0])
	}
	for i := n; i < len(x); i++ {
		y[i] = x[i] / d
	}
}

// MaxAbs32 returns max |x[i]| (+0 for an empty x) and whether every value
// is finite; the maximum is meaningful only when they are.
func MaxAbs32(x []float32) (float32, bool) {
	n := 0
	var m float32
	fin := true
	if v := rowLoops(); v != noVec && len(x) >= 16 {
		n = len(x) &^ 15
		var out [32]float32
		maxAbs32Vec(v, &x[0], n/16, &out[0])
		bad := uint32(0)
		for l := range 16 {
			m = max(m, out[l])
			bad |= math.Float32bits(out[16+l])
		}
		fin = bad == 0
	}
	for _, v := range x[n:] {
		a := float32(math.Abs(float64(v)))
		fin = fin && a-a == 0
		if a > m {
			m = a
		}
	}
	return m, fin
}

// MaxAbs64 is MaxAbs32 for float64 values.
func MaxAbs64(x []float64) (float64, bool) {
	n := 0
	var m float64
	fin := true
	if v := rowLoops(); v != noVec && len(x) >= 8 {
		n = len(x) &^ 7
		var out [16]float64
		maxAbs64Vec(v, &x[0], n/8, &out[0])
		bad := uint64(0)
		for l := range 8 {
			m = max(m, out[l])
			bad |= math.Float64bits(out[8+l])
		}
		fin = bad == 0
	}
	for _, v := range x[n:] {
		a := math.Abs(v)
		fin = fin && a-a == 0
		if a > m {
			m = a
		}
	}
	return m, fin
}
