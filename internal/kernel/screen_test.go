package kernel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Every implementation's row scans agree with their definition, on rows of
// every tail length, with repeated values at the thresholds and with
// non-finite values.
func TestScans(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, m := range usable {
		for _, n := range []int{0, 1, 3, 15, 16, 17, 31, 32, 33, 47, 64, 100, 1000, 10007} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.IntN(9)-4) / 4 // many exact ties with the thresholds
				if r.IntN(3) == 0 {
					x[i] = float32(r.NormFloat64())
				}
			}
			for _, bad := range []float32{0, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
				y := slices.Clone(x)
				if bad != 0 && n > 0 {
					y[r.IntN(n)] = bad
				}
				wantMax, wantFinite := float32(math.Inf(-1)), true
				for _, v := range y {
					wantMax = max(wantMax, v)
					wantFinite = wantFinite && !math.IsInf(float64(v), 0) && !math.IsNaN(float64(v))
				}
				gotMax, gotFinite := m.maxFinite32(y)
				if gotFinite != wantFinite || wantFinite && gotMax != wantMax {
					t.Fatalf("%s maxFinite32 n=%d bad=%v: (%v, %v), want (%v, %v)", m.name, n, bad, gotMax, gotFinite, wantMax, wantFinite)
				}
				inf := float32(math.Inf(1))
				for _, th := range []Cut{{0, 0, inf, inf}, {0.5, -0.25, 0.5, 1}, {-1, 1, -1, 0.75}, {-inf, -inf, inf, inf}, {2, 2, 2, 2}, {0, -0.5, 0.25, 0.5}} {
					wantAbove, wantHits := 0, []int32{}
					for k, v := range y {
						if v > th.Above {
							wantAbove++
						}
						if v >= th.Lo && v <= th.Hi || v >= th.High {
							wantHits = append(wantHits, int32(k))
						}
					}
					idx := make([]int32, n+1)
					for i := range idx {
						idx[i] = -7
					}
					above, hits := m.scan32(y, th, idx[:n])
					if above != wantAbove || !slices.Equal(hits, wantHits) || idx[n] != -7 {
						t.Fatalf("%s scan32 n=%d bad=%v th=%v: %d %v, want %d %v", m.name, n, bad, th, above, hits, wantAbove, wantHits)
					}
				}
			}
		}
	}
}

// DotBlockedRow32 by hand: 2²⁴ followed (after 31 zeros) by two ones. One
// long chain loses each one (2²⁴ + 1 is a tie and rounds to even, 2²⁴);
// the blocked chain sums the second chunk first (1 + 1 = 2) and adds it
// exactly: 2²⁴ + 2.
func TestDotBlockedRow32ByHand(t *testing.T) {
	a, b := make([]float32, 34), make([]float32, 34)
	for i := range b {
		b[i] = 1
	}
	a[0], a[32], a[33] = 0x1p24, 1, 1
	if got := DotRow32(a, b); got != 0x1p24 {
		t.Fatalf("long chain: %v, want 2^24", got)
	}
	if got := DotBlockedRow32(a, b); got != 0x1p24+2 {
		t.Fatalf("blocked: %v, want 2^24+2", got)
	}
	if got := DotBlockedRow32(a[:3], b[:3]); got != 0x1p24 {
		t.Fatalf("one chunk: %v, want 2^24 (the long chain)", got)
	}
}

// ConvertNorm64 rounds like float32(x), flags overflow, and sums the
// squares within its stated rounding bound, on every implementation and
// tail length.
func TestConvertNorm64(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, m := range usable {
		for _, n := range []int{0, 1, 7, 15, 16, 17, 33, 384, 769} {
			for _, scale := range []float64{1, 1e-160, 1e38, 1e39} {
				x := make([]float64, n)
				exact := 0.0 // float64 sum of squares, compared with a loose relative bound
				for i := range x {
					x[i] = r.NormFloat64() * scale
					exact += x[i] * x[i]
				}
				y := make([]float32, n+1)
				y[n] = 7
				got, fits := m.convertNorm64(x, y[:n])
				wantFits := true
				for i, v := range x {
					if y[i] != float32(v) {
						t.Fatalf("%s n=%d: y[%d] = %v, want %v", m.name, n, i, y[i], float32(v))
					}
					wantFits = wantFits && !math.IsInf(float64(float32(v)), 0)
				}
				if fits != wantFits || y[n] != 7 {
					t.Fatalf("%s n=%d scale %g: fits %v, want %v (guard %v)", m.name, n, scale, fits, wantFits, y[n])
				}
				if tol := 4 * float64(n+33) * 0x1p-53 * exact; math.Abs(got-exact) > tol+0x1p-1000 {
					t.Fatalf("%s n=%d scale %g: sum of squares %v, want %v ± %v", m.name, n, scale, got, exact, tol)
				}
			}
			// One overflowing value, at every position of a vector step
			// and in the tail, is seen.
			for p := range n {
				if p >= 40 && p != n-1 {
					continue
				}
				x := make([]float64, n)
				for i := range x {
					x[i] = 1
				}
				x[p] = 1e39
				if _, fits := m.convertNorm64(x, make([]float32, n)); fits {
					t.Fatalf("%s n=%d: 1e39 at %d fits float32", m.name, n, p)
				}
			}
		}
	}
}

// The blocked kernels' passes over the dimension (blkK) and groups of
// gallery rows (blkRows), with short row groups and a last short chunk,
// on every implementation and on the Go tile models.
func TestBlockedPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	c := newCase(r, 2*blkK+ScreenChunk+5, 70, 2*blkRows+31, flavours[0])
	for _, m := range usable {
		c.check(t, m)
	}
	odd := &simdSet{dotBlk32: blkTiles{width: 5}} // only the blocked kernel is modelled
	for i, mr := range []int{7, 2, 5} {
		odd.dotBlk32.shapes = append(odd.dotBlk32.shapes, blkShape{mr, i + 1, goBlkTile(mr, (i+1)*5)})
	}
	m := simdImpl("model-odd", odd)
	m.dot64, m.sqDist64, m.dot32, m.sqDist32 = generic.dot64, generic.sqDist64, generic.dot32, generic.sqDist32
	c.check(t, m)
}
