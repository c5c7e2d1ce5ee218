package kernel

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactFMA32 rounds a*b+c computed exactly to float32 (round to nearest even).
func exactFMA32(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

func TestFMA32CorrectlyRounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := [][3]float32{
		{1, 1, 0},
		{0, 5, -0},
		// a*b close to −c: catastrophic cancellation.
		{1.0000001, 1.0000001, -1.0000002},
		// A product whose float64 rounding would create a false tie.
		{float32(1 + 1.0/(1<<12)), float32(1 + 1.0/(1<<12)), float32(1.0 / (1 << 30))},
	}
	for i := 0; i < 200000; i++ {
		a := math.Float32frombits(r.Uint32())
		b := math.Float32frombits(r.Uint32())
		c := math.Float32frombits(r.Uint32())
		if r.IntN(2) == 0 { // keep many cases in a sane range
			a, b, c = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())*float32(math.Ldexp(1, r.IntN(60)-30))
		}
		cases = append(cases, [3]float32{a, b, c})
	}
	for _, c := range cases {
		a, b, z := c[0], c[1], c[2]
		if isBad(a) || isBad(b) || isBad(z) {
			continue
		}
		want := exactFMA32(a, b, z)
		if isBad(want) {
			continue
		}
		got := FMA32(a, b, z)
		if math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("FMA32(%g, %g, %g) = %g (%08x), want %g (%08x)", a, b, z, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

func isBad(f float32) bool { return math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) }

// The tiled kernels must reproduce the one-accumulator definition exactly,
// whatever the position of a pair inside a tile.
func TestBlockKernelsMatchRowDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range []int{1, 3, 17, 64, 769} {
		for _, qn := range []int{1, 2, 5} {
			gn := 11
			q := make([]float64, qn*d)
			g := make([]float64, gn*d)
			for i := range q {
				q[i] = r.NormFloat64()
			}
			for i := range g {
				g[i] = r.NormFloat64()
			}
			q32, g32 := to32(q), to32(g)
			out := make([]float64, qn*gn)
			out32 := make([]float32, qn*gn)
			Dot64(q, qn, g, gn, d, out)
			check64(t, "Dot64", out, qn, gn, func(i, j int) float64 { return DotRow64(q[i*d:(i+1)*d], g[j*d:(j+1)*d]) })
			SqDist64(q, qn, g, gn, d, out)
			check64(t, "SqDist64", out, qn, gn, func(i, j int) float64 { return SqDistRow64(q[i*d:(i+1)*d], g[j*d:(j+1)*d]) })
			Dot32(q32, qn, g32, gn, d, out32)
			check32(t, "Dot32", out32, qn, gn, func(i, j int) float32 { return DotRow32(q32[i*d:(i+1)*d], g32[j*d:(j+1)*d]) })
			SqDist32(q32, qn, g32, gn, d, out32)
			check32(t, "SqDist32", out32, qn, gn, func(i, j int) float32 { return SqDistRow32(q32[i*d:(i+1)*d], g32[j*d:(j+1)*d]) })
			// And the row definition is the sequential FMA chain itself.
			var acc float64
			for k := 0; k < d; k++ {
				acc = math.FMA(q[k], g[k], acc)
			}
			if DotRow64(q[:d], g[:d]) != acc {
				t.Fatal("DotRow64 is not the sequential FMA chain")
			}
		}
	}
}

func to32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func check64(t *testing.T, name string, out []float64, qn, gn int, want func(i, j int) float64) {
	t.Helper()
	for i := 0; i < qn; i++ {
		for j := 0; j < gn; j++ {
			if w := want(i, j); math.Float64bits(out[i*gn+j]) != math.Float64bits(w) {
				t.Fatalf("%s[%d,%d] = %v, want %v", name, i, j, out[i*gn+j], w)
			}
		}
	}
}

func check32(t *testing.T, name string, out []float32, qn, gn int, want func(i, j int) float32) {
	t.Helper()
	for i := 0; i < qn; i++ {
		for j := 0; j < gn; j++ {
			if w := want(i, j); math.Float32bits(out[i*gn+j]) != math.Float32bits(w) {
				t.Fatalf("%s[%d,%d] = %v, want %v", name, i, j, out[i*gn+j], w)
			}
		}
	}
}

func BenchmarkDot64(b *testing.B) {
	const qn, gn, d = 64, 1024, 768
	q, g := make([]float64, qn*d), make([]float64, gn*d)
	for i := range q {
		q[i] = float64(i%7) - 3
	}
	for i := range g {
		g[i] = float64(i%5) - 2
	}
	out := make([]float64, qn*gn)
	b.SetBytes(0)
	for b.Loop() {
		Dot64(q, qn, g, gn, d, out)
	}
	b.ReportMetric(float64(2*qn*gn*d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
