package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// divValues mixes ordinary values with the extremes of both types: signed
// zeros, float32 and float64 subnormals, the largest finite values, and
// non-finite ones.
func divValues(r *rand.Rand, n int) []float64 {
	special := []float64{0, math.Copysign(0, -1), 1, -1, 0x1p-149, -0x1p-149, 0x1p-126, math.MaxFloat32, -math.MaxFloat32,
		0x1p-1074, 0x1p-1022, math.MaxFloat64, -math.MaxFloat64, 3, 1.0 / 3, math.Inf(1), math.Inf(-1), math.NaN()}
	v := make([]float64, n)
	for i := range v {
		if r.IntN(4) == 0 {
			v[i] = special[r.IntN(len(special))]
		} else {
			v[i] = r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20)
		}
	}
	return v
}

func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// eachRowLoops runs f with every implementation this CPU has in use, so
// that each one's row loops (scalar, AVX2, AVX-512) are tested.
func eachRowLoops(t *testing.T, f func(t *testing.T)) {
	defer active.Store(active.Load())
	for _, m := range usable {
		active.Store(m)
		t.Run(m.name, f)
	}
}

// TestDivMatchesScalar: the vector loops give the bits of the scalar
// division for every width (whole vectors and tails) and divisor.
func TestDivMatchesScalar(t *testing.T) { eachRowLoops(t, testDivMatchesScalar) }

func testDivMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	divisors := []float64{1, 3, 0.1, 7.5e-300, 1e300, 0x1p-1074, 0x1p-140, math.MaxFloat64, 1.0000000000000002, 0, math.Inf(1)}
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 384, 769} {
		for _, d := range divisors {
			v := divValues(r, n)
			x32 := make([]float32, n)
			for i := range v {
				x32[i] = float32(v[i])
			}
			got32, got64, to32 := make([]float64, n), make([]float64, n), make([]float32, n)
			DivTo64(x32, d, got32)
			DivTo32(x32, d, to32)
			inPlace32 := append([]float32(nil), x32...)
			DivTo32(inPlace32, d, inPlace32)
			Div64(v, d, got64)
			inPlace := append([]float64(nil), v...)
			Div64(inPlace, d, inPlace)
			for i := range v {
				if want := float64(x32[i]) / d; !sameBits(got32[i], want) {
					t.Fatalf("DivTo64 n=%d d=%g i=%d: %g/%g = %x, want %x", n, d, i, x32[i], d, math.Float64bits(got32[i]), math.Float64bits(want))
				}
				if want := float32(float64(x32[i]) / d); !sameBits(float64(to32[i]), float64(want)) || !sameBits(float64(inPlace32[i]), float64(want)) {
					t.Fatalf("DivTo32 n=%d d=%g i=%d: %g/%g = %x (in place %x), want %x", n, d, i, x32[i], d, math.Float32bits(to32[i]), math.Float32bits(inPlace32[i]), math.Float32bits(want))
				}
				if want := v[i] / d; !sameBits(got64[i], want) || !sameBits(inPlace[i], want) {
					t.Fatalf("Div64 n=%d d=%g i=%d: %g/%g = %x (in place %x), want %x", n, d, i, v[i], d, math.Float64bits(got64[i]), math.Float64bits(inPlace[i]), math.Float64bits(want))
				}
			}
		}
	}
}

// TestRowLoopsUsed makes sure the vector loops are the ones tested where
// the CPU has them (the scalar tail alone would pass the tests above): each
// SIMD implementation carries loops, and each of its loops writes every
// lane of a step.
func TestRowLoopsUsed(t *testing.T) {
	for _, m := range usable {
		if (m.rows == noVec) != (m.name == "generic") {
			t.Fatalf("%s: row loops %v", m.name, m.rows)
		}
		if m.rows == noVec {
			continue
		}
		x := []float64{1, 2, 3, 4, 5, 6, 7, 8}
		x32 := []float32{1, 2, 3, 4, 5, 6, 7, 8}
		y, y2 := make([]float64, 8), make([]float64, 8)
		y32 := make([]float32, 8)
		div64Vec(m.rows, &x[0], 1, 2, &y[0])
		div32to64Vec(m.rows, &x32[0], 1, 2, &y2[0])
		div32to32Vec(m.rows, &x32[0], 1, 2, &y32[0])
		for i := range x {
			if y[i] != x[i]/2 || y2[i] != x[i]/2 || y32[i] != x32[i]/2 {
				t.Fatalf("%s lane %d: %g %g %g, want %g", m.name, i, y[i], y2[i], y32[i], x[i]/2)
			}
		}
	}
}

// TestMaxAbsMatchesScalar: the vector loops find the largest magnitude
// and every non-finite value wherever it sits (any lane, vector or tail).
func TestMaxAbsMatchesScalar(t *testing.T) { eachRowLoops(t, testMaxAbsMatchesScalar) }

func testMaxAbsMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 384, 769} {
		for trial := range 40 {
			v := divValues(r, n)
			for i := range v {
				if math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
					v[i] = 1
				}
			}
			if trial%2 == 1 && n > 0 {
				v[r.IntN(n)] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[trial%3]
			}
			x32 := make([]float32, n)
			for i := range v {
				x32[i] = float32(v[i])
			}
			var want64 float64
			var want32 float32
			fin64, fin32 := true, true
			for i := range v {
				a, b := math.Abs(v[i]), float32(math.Abs(float64(x32[i])))
				fin64, fin32 = fin64 && !math.IsNaN(a) && !math.IsInf(a, 0), fin32 && !math.IsNaN(float64(b)) && !math.IsInf(float64(b), 0)
				want64, want32 = max(want64, a), max(want32, b)
			}
			got64, f64 := MaxAbs64(v)
			got32, f32 := MaxAbs32(x32)
			if f64 != fin64 || (fin64 && math.Float64bits(got64) != math.Float64bits(want64)) {
				t.Fatalf("MaxAbs64 n=%d trial %d: (%v, %v), want (%v, %v)", n, trial, got64, f64, want64, fin64)
			}
			if f32 != fin32 || (fin32 && math.Float32bits(got32) != math.Float32bits(want32)) {
				t.Fatalf("MaxAbs32 n=%d trial %d: (%v, %v), want (%v, %v)", n, trial, got32, f32, want32, fin32)
			}
		}
	}
}

// BenchmarkRowPrep times each implementation's row loops on 384-wide rows
// (the gallery preparation of a cosine run divides every value twice).
func BenchmarkRowPrep(b *testing.B) {
	const d = 384
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, d)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]float64, d)
	defer active.Store(active.Load())
	for _, m := range usable {
		active.Store(m)
		b.Run(m.name+"/DivTo64", func(b *testing.B) {
			b.SetBytes(4 * d)
			for b.Loop() {
				DivTo64(x, 1.75, y)
			}
		})
		b.Run(m.name+"/MaxAbs32", func(b *testing.B) {
			b.SetBytes(4 * d)
			for b.Loop() {
				MaxAbs32(x)
			}
		})
	}
}

// TestRowLoopsDoNotAllocate: the row loops and scans run per row of every
// endpoint and per score row, so none may allocate (an output array that
// escapes to the heap costs a cosine run tens of MB of garbage).
func TestRowLoopsDoNotAllocate(t *testing.T) {
	x32 := make([]float32, 64)
	x64 := make([]float64, 64)
	y64 := make([]float64, 64)
	y32 := make([]float32, 64)
	idx := make([]int32, 64)
	for i := range x32 {
		x32[i], x64[i] = float32(i+1), float64(i+1)
	}
	defer active.Store(active.Load())
	for _, m := range usable {
		active.Store(m)
		allocs := testing.AllocsPerRun(20, func() {
			MaxAbs32(x32)
			MaxAbs64(x64)
			DivTo64(x32, 3, y64)
			DivTo32(x32, 3, y32)
			Div64(x64, 3, y64)
			MaxFinite32(x32)
			Scan32(x32, Cut{8, 2, 4, 60}, idx)
			ConvertNorm64(x64, y32)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per row", m.name, allocs)
		}
	}
}
