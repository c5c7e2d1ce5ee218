package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// pairs64Case is one Dot64PairsQuery problem: a query row and gallery rows
// of width d at arbitrary (unaligned) element offsets of q and g.
type pairs64Case struct {
	name string
	d    int
	q, g []float64
	goff []int32
}

// pairs64Value draws a finite float64 of distribution dist.
func pairs64Value(r *rand.Rand, dist string) float64 {
	switch dist {
	case "normal":
		return r.NormFloat64()
	case "exponents": // 2^−300 … 2^300: every order gives other roundings
		return r.NormFloat64() * math.Ldexp(1, r.IntN(601)-300)
	case "subnormal": // products underflowing to ±0 or subnormal, some −0 chains
		return r.NormFloat64() * []float64{1e-310, 1e-30, 1e-12}[r.IntN(3)]
	case "overflow": // products near 1e308: chains reach ±Inf
		return r.NormFloat64() * 1.2e154
	}
	panic(dist)
}

// pairs64Fill fills x: for "cancel" every other value mostly negates the
// one before it at a random exponent (x, −x), so partial sums cancel and
// the order of the chain decides the bits.
func pairs64Fill(r *rand.Rand, x []float64, dist string) {
	for i := range x {
		switch {
		case dist == "cancel" && i%2 == 1 && r.IntN(4) != 0:
			x[i] = -x[i-1]
		case dist == "cancel":
			x[i] = r.NormFloat64() * math.Ldexp(1, r.IntN(81)-40)
		case dist == "mixed":
			x[i] = pairs64Value(r, []string{"normal", "exponents", "subnormal", "overflow"}[r.IntN(4)])
			switch r.IntN(10) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = math.Copysign(0, -1)
			}
		default:
			x[i] = pairs64Value(r, dist)
		}
	}
}

// pairs64Cases builds the problems of the tests: widths around the blocks
// of 4 (and the AVX-512 form's 8) dimensions, pair counts around the
// groups of 4 and the calls of 16 pairs, repeated gallery rows, and the
// distributions of pairs64Fill. The query row sits at an odd offset of
// its buffer, the gallery rows at random ones.
func pairs64Cases(r *rand.Rand) []pairs64Case {
	var cases []pairs64Case
	for _, d := range []int{1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 63, 64, 65, 383, 384, 768, 769, 1536} {
		for _, dist := range []string{"normal", "exponents", "cancel", "subnormal", "overflow", "mixed"} {
			const grows = 40
			g := make([]float64, grows*d+13)
			qb := make([]float64, d+3)
			pairs64Fill(r, g, dist)
			pairs64Fill(r, qb, dist)
			q := qb[1+r.IntN(3):][:d]
			for _, n := range []int{1, 3, 4, 5, 15, 16, 17, 100} {
				c := pairs64Case{name: fmt.Sprintf("d=%d/%s/n=%d", d, dist, n), d: d, q: q, g: g, goff: make([]int32, n)}
				for l := range n {
					if l > 0 && r.IntN(8) == 0 {
						c.goff[l] = c.goff[r.IntN(l)] // a repeated row
						continue
					}
					c.goff[l] = int32(r.IntN(len(g) - d + 1))
				}
				cases = append(cases, c)
			}
		}
	}
	return cases
}

// pairs64Mismatch runs f on c and returns a description of the first
// result whose bits differ from DotRow64's (or that is NaN), "" if none.
func pairs64Mismatch(c pairs64Case, f func(q, g []float64, goff []int32, d int, out []float64)) string {
	out := make([]float64, len(c.goff)+1)
	out[len(c.goff)] = 42 // a write past the pairs shows
	f(c.q, c.g, c.goff, c.d, out[:len(c.goff)])
	if out[len(c.goff)] != 42 {
		return "wrote past the last pair"
	}
	for l, o := range c.goff {
		want := DotRow64(c.q, c.g[o:int(o)+c.d])
		got := out[l]
		if got != got {
			return fmt.Sprintf("pair %d: NaN from finite inputs", l)
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			return fmt.Sprintf("pair %d: got %v (%#016x), want %v (%#016x)", l, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	return ""
}

// TestDot64PairsQueryKinds: every Dot64PairsQuery implementation this CPU
// runs (the AVX2 + FMA chains of pairsq64avx2_amd64.s among them when the
// CPU has AVX2 and FMA), called directly whatever the active kernel, gives
// the bits of DotRow64.
func TestDot64PairsQueryKinds(t *testing.T) {
	kinds := pairs64Kinds()
	if !slices.Contains(kinds, pairs64AVX2) {
		t.Logf("AVX2 Dot64PairsQuery not tested: CPU without AVX2/FMA, or a build without assembly (testing %v)", kinds)
	}
	cases := pairs64Cases(rand.New(rand.NewPCG(28, 64)))
	for _, k := range kinds {
		for _, c := range cases {
			if msg := pairs64Mismatch(c, func(q, g []float64, goff []int32, d int, out []float64) {
				dot64PairsQuery(k, q, g, goff, d, out)
			}); msg != "" {
				t.Fatalf("%v %s: %s", k, c.name, msg)
			}
		}
	}
	// The hard cases occur.
	var negZero, inf, sub int
	for _, c := range cases {
		for _, o := range c.goff {
			v := DotRow64(c.q, c.g[o:int(o)+c.d])
			switch {
			case v == 0 && math.Signbit(v):
				negZero++
			case math.IsInf(v, 0):
				inf++
			case v != 0 && math.Abs(v) < 0x1p-1022:
				sub++
			}
		}
	}
	if negZero == 0 || inf == 0 || sub == 0 {
		t.Fatalf("cases without −0 (%d), ±Inf (%d) or subnormal (%d) results", negZero, inf, sub)
	}
}

// TestDot64PairsQueryDispatch: Dot64PairsQuery runs the implementation
// pairs64For names for each kernel, and Dot64PairsQueryFast says whether
// it is a SIMD one.
func TestDot64PairsQueryDispatch(t *testing.T) {
	for _, c := range []struct {
		name         string
		avx512, avx2 bool
		want         pairs64Impl
	}{
		{"avx512", true, true, pairs64AVX512},
		{"avx512", false, true, pairs64AVX2},
		{"avx2", true, true, pairs64AVX2},
		{"avx2", false, true, pairs64AVX2},
		{"avx2", false, false, pairs64Scalar},
		{"generic", true, true, pairs64Scalar},
	} {
		if got := pairs64For(c.name, c.avx512, c.avx2); got != c.want {
			t.Errorf("pairs64For(%q, %v, %v) = %v, want %v", c.name, c.avx512, c.avx2, got, c.want)
		}
	}
	before := Name()
	defer func() {
		if err := Use(before); err != nil {
			t.Fatal(err)
		}
	}()
	for _, name := range Available() {
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		k := pairs64Kind()
		if !slices.Contains(pairs64Kinds(), k) {
			t.Fatalf("kernel %s: Dot64PairsQuery would run %v, which this CPU lacks", name, k)
		}
		if Dot64PairsQueryFast() != (k != pairs64Scalar) {
			t.Errorf("kernel %s: Dot64PairsQueryFast() = %v with %v", name, Dot64PairsQueryFast(), k)
		}
		if name == "generic" && k != pairs64Scalar {
			t.Errorf("kernel generic runs %v", k)
		}
		t.Logf("kernel %s: Dot64PairsQuery runs %v", name, k)
	}
}

// TestDot64PairsQueryCatchesWrongOrder: the cases of
// TestDot64PairsQueryKinds tell a chain with two dimensions swapped, one
// that pads a partial block with zero products, and one that sums in two
// halves from DotRow64.
func TestDot64PairsQueryCatchesWrongOrder(t *testing.T) {
	cases := pairs64Cases(rand.New(rand.NewPCG(28, 64)))
	wrong := map[string]func(a, b []float64) float64{
		"dims 0 and 1 swapped": func(a, b []float64) float64 {
			var acc float64
			for k := range a {
				j := k
				if k < 2 && len(a) > 1 {
					j = 1 - k
				}
				acc = math.FMA(a[j], b[j], acc)
			}
			return acc
		},
		"last two dims swapped": func(a, b []float64) float64 {
			n := len(a)
			var acc float64
			for k := range a {
				j := k
				if n > 1 && k >= n-2 {
					j = 2*n - 3 - k
				}
				acc = math.FMA(a[j], b[j], acc)
			}
			return acc
		},
		"zero-padded to 4": func(a, b []float64) float64 {
			acc := DotRow64(a, b)
			for k := len(a); k%4 != 0; k++ {
				acc = math.FMA(0, 0, acc)
			}
			return acc
		},
		"two chains of alternate dims": func(a, b []float64) float64 {
			var e, o float64
			for k := range a {
				if k%2 == 0 {
					e = math.FMA(a[k], b[k], e)
				} else {
					o = math.FMA(a[k], b[k], o)
				}
			}
			return e + o
		},
	}
	for name, row := range wrong {
		caught := false
		for _, c := range cases {
			if pairs64Mismatch(c, func(q, g []float64, goff []int32, d int, out []float64) {
				for l, o := range goff {
					out[l] = row(q, g[o:int(o)+d])
				}
			}) != "" {
				caught = true
				break
			}
		}
		if !caught {
			t.Errorf("a chain with %s passes the cases", name)
		}
	}
}

// BenchmarkDot64PairsQueryKinds times 4,096 pairs of one query at d = 768
// (gallery rows scattered over 512 rows, as BenchmarkDot64PairsQuery) per
// implementation this CPU runs.
func BenchmarkDot64PairsQueryKinds(b *testing.B) {
	const d, rows, n = 768, 512, 4096
	r := rand.New(rand.NewPCG(1, 2))
	g := make([]float64, rows*d)
	q := make([]float64, d)
	pairs64Fill(r, g, "normal")
	pairs64Fill(r, q, "normal")
	goff := make([]int32, n)
	for l := range goff {
		goff[l] = int32(r.IntN(rows) * d)
	}
	out := make([]float64, n)
	kinds := pairs64Kinds()
	slices.Reverse(kinds)
	for _, k := range kinds {
		b.Run(k.String(), func(b *testing.B) {
			for b.Loop() {
				dot64PairsQuery(k, q, g, goff, d, out)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
		})
	}
}
