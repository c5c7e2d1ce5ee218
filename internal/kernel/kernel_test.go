package kernel

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unsafe"
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
	// a·b = ±(half an ulp of c) ∓ a tiny rest: the float64 sum lands exactly
	// on a float32 tie that the exact sum is not on, in every binade
	// (subnormal results included) and with both parities of c.
	for i := 0; i < 20000; i++ {
		c := math.Float32frombits(r.Uint32() &^ (1 << 31))
		if isBad(c) || c == 0 {
			continue
		}
		ulp := math.Nextafter32(c, float32(math.Inf(1))) - c
		if isBad(ulp) {
			continue
		}
		e := math.Ilogb(float64(ulp)) - 1 // half an ulp is 2^e
		const eps = 1.0 / (1 << 23)
		a := float32(math.Ldexp(1+eps, e/2))
		b := float32(math.Ldexp(1-eps, e-e/2)) // a·b = 2^e·(1 − 2^−46)
		s := float32(1)
		if r.IntN(2) == 0 {
			s = -1
		}
		cases = append(cases, [3]float32{a, b, c}, [3]float32{a, -b, c}, [3]float32{-a, b, -c}, [3]float32{a * s, b, c})
	}
	doubleRounded := 0
	for _, c := range cases {
		a, b, z := c[0], c[1], c[2]
		if isBad(a) || isBad(b) || isBad(z) {
			continue
		}
		want := exactFMA32(a, b, z)
		if isBad(want) {
			continue
		}
		if float32(float64(a)*float64(b)+float64(z)) != want {
			doubleRounded++
		}
		got := FMA32(a, b, z)
		if math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("FMA32(%g, %g, %g) = %g (%08x), want %g (%08x)", a, b, z, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	if doubleRounded < 1000 {
		t.Fatalf("only %d cases where rounding twice is wrong", doubleRounded)
	}
	t.Logf("%d cases where rounding twice is wrong", doubleRounded)
}

func isBad(f float32) bool { return math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) }

// flavour generates test values.
type flavour struct {
	name string
	gen  func(r *rand.Rand, n, d int) []float64 // n rows of width d, float64 scale
	f32  func(x float64) float64                // maps to a float32-sized value
}

var flavours = []flavour{
	{"normal", func(r *rand.Rand, n, d int) []float64 {
		x := make([]float64, n*d)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		return x
	}, func(x float64) float64 { return x }},
	// Exact zeros, negative zeros, zero rows, repeated rows (ties),
	// subnormals, huge values (overflow to ±Inf is allowed: it is a result
	// like any other) and small integers (exact sums).
	{"special", func(r *rand.Rand, n, d int) []float64 {
		x := make([]float64, n*d)
		for i := range n {
			row := x[i*d : (i+1)*d]
			switch r.IntN(6) {
			case 0: // zero row
				continue
			case 1: // repeat an earlier row
				if i > 0 {
					copy(row, x[r.IntN(i)*d:])
					continue
				}
			}
			for k := range row {
				switch r.IntN(9) {
				case 0:
					row[k] = 0
				case 1:
					row[k] = math.Copysign(0, -1)
				case 2:
					row[k] = float64(r.IntN(7) - 3)
				case 3:
					row[k] = r.NormFloat64() * 1e-310 // subnormal
				case 4:
					row[k] = r.NormFloat64() * 1e153 // products near overflow
				case 5:
					row[k] = r.NormFloat64() * 1e-160 // products underflow
				default:
					row[k] = r.NormFloat64()
				}
			}
		}
		return x
	}, func(x float64) float64 {
		switch a := math.Abs(x); {
		case a == 0 || a > 1e100:
			return math.Copysign(math.Min(a, 1)*1e19, x) // keeps ±0; huge → products near float32 overflow
		case a < 1e-300:
			return x * 1e270 // float32 subnormal
		case a < 1e-100:
			return x * 1e137 // products underflow in float32
		}
		return x
	}},
	// Tiny values of mixed sign: every product underflows, so the
	// accumulators end as +0 or −0 and the sign of zero is checked.
	{"tiny", func(r *rand.Rand, n, d int) []float64 {
		x := make([]float64, n*d)
		for i := range x {
			x[i] = float64(r.IntN(3)-1) * 1e-170
			if r.IntN(4) == 0 {
				x[i] = math.Copysign(0, -1)
			}
		}
		return x
	}, func(x float64) float64 { return x * 1e145 }},
}

func to32(x []float64, f func(float64) float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(f(v))
	}
	return out
}

type blockCase struct {
	d, qn, gn int
	fl        flavour
	q, g      []float64
	q32, g32  []float32
	// The row definition's results, per function.
	dot, sq     []float64
	dot32, sq32 []float32
	blk32       []float32 // DotBlockedRow32 (the screening kernel)
}

func newCase(r *rand.Rand, d, qn, gn int, fl flavour) *blockCase {
	c := &blockCase{d: d, qn: qn, gn: gn, fl: fl, q: fl.gen(r, qn, d), g: fl.gen(r, gn, d)}
	if fl.name == "special" && qn > 1 && gn > 0 {
		copy(c.g[:d], c.q[:d]) // a query that is also a gallery row
	}
	c.q32, c.g32 = to32(c.q, fl.f32), to32(c.g, fl.f32)
	c.dot, c.sq = make([]float64, qn*gn), make([]float64, qn*gn)
	c.dot32, c.sq32 = make([]float32, qn*gn), make([]float32, qn*gn)
	c.blk32 = make([]float32, qn*gn)
	for i := range qn {
		for j := range gn {
			a, b := c.q[i*d:(i+1)*d], c.g[j*d:(j+1)*d]
			c.dot[i*gn+j], c.sq[i*gn+j] = DotRow64(a, b), SqDistRow64(a, b)
			a32, b32 := c.q32[i*d:(i+1)*d], c.g32[j*d:(j+1)*d]
			c.dot32[i*gn+j], c.sq32[i*gn+j] = DotRow32(a32, b32), SqDistRow32(a32, b32)
			c.blk32[i*gn+j] = DotBlockedRow32(a32, b32)
		}
	}
	return c
}

// check runs the four block functions of m on c and compares every bit.
func (c *blockCase) check(t *testing.T, m *impl) {
	t.Helper()
	n := c.qn * c.gn
	// Guard cells past the block catch writes out of bounds.
	out := make([]float64, n+3)
	out32 := make([]float32, n+3)
	for _, f := range []struct {
		name string
		run  func()
		want []float64
	}{
		{"Dot64", func() { m.dot64(c.q, c.qn, c.g, c.gn, c.d, out[:n]) }, c.dot},
		{"SqDist64", func() { m.sqDist64(c.q, c.qn, c.g, c.gn, c.d, out[:n]) }, c.sq},
	} {
		for i := range out {
			out[i] = math.NaN()
		}
		f.run()
		c.compare64(t, m.name+"/"+f.name, out, f.want)
	}
	for _, f := range []struct {
		name string
		run  func()
		want []float32
	}{
		{"Dot32", func() { m.dot32(c.q32, c.qn, c.g32, c.gn, c.d, out32[:n]) }, c.dot32},
		{"SqDist32", func() { m.sqDist32(c.q32, c.qn, c.g32, c.gn, c.d, out32[:n]) }, c.sq32},
		{"DotBlocked32", func() { m.dotBlk32(c.q32, c.qn, c.g32, c.gn, c.d, out32[:n]) }, c.blk32},
	} {
		for i := range out32 {
			out32[i] = float32(math.NaN())
		}
		f.run()
		c.compare32(t, m.name+"/"+f.name, out32, f.want)
	}
}

func (c *blockCase) where(name string, k int) string {
	return fmt.Sprintf("%s %s d=%d qn=%d gn=%d [%d,%d]", name, c.fl.name, c.d, c.qn, c.gn, k/c.gn, k%c.gn)
}

func (c *blockCase) compare64(t *testing.T, name string, out, want []float64) {
	t.Helper()
	for k, w := range want {
		if math.Float64bits(out[k]) != math.Float64bits(w) {
			t.Fatalf("%s = %v (%016x), want %v (%016x)", c.where(name, k), out[k], math.Float64bits(out[k]), w, math.Float64bits(w))
		}
	}
	for k := len(want); k < len(out); k++ {
		if !math.IsNaN(out[k]) {
			t.Fatalf("%s wrote past the block", c.where(name, 0))
		}
	}
}

func (c *blockCase) compare32(t *testing.T, name string, out, want []float32) {
	t.Helper()
	for k, w := range want {
		if math.Float32bits(out[k]) != math.Float32bits(w) {
			t.Fatalf("%s = %v (%08x), want %v (%08x)", c.where(name, k), out[k], math.Float32bits(out[k]), w, math.Float32bits(w))
		}
	}
	for k := len(want); k < len(out); k++ {
		if !math.IsNaN(float64(out[k])) {
			t.Fatalf("%s wrote past the block", c.where(name, 0))
		}
	}
}

var (
	testDims = []int{1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 769}
	testQN   = []int{1, 2, 3, 5, 13}
	testGN   = []int{1, 3, 7, 8, 9, 16, 17, 33, 100}
	// Wider query blocks reach every tile width of every instruction set
	// (a last panel of 1, 2, 3 or 4 vectors of 4, 8 or 16 lanes).
	wideDims = []int{1, 7, 17, 64}
	wideQN   = []int{31, 40, 50, 77}
	wideGN   = []int{1, 5, 11, 23, 100}
	// Whole panels of every width (4…32 float64 queries, 8…64
	// float32 ones) against whole tiles of rows (24 divides every MR): the
	// kernels store such tiles through their own transposing path.
	fullDims = []int{1, 17, 64}
	fullQN   = []int{4, 8, 16, 24, 32, 48, 112}
	fullGN   = []int{24, 100}
)

// forCases calls f on every block shape of the grid; the flavour rotates
// with the shape so that every flavour meets every dimension.
func forCases(f func(c *blockCase)) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 0
	grid := func(dims, qns, gns []int) {
		for _, d := range dims {
			for _, qn := range qns {
				for _, gn := range gns {
					f(newCase(r, d, qn, gn, flavours[n%len(flavours)]))
					n++
				}
			}
		}
	}
	grid(testDims, testQN, testGN)
	grid(wideDims, wideQN, wideGN)
	grid(fullDims, fullQN, fullGN)
}

// Every implementation this CPU runs must reproduce the row definition bit
// for bit, whatever the position of a pair inside a tile.
func TestBlockKernelsMatchRowDefinition(t *testing.T) {
	t.Logf("available: %v", Available())
	forCases(func(c *blockCase) {
		for _, m := range usable {
			c.check(t, m)
		}
	})
	// Larger blocks: several full panels and gallery chunks.
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range [][3]int{{300, 70, 1100}, {5, 130, 3000}, {2000, 33, 77}} {
		for _, fl := range flavours[:2] {
			c := newCase(r, sh[0], sh[1], sh[2], fl)
			for _, m := range usable {
				c.check(t, m)
			}
		}
	}
	// The same with the queries split into blocks of one panel.
	defer func(b int) { simdBlockBytes = b }(simdBlockBytes)
	simdBlockBytes = 1
	c := newCase(r, 300, 70, 1100, flavours[0])
	for _, m := range usable {
		c.check(t, m)
	}
}

func TestRowDefinitionIsTheFMAChain(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a, b := flavours[0].gen(r, 1, 769), flavours[0].gen(r, 1, 769)
	var acc float64
	for k := range a {
		acc = math.FMA(a[k], b[k], acc)
	}
	if DotRow64(a, b) != acc {
		t.Fatal("DotRow64 is not the sequential FMA chain")
	}
}

// The exported functions run the implementation that Use selected.
func TestUse(t *testing.T) {
	defer Use(Name())
	avail := Available()
	if avail[0] != "generic" {
		t.Fatalf("Available() = %v, want generic first", avail)
	}
	r := rand.New(rand.NewPCG(9, 10))
	c := newCase(r, 19, 11, 29, flavours[0])
	for _, name := range avail {
		if err := Use(name); err != nil {
			t.Fatalf("Use(%q): %v", name, err)
		}
		if Name() != name {
			t.Fatalf("after Use(%q), Name() = %q", name, Name())
		}
		c.check(t, &impl{name, Dot64, SqDist64, Dot32, SqDist32, DotBlocked32, MaxFinite32,
			Scan32, ConvertNorm64, noVec})
	}
	if err := Use("auto"); err != nil || Name() != avail[len(avail)-1] {
		t.Fatalf("Use(auto) = %v, Name() = %q; want %q", err, Name(), avail[len(avail)-1])
	}
	before := Name()
	if err := Use("sse9"); err == nil {
		t.Fatal("Use(sse9) succeeded")
	}
	for _, name := range names {
		if !slices.Contains(avail, name) {
			if err := Use(name); err == nil {
				t.Fatalf("Use(%q) succeeded on a CPU without it", name)
			}
		}
	}
	if Name() != before {
		t.Fatalf("a failed Use changed the kernel to %q", Name())
	}
	if EnvErr() != nil {
		t.Logf("%s: %v", EnvVar, EnvErr())
	}
}

// VERTEBRAE_KERNEL is applied at start-up, in a child process.
func TestEnvVar(t *testing.T) {
	if os.Getenv("KERNEL_TEST_CHILD") != "" {
		fmt.Printf("name=%s err=%v\n", Name(), EnvErr() != nil)
		return
	}
	avail := Available()
	best := avail[len(avail)-1]
	cases := [][3]string{
		{"", best, "false"},
		{"auto", best, "false"},
		{"generic", "generic", "false"},
		{" AVX2 ", "avx2", "false"},
		{"bogus", best, "true"},
	}
	if !slices.Contains(avail, "avx2") {
		cases[3] = [3]string{"avx2", best, "true"}
	}
	if !slices.Contains(avail, "avx512") {
		cases = append(cases, [3]string{"avx512", best, "true"})
	}
	for _, c := range cases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestEnvVar$", "-test.v")
		cmd.Env = append(os.Environ(), "KERNEL_TEST_CHILD=1", EnvVar+"="+c[0])
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s=%q: %v\n%s", EnvVar, c[0], err, out)
		}
		if want := fmt.Sprintf("name=%s err=%s", c[1], c[2]); !strings.Contains(string(out), want) {
			t.Errorf("%s=%q: got %s, want %s", EnvVar, c[0], out, want)
		}
	}
}

// goTile is a Go model of a generated tile kernel (the contract in
// internal/asmgen): it lets the SIMD driver be tested on any CPU, with any
// lane width and tile shapes.
func goTile[T float](mr, nr int, sq bool, fma func(a, b, c T) T) tileFn[T] {
	return func(a *T, lda int, p *T, d int, c *T, ldc int, nq, ng int) {
		es := int(unsafe.Sizeof(*a))
		rows := unsafe.Slice(a, (mr-1)*lda/es+d)
		pk := unsafe.Slice(p, d*nr)
		dst := unsafe.Slice(c, (nq-1)*ldc/es+ng)
		for r := range mr {
			row := rows[r*lda/es:][:d]
			for l := range nr {
				var acc T
				for k, g := range row {
					x := pk[k*nr+l]
					if sq {
						t := x - g
						acc = fma(t, t, acc)
					} else {
						acc = fma(x, g, acc)
					}
				}
				if l < nq && r < ng {
					dst[l*ldc/es+r] = acc
				}
			}
		}
	}
}

// goBlkTile is a Go model of a blocked screening tile kernel (dotBlk32):
// it continues the totals at t over d dimensions that start a chunk.
func goBlkTile(mr, nr int) blkTileFn {
	return func(a *float32, lda int, p *float32, d int, c *float32, ldc int, nq, ng int, t *float32, flags int) {
		rows := unsafe.Slice(a, (mr-1)*lda/4+d)
		pk := unsafe.Slice(p, d*nr)
		tot := unsafe.Slice(t, mr*nr)
		if flags&1 != 0 {
			clear(tot)
		}
		for r := range mr {
			row := rows[r*lda/4:][:d]
			for l := range nr {
				for k0 := 0; k0 < d; k0 += ScreenChunk {
					var acc float32
					for k := k0; k < min(d, k0+ScreenChunk); k++ {
						acc = FMA32(pk[k*nr+l], row[k], acc)
					}
					tot[r*nr+l] += acc
				}
			}
		}
		if flags&2 != 0 {
			dst := unsafe.Slice(c, (nq-1)*ldc/4+ng)
			for r := range ng {
				for l := range nq {
					dst[l*ldc/4+r] = tot[r*nr+l]
				}
			}
		}
	}
}

func goTiles[T float](width int, mrs []int, sq bool, fma func(a, b, c T) T) tiles[T] {
	t := tiles[T]{width: width}
	for i, mr := range mrs {
		t.shapes = append(t.shapes, tileShape[T]{mr, i + 1, goTile(mr, (i+1)*width, sq, fma)})
	}
	return t
}

// The driver's packing, panels, chunks and short row groups, with the
// shapes of each instruction set, checked through the Go tile model.
func TestSIMDDriver(t *testing.T) {
	for _, s := range []struct {
		name      string
		w64, w32  int
		mrs       []int
		skipLarge bool
	}{
		{"model-avx2", 4, 8, []int{12, 6}, false},
		{"model-avx512", 8, 16, []int{24, 12, 8, 6}, false},
		{"model-odd", 3, 5, []int{7, 2, 5}, true},
	} {
		set := &simdSet{
			dot64:    goTiles(s.w64, s.mrs, false, math.FMA),
			sqDist64: goTiles(s.w64, s.mrs, true, math.FMA),
			dot32:    goTiles(s.w32, s.mrs, false, FMA32),
			sqDist32: goTiles(s.w32, s.mrs, true, FMA32),
			dotBlk32: blkTiles{width: s.w32},
		}
		for i, mr := range s.mrs {
			set.dotBlk32.shapes = append(set.dotBlk32.shapes, blkShape{mr, i + 1, goBlkTile(mr, (i+1)*s.w32)})
		}
		m := simdImpl(s.name, set)
		forCases(func(c *blockCase) {
			if c.d <= 64 {
				c.check(t, m)
			}
		})
		c := newCase(rand.New(rand.NewPCG(11, 12)), 3, 70, 1100, flavours[0])
		c.check(t, m)
		// Queries split into blocks of one widest panel each.
		saved := simdBlockBytes
		simdBlockBytes = 1
		c.check(t, m)
		c = newCase(rand.New(rand.NewPCG(13, 14)), 17, 77, 50, flavours[1])
		c.check(t, m)
		simdBlockBytes = saved
	}
}

func TestZeroSizes(t *testing.T) {
	for _, m := range usable {
		out := []float64{7, 7}
		m.dot64(nil, 0, nil, 0, 5, out)
		m.dot64([]float64{1, 2}, 1, nil, 0, 2, out)
		m.dot64(nil, 0, []float64{1, 2}, 1, 2, out)
		if out[0] != 7 || out[1] != 7 {
			t.Fatalf("%s wrote an empty block", m.name)
		}
		m.dot64(nil, 1, nil, 2, 0, out) // d = 0: every score is +0
		m.sqDist64(nil, 1, nil, 2, 0, out)
		if math.Float64bits(out[0])|math.Float64bits(out[1]) != 0 {
			t.Fatalf("%s: d = 0 gives %v, want +0", m.name, out)
		}
		out32 := []float32{7, 7}
		m.dot32(nil, 2, nil, 1, 0, out32)
		if math.Float32bits(out32[0])|math.Float32bits(out32[1]) != 0 {
			t.Fatalf("%s: d = 0 gives %v, want +0", m.name, out32)
		}
	}
}

// Every SIMD implementation this CPU has must pass its self-check: one that
// fails is silently left out of Available (and of the tests above).
func TestSelfChecksPass(t *testing.T) {
	if len(failed) > 0 {
		t.Fatalf("failed their self-check on this CPU: %v", failed)
	}
}
