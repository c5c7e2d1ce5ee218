package kernel

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// EnvVar names the environment variable that forces an implementation at
// start-up: generic, avx2, avx512, or auto (the default: the fastest one
// available).
const EnvVar = "VERTEBRAE_KERNEL"

// impl is one implementation of the four block functions.
type impl struct {
	name     string
	dot64    func(q []float64, qn int, g []float64, gn int, d int, out []float64)
	sqDist64 func(q []float64, qn int, g []float64, gn int, d int, out []float64)
	dot32    func(q []float32, qn int, g []float32, gn int, d int, out []float32)
	sqDist32 func(q []float32, qn int, g []float32, gn int, d int, out []float32)
	// The screening kernels (screen.go).
	dotBlk32    func(q []float32, qn int, g []float32, gn int, d int, out []float32)
	maxFinite32 func(x []float32) (float32, bool)
	scan32      func(x []float32, c Cut, idx []int32) (int, []int32)
	// convertNorm64 may sum in any order within ConvertNorm64's bound.
	convertNorm64 func(x []float64, y []float32) (float64, bool)
	// rows is the instruction set of the per-row preparation loops
	// (rowprep.go); noVec: the scalar loops.
	rows vecISA
}

var generic = &impl{"generic", dot64Generic, sqDist64Generic, dot32Generic, sqDist32Generic,
	dotBlk32Generic, maxFinite32Generic, scan32Generic, convertNorm64Generic, noVec}

// simdImpl is an instruction set's tile kernels with the portable row scans
// (the caller may replace them).
func simdImpl(name string, s *simdSet) *impl {
	return &impl{name, s.dot64.run, s.sqDist64.run, s.dot32.run, s.sqDist32.run,
		s.dotBlk32.run, maxFinite32Generic, scan32Generic, convertNorm64Generic, noVec}
}

// names lists every implementation this package knows, slowest first.
var names = []string{"generic", "avx2", "avx512"}

var (
	active atomic.Pointer[impl]
	// usable holds the implementations this CPU runs, slowest first; the
	// SIMD ones are added by the architecture's init.
	usable = []*impl{generic}
	// failed names the SIMD implementations this CPU has but that failed
	// selfCheck.
	failed []string
	envErr error
)

func init() {
	addSIMD() // architecture-specific
	active.Store(usable[len(usable)-1])
	if err := Use(os.Getenv(EnvVar)); err != nil {
		envErr = fmt.Errorf("%s: %w", EnvVar, err)
	}
}

// Available returns the names of the implementations this CPU can run,
// slowest first; the last one is what "auto" picks.
func Available() []string {
	out := make([]string, len(usable))
	for i, m := range usable {
		out[i] = m.name
	}
	return out
}

// Name returns the name of the implementation in use.
func Name() string { return active.Load().name }

// Use switches every block function to the named implementation: "generic",
// "avx2", "avx512", or "auto" (or "") for the fastest available. Naming an
// unknown implementation, or one this CPU (or this build) cannot run, is an
// error and leaves the current one in place. Results never depend on the
// choice; Use is safe to call while other goroutines compute.
func Use(name string) error {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || name == "auto" {
		active.Store(usable[len(usable)-1])
		return nil
	}
	for _, m := range usable {
		if m.name == name {
			active.Store(m)
			return nil
		}
	}
	if slices.Contains(failed, name) {
		return fmt.Errorf("kernel %q failed its self-check on this CPU (available: %s)", name, strings.Join(Available(), ", "))
	}
	if slices.Contains(names, name) {
		return fmt.Errorf("kernel %q is not available on this CPU or build (available: %s)", name, strings.Join(Available(), ", "))
	}
	return fmt.Errorf("unknown kernel %q (known: auto, %s)", name, strings.Join(names, ", "))
}

// EnvErr reports why the implementation named by VERTEBRAE_KERNEL could not
// be used at start-up (nil when it was unset or honoured). The fastest
// available implementation is in use then; a program should report the error
// rather than run with a choice the user did not make.
func EnvErr() error { return envErr }

// selfCheck compares an implementation with the generic one on a small block
// whose shape exercises partial tiles: a SIMD kernel that cannot reproduce
// the row definition here (a broken CPU, OS or build) is not offered.
func selfCheck(m *impl) bool {
	const qn, gn, d = 37, 29, 7
	q64, g64 := make([]float64, qn*d), make([]float64, gn*d)
	x := uint32(1)
	next := func() float64 {
		x = x*1664525 + 1013904223
		return math.Ldexp(float64(int32(x)>>8), -20)
	}
	// Thirds do not add up exactly, so a wrong order shows.
	for i := range q64 {
		q64[i] = next() / 3
	}
	for i := range g64 {
		g64[i] = next() / 3
	}
	q32, g32 := make([]float32, qn*d), make([]float32, gn*d)
	for i, v := range q64 {
		q32[i] = float32(v)
	}
	for i, v := range g64 {
		g32[i] = float32(v)
	}
	w64, o64 := make([]float64, qn*gn), make([]float64, qn*gn)
	w32, o32 := make([]float32, qn*gn), make([]float32, qn*gn)
	same64 := func(f, ref func([]float64, int, []float64, int, int, []float64)) bool {
		ref(q64, qn, g64, gn, d, w64)
		f(q64, qn, g64, gn, d, o64)
		for i := range w64 {
			if math.Float64bits(w64[i]) != math.Float64bits(o64[i]) {
				return false
			}
		}
		return true
	}
	same32 := func(f, ref func([]float32, int, []float32, int, int, []float32)) bool {
		ref(q32, qn, g32, gn, d, w32)
		f(q32, qn, g32, gn, d, o32)
		for i := range w32 {
			if math.Float32bits(w32[i]) != math.Float32bits(o32[i]) {
				return false
			}
		}
		return true
	}
	return same64(m.dot64, generic.dot64) && same64(m.sqDist64, generic.sqDist64) &&
		same32(m.dot32, generic.dot32) && same32(m.sqDist32, generic.sqDist32) &&
		same32(m.dotBlk32, generic.dotBlk32) && sameScans(m, w32)
}

// sameScans compares an implementation's row scans with the generic ones
// on one row (scores of the self-check block, with a few special values).
func sameScans(m *impl, row []float32) bool {
	row = append([]float32(nil), row...)
	for _, cut := range []int{len(row), 33, 16, 5} {
		x := row[:min(cut, len(row))]
		gm, gf := generic.maxFinite32(x)
		mm, mf := m.maxFinite32(x)
		if gf != mf || gf && gm != mm {
			return false
		}
		if len(x) == 0 {
			continue
		}
		for _, t := range []float32{x[0], x[len(x)/2], float32(math.Inf(-1))} {
			gi, mi := make([]int32, len(x)), make([]int32, len(x))
			c := Cut{t, t, x[len(x)-1], x[len(x)/3]}
			ga, gh := generic.scan32(x, c, gi)
			ma, mh := m.scan32(x, c, mi)
			if ga != ma || !slices.Equal(gh, mh) {
				return false
			}
		}
	}
	row[7] = float32(math.NaN())
	_, gf := generic.maxFinite32(row)
	_, mf := m.maxFinite32(row)
	// The conversion pass: the same float32 values, and sums of squares
	// that differ at most by rounding (the order may differ).
	x := make([]float64, len(row))
	for i := range x {
		x[i] = float64(i%13) / 3
	}
	gy, my := make([]float32, len(x)), make([]float32, len(x))
	gs, gok := generic.convertNorm64(x, gy)
	ms, mok := m.convertNorm64(x, my)
	return gf == mf && gok == mok && slices.Equal(gy, my) && math.Abs(gs-ms) <= 1e-12*gs
}
