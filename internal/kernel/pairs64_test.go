package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDot64PairsMatchesDotRow64 compares Dot64PairsQuery (one query row
// for all pairs) with DotRow64 bit for bit under every available kernel (the AVX-512 chains run only under
// avx512; the others and -tags purego take the portable loop) on scattered
// pairs: repeats, short last groups of 16 pairs, every partial last block
// of 8 dimensions, values from subnormal to overflowing, signed zeros.
func TestDot64PairsMatchesDotRow64(t *testing.T) {
	before := Name()
	defer func() {
		if err := Use(before); err != nil {
			t.Fatal(err)
		}
	}()
	r := rand.New(rand.NewPCG(11, 12))
	val := func() float64 {
		switch r.IntN(12) {
		case 0:
			return r.NormFloat64() * 1e-310 // subnormal
		case 1:
			return r.NormFloat64() * 1e-160 // products underflow
		case 2:
			return r.NormFloat64() * 1e155 // products near overflow
		case 3:
			return 0
		case 4:
			return math.Copysign(0, -1)
		default:
			return r.NormFloat64()
		}
	}
	for _, name := range Available() {
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		for _, d := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 384, 769} {
			const rows, qrows = 40, 6
			g := make([]float64, rows*d)
			for i := range g {
				g[i] = val()
			}
			q := make([]float64, qrows*d)
			for i := range q {
				q[i] = val()
			}
			for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 63, 64, 65} {
				goff, qoff := make([]int32, n), make([]int32, n)
				for l := range goff {
					goff[l], qoff[l] = int32(r.IntN(rows)*d), int32(r.IntN(qrows)*d)
				}
				out := make([]float64, n)
				qr := q[qoff[0] : int(qoff[0])+d]
				Dot64PairsQuery(qr, g, goff, d, out)
				for l, o := range goff {
					want := DotRow64(qr, g[o:int(o)+d])
					got := out[l]
					if math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) {
						t.Fatalf("%s query d=%d n=%d lane %d: got %v, want %v (SIMD %v)", name, d, n, l, got, want, gatherSIMD())
					}
				}
			}
		}
	}
}

// TestDot64PairsNegativeZero: a chain that underflows to −0 keeps its sign
// (the tail must not add 0·0 for dimensions beyond d).
func TestDot64PairsNegativeZero(t *testing.T) {
	for _, d := range []int{1, 3, 8, 11} {
		q := make([]float64, d)
		g := make([]float64, d)
		q[d-1], g[d-1] = -0x1p-600, 0x1p-600 // the last product rounds to −0
		want := DotRow64(q, g)
		if !math.Signbit(want) || want != 0 {
			t.Fatalf("d=%d: DotRow64 = %v, want −0", d, want)
		}
		out := make([]float64, 17)
		Dot64PairsQuery(q, g, make([]int32, 17), d, out)
		for l, v := range out {
			if math.Float64bits(v) != math.Float64bits(want) {
				t.Fatalf("query d=%d lane %d: got %v, want −0", d, l, v)
			}
		}
	}
}

func BenchmarkDot64PairsQuery(b *testing.B) {
	const d, rows, n = 768, 512, 4096
	r := rand.New(rand.NewPCG(1, 2))
	g := make([]float64, rows*d)
	q := make([]float64, d)
	for i := range g {
		g[i] = r.NormFloat64()
	}
	for i := range q {
		q[i] = r.NormFloat64()
	}
	goff := make([]int32, n)
	for l := range goff {
		goff[l] = int32(r.IntN(rows) * d)
	}
	out := make([]float64, n)
	b.SetBytes(n) // pairs
	for b.Loop() {
		Dot64PairsQuery(q, g, goff, d, out)
	}
}
