package kernel

// Row division by a scalar (SPEC §4.1 step 3: the cosine working value
// y_i = x_i / ‖x‖ and the scaled value x_i / m of the norm). IEEE division
// is correctly rounded, so a vector division gives the bits of the scalar
// one whatever the implementation; the vector code only changes the speed
// of the per-row preparation of large endpoints.

// DivTo64 writes float64(x[i]) / d to y[i] for every i (len(y) ≥ len(x)).
func DivTo64(x []float32, d float64, y []float64) {
	y = y[:len(x)]
	n := 0
	if len(x) >= 8 && divSIMD {
		n = len(x) &^ 7
		div32to64AVX512(&x[0], n/8, d, &y[0])
	}
	for i := n; i < len(x); i++ {
		y[i] = float64(x[i]) / d
	}
}

// Div64 writes x[i] / d to y[i] for every i (len(y) ≥ len(x); y may be x).
func Div64(x []float64, d float64, y []float64) {
	y = y[:len(x)]
	n := 0
	if len(x) >= 8 && divSIMD {
		n = len(x) &^ 7
		div64AVX512(&x[0], n/8, d, &y[0])
	}
	for i := n; i < len(x); i++ {
		y[i] = x[i] / d
	}
}
