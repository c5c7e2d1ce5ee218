//go:build amd64 && !purego

package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// The AVX2 passes of quantavx2_amd64.s are checked bit for bit against a
// scalar model of the lane structure of the AVX-512 passes (quant_amd64.s),
// against the AVX-512 passes themselves where the CPU has them, and on the
// int16 outputs and Σ Q² against the portable loops of int16.go; the
// float64 sums against the portable loops within the bound of
// AbsMaxSumSq32 and Quantise16.

// quantLanes are the raw outputs of one SIMD pass over nb whole blocks.
type quantLanes struct {
	m   [16]float32 // absMaxSumSq32: lane maxima
	s   [8]float64  // absMaxSumSq32: lane sums of squares
	out [16]float64 // quant16: Q² lanes, then δ² lanes
	q   []int16     // quant16: the int16 image
}

// quantModel is the scalar model of absMaxSumSq32AVX512 (16 lanes: VMAXPS
// with the running maximum as first operand, two FMA chains per float64
// lane added at the end) and quant16AVX512 (8 lanes; VCVTPD2DQ gives
// 0x80000000 outside the int32 range, VPMOVDW keeps the low 16 bits).
// lanes4 and awayFromZero make the deliberately broken variants the checks
// must catch: 4 float64 lanes (a plain ymm port) and rounding half away
// from zero.
type quantModel struct{ lanes4, awayFromZero bool }

func (md quantModel) absMax(x []float32) (m [16]float32, s [8]float64) {
	var c [16]float64
	for b := 0; b+16 <= len(x); b += 16 {
		for l := range 16 {
			v := x[b+l]
			if a := float32(math.Abs(float64(v))); !(m[l] > a) {
				m[l] = a
			}
			f := float64(v)
			c[l] = math.FMA(f, f, c[l])
		}
	}
	if md.lanes4 { // four chains per 8 values, folded to 4 then 8 sums
		var c4 [4]float64
		for b := 0; b+4 <= len(x)/16*16; b += 4 {
			for l := range 4 {
				f := float64(x[b+l])
				c4[l] = math.FMA(f, f, c4[l])
			}
		}
		copy(s[:4], c4[:])
		return m, s
	}
	for l := range 8 {
		s[l] = c[l] + c[l+8]
	}
	return m, s
}

func (md quantModel) quant(x []float32, inv, sigma float64, q []int16) (out [16]float64) {
	w := 8
	if md.lanes4 {
		w = 4
	}
	for b := 0; b+8 <= len(x); b += 8 {
		for k := range 8 {
			f := float64(x[b+k])
			t := math.RoundToEven(f * inv)
			if md.awayFromZero {
				t = math.Round(f * inv)
			}
			i32 := int32(math.MinInt32)
			if t >= -0x1p31 && t < 0x1p31 {
				i32 = int32(t)
			}
			q[b+k] = int16(i32)
			dl := math.FMA(-sigma, t, f)
			l := k % w
			out[l] = math.FMA(t, t, out[l])
			out[8+l] = math.FMA(dl, dl, out[8+l])
		}
	}
	return out
}

// combine is the wrapper of int16_amd64.go over the lanes.
func (ln *quantLanes) combine(x []float32, inv, sigma float64) (mx, ss, n2, rr float64, q []int16) {
	nb := len(x) / 16 * 16
	mx, ss = absMaxSumSq32Generic(x[nb:])
	for _, v := range ln.m {
		mx = max(mx, float64(v))
	}
	for _, v := range ln.s {
		ss += v
	}
	nq := len(x) / 8 * 8
	q = append([]int16(nil), ln.q...)
	n2, rr = quantise16Generic(x[nq:], inv, sigma, q[nq:])
	for l := range 8 {
		n2 += ln.out[l]
		rr += ln.out[8+l]
	}
	return mx, ss, n2, rr, q
}

// lanesOf runs a pass (nil: the model md) over the whole blocks of x.
func lanesOf(k quantImpl, md quantModel, x []float32, inv, sigma float64) quantLanes {
	ln := quantLanes{q: make([]int16, len(x)+8)}
	for i := range ln.q {
		ln.q[i] = 0x5a5a // sentinel: the passes write whole blocks only
	}
	nb, nq := len(x)/16, len(x)/8
	switch k {
	case quantGeneric:
		ln.m, ln.s = md.absMax(x)
		if nq > 0 {
			ln.out = md.quant(x, inv, sigma, ln.q)
		}
	case quantAVX2:
		if nb > 0 {
			absMaxSumSq32AVX2(&x[0], nb, &ln.m[0], &ln.s[0])
		}
		if nq > 0 {
			quant16AVX2(&x[0], nq, inv, sigma, &ln.q[0], &ln.out[0])
		}
	case quantAVX512:
		if nb > 0 {
			absMaxSumSq32AVX512(&x[0], nb, &ln.m[0], &ln.s[0])
		}
		if nq > 0 {
			quant16AVX512(&x[0], nq, inv, sigma, &ln.q[0], &ln.out[0])
		}
	}
	return ln
}

func bitsEq(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// lanesDiff reports the first difference of two passes' raw outputs.
func lanesDiff(a, b quantLanes) error {
	for l := range a.m {
		if math.Float32bits(a.m[l]) != math.Float32bits(b.m[l]) {
			return fmt.Errorf("max lane %d: %v vs %v", l, a.m[l], b.m[l])
		}
	}
	for l := range a.s {
		if !bitsEq(a.s[l], b.s[l]) {
			return fmt.Errorf("Σx² lane %d: %v vs %v", l, a.s[l], b.s[l])
		}
	}
	for l := range a.out {
		if !bitsEq(a.out[l], b.out[l]) {
			return fmt.Errorf("quant sum lane %d: %v vs %v", l, a.out[l], b.out[l])
		}
	}
	for i := range a.q {
		if a.q[i] != b.q[i] {
			return fmt.Errorf("q[%d]: %d vs %d", i, a.q[i], b.q[i])
		}
	}
	return nil
}

// quantCase is one input of the checks: a row, its step and the inverse.
type quantCase struct {
	name       string
	x          []float32
	inv, sigma float64
}

// quantLengths are the row lengths checked.
func quantLengths() []int {
	var ns []int
	for n := range 101 {
		ns = append(ns, n)
	}
	return append(ns, 383, 384, 768, 769, 1536)
}

// quantCases builds, for each length, rows of many kinds with the step
// rank's quantise16 would choose (|Q| ≤ 32767), plus steps that make ties.
func quantCases(r *rand.Rand) []quantCase {
	var cs []quantCase
	stepFor := func(x []float32) (inv, sigma float64) {
		mx, _ := absMaxSumSq32Generic(x)
		s := float32(max(mx/32767, 0x1p-126))
		for float64(s)*32766 < mx {
			s = float32(float64(s) * (1 + 0x1p-12))
		}
		return 1 / float64(s), float64(s)
	}
	add := func(name string, x []float32) {
		inv, sigma := stepFor(x)
		cs = append(cs, quantCase{name, x, inv, sigma})
	}
	for _, n := range quantLengths() {
		gen := func(f func(i int) float32) []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = f(i)
			}
			return x
		}
		add("normal", gen(func(int) float32 { return float32(r.NormFloat64()) }))
		// every binary exponent of float32, subnormals included
		add("exponents", gen(func(int) float32 {
			v := float32(math.Ldexp(1+r.Float64(), r.IntN(276)-149)) // below 2¹²⁷·2: no overflow to ∞
			if r.IntN(2) == 0 {
				v = -v
			}
			return v
		}))
		add("narrow", gen(func(int) float32 { return float32(math.Ldexp(r.NormFloat64(), r.IntN(9)-4)) }))
		add("max", gen(func(i int) float32 {
			switch i % 5 {
			case 0:
				return math.MaxFloat32
			case 1:
				return -math.MaxFloat32
			case 2:
				return float32(r.NormFloat64() * 1e37)
			}
			return float32(r.NormFloat64())
		}))
		add("subnormal", gen(func(int) float32 {
			return math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31)
		}))
		add("zeros", gen(func(i int) float32 {
			if i%3 == 0 {
				return float32(math.Copysign(0, -1))
			}
			return 0
		}))
		// ties: x·inv = k + ½ exactly, σ a power of two
		// (e = 148: x = odd·2⁻¹⁴⁹, subnormal)
		for _, e := range []int{148, 20, 0, -7, -100} {
			inv := math.Ldexp(1, e)
			x := gen(func(int) float32 {
				k := float64(r.IntN(65534) - 32767)
				return float32((k + 0.5) / inv)
			})
			cs = append(cs, quantCase{fmt.Sprintf("ties2^%d", e), x, inv, 1 / inv})
		}
		// beyond the callers' |Q| ≤ 32767: wrapping and int32 overflow
		x := gen(func(int) float32 { return float32(math.Ldexp(r.NormFloat64(), r.IntN(40))) })
		cs = append(cs, quantCase{"out-of-range", x, 1, 1})
	}
	return cs
}

func needQuantAVX2(t testing.TB) {
	if !hasQuantAVX2 {
		t.Skipf("CPU lacks AVX2+FMA (avx2 %v, fma %v): the AVX2 passes cannot run", cpu.X86.HasAVX2, cpu.X86.HasFMA)
	}
}

// TestQuantAVX2LanesBitForBit: the raw lane outputs of the AVX2 passes
// equal the model of the AVX-512 lanes, and the AVX-512 passes' where the
// CPU has them; the int16 words beyond the whole blocks are never written.
func TestQuantAVX2LanesBitForBit(t *testing.T) {
	needQuantAVX2(t)
	if !hasQuantSIMD {
		t.Logf("CPU lacks AVX-512F/VL: AVX2 checked against the model of the AVX-512 lanes only")
	}
	for _, c := range quantCases(rand.New(rand.NewPCG(28, 16))) {
		model := lanesOf(quantGeneric, quantModel{}, c.x, c.inv, c.sigma)
		got := lanesOf(quantAVX2, quantModel{}, c.x, c.inv, c.sigma)
		if err := lanesDiff(got, model); err != nil {
			t.Fatalf("%s len %d: avx2 vs model: %v", c.name, len(c.x), err)
		}
		if hasQuantSIMD {
			ref := lanesOf(quantAVX512, quantModel{}, c.x, c.inv, c.sigma)
			if err := lanesDiff(got, ref); err != nil {
				t.Fatalf("%s len %d: avx2 vs avx512: %v", c.name, len(c.x), err)
			}
		}
		for i := len(c.x) / 8 * 8; i < len(got.q); i++ {
			if got.q[i] != 0x5a5a {
				t.Fatalf("%s len %d: q[%d] written", c.name, len(c.x), i)
			}
		}
	}
}

// quantCheck compares absMaxSumSq32With and quantise16With under k with
// the AVX-512 results (bit for bit, when the CPU has them) and with the
// portable loops: mx, q and n2 exactly, ss and rr within their bounds
// (int16.go: at most len/16 + 12 and len/8 + 9 roundings per term).
func quantCheck(k quantImpl, c quantCase) error {
	n := len(c.x)
	mx, ss := absMaxSumSq32With(k, c.x)
	q := make([]int16, n)
	n2, rr := quantise16With(k, c.x, c.inv, c.sigma, q)
	if hasQuantSIMD && k != quantAVX512 {
		amx, ass := absMaxSumSq32With(quantAVX512, c.x)
		aq := make([]int16, n)
		an2, arr := quantise16With(quantAVX512, c.x, c.inv, c.sigma, aq)
		if !bitsEq(mx, amx) || !bitsEq(ss, ass) || !bitsEq(n2, an2) || !bitsEq(rr, arr) {
			return fmt.Errorf("sums %v %v %v %v, avx512 %v %v %v %v", mx, ss, n2, rr, amx, ass, an2, arr)
		}
		for i := range q {
			if q[i] != aq[i] {
				return fmt.Errorf("q[%d] %d, avx512 %d", i, q[i], aq[i])
			}
		}
	}
	gmx, gss := absMaxSumSq32Generic(c.x)
	gq := make([]int16, n)
	gn2, grr := quantise16Generic(c.x, c.inv, c.sigma, gq)
	for i := range q {
		if q[i] != gq[i] {
			return fmt.Errorf("q[%d] %d, generic %d", i, q[i], gq[i])
		}
	}
	if !bitsEq(mx, gmx) {
		return fmt.Errorf("max %v, generic %v", mx, gmx)
	}
	// ss and rr: sums of exact non-negative terms T, each within
	// γ_{len+12}(2⁻⁵³) of the true sum; two such sums within twice that.
	var exact, dsum float64
	for i, v := range c.x {
		f := float64(v)
		exact += f * f
		dl := math.FMA(-c.sigma, float64(gq[i]), f)
		if c.name == "out-of-range" {
			dl = 0
		}
		dsum += dl * dl
	}
	g := 2 * gammaN(n+12)
	if math.Abs(ss-gss) > g*exact*1.01 {
		return fmt.Errorf("Σx² %v, generic %v", ss, gss)
	}
	if c.name == "out-of-range" { // Q wraps: nothing more to compare with the callers' contract
		return nil
	}
	if !bitsEq(n2, gn2) {
		return fmt.Errorf("Σ Q² %v, generic %v", n2, gn2)
	}
	if math.Abs(rr-grr) > g*dsum*1.01 {
		return fmt.Errorf("Σ δ² %v, generic %v", rr, grr)
	}
	return nil
}

func gammaN(n int) float64 { u := 0x1p-53; return float64(n) * u / (1 - float64(n)*u) }

// TestQuantAVX2MatchesAVX512AndGeneric: through the wrappers, the AVX2
// passes give the AVX-512 results bit for bit, and the portable q, Σ Q²
// and max exactly.
func TestQuantAVX2MatchesAVX512AndGeneric(t *testing.T) {
	needQuantAVX2(t)
	for _, c := range quantCases(rand.New(rand.NewPCG(28, 17))) {
		if err := quantCheck(quantAVX2, c); err != nil {
			t.Fatalf("%s len %d: %v", c.name, len(c.x), err)
		}
		if hasQuantSIMD {
			if err := quantCheck(quantAVX512, c); err != nil {
				t.Fatalf("avx512: %s len %d: %v", c.name, len(c.x), err)
			}
		}
	}
}

// TestQuantActiveKind: the wrappers run the pass quantFor chooses for this
// CPU (AVX-512, else AVX2, else the loops; GODEBUG=cpu.avx512f=off
// selects AVX2), and the exported functions agree with it.
func TestQuantActiveKind(t *testing.T) {
	want := quantGeneric
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL:
		want = quantAVX512
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		want = quantAVX2
	}
	if quantKind != want {
		t.Fatalf("quantKind %d, want %d", quantKind, want)
	}
	t.Logf("quantisation passes: %d (0 generic, 1 avx2, 2 avx512)", quantKind)
	if quantFor(false, false) != quantGeneric || quantFor(false, true) != quantAVX2 || quantFor(true, true) != quantAVX512 {
		t.Fatal("quantFor")
	}
	r := rand.New(rand.NewPCG(28, 18))
	x := make([]float32, 769)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	mx, ss := AbsMaxSumSq32(x)
	wmx, wss := absMaxSumSq32With(want, x)
	q, wq := make([]int16, len(x)), make([]int16, len(x))
	n2, rr := Quantise16(x, 1000, 1e-3, q)
	wn2, wrr := quantise16With(want, x, 1000, 1e-3, wq)
	if !bitsEq(mx, wmx) || !bitsEq(ss, wss) || !bitsEq(n2, wn2) || !bitsEq(rr, wrr) {
		t.Fatalf("exported %v %v %v %v, kind %d %v %v %v %v", mx, ss, n2, rr, want, wmx, wss, wn2, wrr)
	}
	for i := range q {
		if q[i] != wq[i] {
			t.Fatalf("q[%d] %d vs %d", i, q[i], wq[i])
		}
	}
}

// TestQuantChecksCatchBrokenKernels: the checks above reject a kernel that
// sums in 4 float64 lanes (a plain ymm port) and one that rounds half away
// from zero, on the same inputs.
func TestQuantChecksCatchBrokenKernels(t *testing.T) {
	cs := quantCases(rand.New(rand.NewPCG(28, 16)))
	for _, md := range []quantModel{{lanes4: true}, {awayFromZero: true}} {
		caught := false
		for _, c := range cs {
			good := lanesOf(quantGeneric, quantModel{}, c.x, c.inv, c.sigma)
			bad := lanesOf(quantGeneric, md, c.x, c.inv, c.sigma)
			if lanesDiff(bad, good) != nil {
				caught = true
				break
			}
		}
		if !caught {
			t.Errorf("broken model %+v passes the lane checks", md)
		}
	}
	// rounding half away from zero also breaks the exact q against the
	// portable loop, through the combining wrapper
	caught := false
	for _, c := range cs {
		ln := lanesOf(quantGeneric, quantModel{awayFromZero: true}, c.x, c.inv, c.sigma)
		_, _, _, _, q := ln.combine(c.x, c.inv, c.sigma)
		gq := make([]int16, len(c.x))
		quantise16Generic(c.x, c.inv, c.sigma, gq)
		for i := range gq {
			if q[i] != gq[i] {
				caught = true
			}
		}
	}
	if !caught {
		t.Error("rounding half away from zero passes the q check")
	}
}

// BenchmarkQuantRow times the two passes of one row at d = 768 (what
// rank's quantise16 runs per row when the first step fits): ns/op is
// ns/row.
func BenchmarkQuantRow(b *testing.B) {
	const d = 768
	r := rand.New(rand.NewPCG(28, 19))
	x := make([]float32, d)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	q := make([]int16, d)
	for _, k := range []quantImpl{quantGeneric, quantAVX2, quantAVX512} {
		name := [...]string{"generic", "avx2", "avx512"}[k]
		b.Run(name, func(b *testing.B) {
			if (k == quantAVX2 && !hasQuantAVX2) || (k == quantAVX512 && !hasQuantSIMD) {
				b.Skipf("CPU lacks %s", name)
			}
			for b.Loop() {
				mx, ss := absMaxSumSq32With(k, x)
				sigma := float64(float32(max(mx/32767, math.Sqrt(ss)/46340)))
				quantise16With(k, x, 1/sigma, sigma, q)
			}
		})
	}
}
