package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// pairs32Case is one Dot32Pairs problem: rows of width d at arbitrary
// (unaligned) element offsets of q and g.
type pairs32Case struct {
	name       string
	d          int
	q, g       []float32
	qoff, goff []int32
}

// pairs32Value draws a finite float32 of distribution dist.
func pairs32Value(r *rand.Rand, dist string) float32 {
	switch dist {
	case "normal":
		return float32(r.NormFloat64())
	case "exponents": // 2^−60 … 2^60: every order gives other roundings
		return float32(r.NormFloat64() * math.Ldexp(1, r.IntN(121)-60))
	case "subnormal": // products and sums in the subnormal range, some −0 chains
		if r.IntN(2) == 0 {
			return float32(r.NormFloat64() * 1e-41)
		}
		return float32(r.NormFloat64() * 1e-3)
	case "overflow": // products near 1e38: chains reach ±Inf
		return float32(r.NormFloat64() * 1.5e19)
	}
	panic(dist)
}

// pairs32Fill fills x: for "cancel" every other value negates the one
// before it at a random exponent (x, −x), so partial sums cancel and the
// order of the chain decides the bits.
func pairs32Fill(r *rand.Rand, x []float32, dist string) {
	for i := range x {
		switch {
		case dist == "cancel" && i%2 == 1 && r.IntN(4) != 0:
			x[i] = -x[i-1]
		case dist == "cancel":
			x[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(41)-20))
		case dist == "mixed":
			x[i] = pairs32Value(r, []string{"normal", "exponents", "subnormal", "overflow"}[r.IntN(4)])
			if r.IntN(8) == 0 {
				x[i] = 0
			}
		default:
			x[i] = pairs32Value(r, dist)
		}
	}
}

// pairs32Cases builds the problems of the tests: widths around the blocks
// of 8 and 16 dimensions, pair counts around the groups of 8 and the
// batches of 32, queries shared by every pair, distinct per pair, or in
// runs of random lengths (as rank lists them), and the distributions of
// pairs32Fill.
func pairs32Cases(r *rand.Rand) []pairs32Case {
	var cases []pairs32Case
	for _, d := range []int{1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 383, 384, 768, 769, 1536} {
		for _, dist := range []string{"normal", "exponents", "cancel", "subnormal", "overflow", "mixed"} {
			const grows, qrows = 40, 9
			// Rows at random element offsets of buffers with slack.
			g := make([]float32, grows*d+13)
			q := make([]float32, qrows*d+11)
			pairs32Fill(r, g, dist)
			pairs32Fill(r, q, dist)
			qrow := make([]int32, qrows)
			for i := range qrow {
				qrow[i] = int32(r.IntN(len(q) - d + 1))
			}
			for _, n := range []int{1, 7, 8, 9, 16, 17, 100} {
				for _, qmode := range []string{"shared", "distinct", "runs"} {
					c := pairs32Case{name: fmt.Sprintf("d=%d/%s/n=%d/%s", d, dist, n, qmode), d: d, q: q, g: g,
						qoff: make([]int32, n), goff: make([]int32, n)}
					run, cur := 0, qrow[0]
					for l := range n {
						c.goff[l] = int32(r.IntN(len(g) - d + 1))
						switch qmode {
						case "shared":
							c.qoff[l] = qrow[0]
						case "distinct":
							c.qoff[l] = int32(r.IntN(len(q) - d + 1))
						case "runs":
							if run == 0 {
								run, cur = 1+r.IntN(20), qrow[r.IntN(qrows)]
							}
							c.qoff[l] = cur
							run--
						}
					}
					cases = append(cases, c)
				}
			}
		}
	}
	return cases
}

// pairs32Mismatch runs f on c and returns a description of the first
// result whose bits differ from DotRow32's (or that is NaN), "" if none.
func pairs32Mismatch(c pairs32Case, f func(q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32)) string {
	out := make([]float32, len(c.goff)+1)
	out[len(c.goff)] = 42 // a write past the pairs shows
	f(c.q, c.qoff, c.g, c.goff, c.d, out[:len(c.goff)])
	if out[len(c.goff)] != 42 {
		return "wrote past the last pair"
	}
	for l, o := range c.goff {
		want := DotRow32(c.q[c.qoff[l]:int(c.qoff[l])+c.d], c.g[o:int(o)+c.d])
		got := out[l]
		if got != got {
			return fmt.Sprintf("pair %d: NaN from finite inputs", l)
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			return fmt.Sprintf("pair %d: got %v (%#08x), want %v (%#08x)", l, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	return ""
}

// TestDot32PairsKinds: every Dot32Pairs implementation this CPU runs,
// called directly whatever the active kernel, gives the bits of DotRow32.
func TestDot32PairsKinds(t *testing.T) {
	kinds := pairs32Kinds()
	if !slices.Contains(kinds, pairs32AVX2) {
		t.Logf("no AVX2 Dot32Pairs here (CPU without AVX2/FMA, or a build without assembly): testing %v", kinds)
	}
	cases := pairs32Cases(rand.New(rand.NewPCG(28, 32)))
	var negZero, inf int
	for _, k := range kinds {
		for _, c := range cases {
			if msg := pairs32Mismatch(c, func(q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32) {
				dot32Pairs(k, q, qoff, g, goff, d, out)
			}); msg != "" {
				t.Fatalf("%v %s: %s", k, c.name, msg)
			}
		}
	}
	// The hard cases occur.
	for _, c := range cases {
		for l, o := range c.goff {
			v := DotRow32(c.q[c.qoff[l]:int(c.qoff[l])+c.d], c.g[o:int(o)+c.d])
			if v == 0 && math.Signbit(float64(v)) {
				negZero++
			}
			if math.IsInf(float64(v), 0) {
				inf++
			}
		}
	}
	if negZero == 0 || inf == 0 {
		t.Fatalf("cases without −0 (%d) or ±Inf (%d) results", negZero, inf)
	}
}

// TestDot32PairsCatchesWrongOrder: the cases of TestDot32PairsKinds tell a
// chain with two dimensions swapped, or one that pads a partial block with
// zero products, from DotRow32.
func TestDot32PairsCatchesWrongOrder(t *testing.T) {
	cases := pairs32Cases(rand.New(rand.NewPCG(28, 32)))
	wrong := map[string]func(a, b []float32) float32{
		"dims 0 and 1 swapped": func(a, b []float32) float32 {
			var acc float32
			for k := range a {
				j := k
				if k < 2 && len(a) > 1 {
					j = 1 - k
				}
				acc = FMA32(a[j], b[j], acc)
			}
			return acc
		},
		"last two dims swapped": func(a, b []float32) float32 {
			n := len(a)
			var acc float32
			for k := range a {
				j := k
				if n > 1 && k >= n-2 {
					j = 2*n - 3 - k
				}
				acc = FMA32(a[j], b[j], acc)
			}
			return acc
		},
		"zero-padded to 8": func(a, b []float32) float32 {
			acc := DotRow32(a, b)
			for k := len(a); k%8 != 0; k++ {
				acc = FMA32(0, 0, acc)
			}
			return acc
		},
	}
	for name, row := range wrong {
		caught := false
		for _, c := range cases {
			if pairs32Mismatch(c, func(q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32) {
				for l, o := range goff {
					out[l] = row(q[qoff[l]:int(qoff[l])+d], g[o:int(o)+d])
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

// BenchmarkDot32Pairs times 1,024 pairs at d = 768 (gallery rows
// scattered over 8,192 rows) per implementation this CPU runs: queries in
// runs of 1–16 pairs ("runs", like rank's lists), one query for all
// ("shared") or a query per pair ("distinct").
func BenchmarkDot32Pairs(b *testing.B) {
	const d, rows, qrows, n = 768, 8192, 128, 1024
	r := rand.New(rand.NewPCG(1, 2))
	g := make([]float32, rows*d)
	q := make([]float32, qrows*d)
	pairs32Fill(r, g, "normal")
	pairs32Fill(r, q, "normal")
	goff := make([]int32, n)
	for l := range goff {
		goff[l] = int32(r.IntN(rows) * d)
	}
	qoffs := map[string][]int32{}
	for _, mode := range []string{"runs", "shared", "distinct"} {
		qoff := make([]int32, n)
		run, cur := 0, int32(0)
		for l := range qoff {
			switch mode {
			case "distinct":
				qoff[l] = int32(r.IntN(qrows) * d)
			case "runs":
				if run == 0 {
					run, cur = 1+r.IntN(16), int32(r.IntN(qrows)*d)
				}
				qoff[l] = cur
				run--
			}
		}
		qoffs[mode] = qoff
	}
	out := make([]float32, n)
	for _, k := range pairs32Kinds() {
		for _, mode := range []string{"runs", "shared", "distinct"} {
			b.Run(k.String()+"/"+mode, func(b *testing.B) {
				for b.Loop() {
					dot32Pairs(k, q, qoffs[mode], g, goff, d, out)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
			})
		}
	}
}
