package kernel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The SIMD tiles of DotInt16 (AVX2, AVX-512 VNNI) against the portable
// tile and the definition, called directly so that every tile this CPU has
// is checked whatever kernel is active. Integer sums modulo 2³² do not
// depend on the order, so the bits must be equal, wrapping included.

// int16Widths are the row widths d of the tile tests (np = (d+1)/2 pairs):
// one pair, odd and even pair counts, widths that are not multiples of the
// unrolled loop, and rank's common widths.
var int16Widths = []int{1, 2, 3, 17, 64, 383, 384, 769, 1536}

// int16Word packs two int16 values as one pair of the packed layouts.
func int16Word(lo, hi int16) int32 { return int32(uint32(uint16(lo)) | uint32(uint16(hi))<<16) }

// int16Fills are the contents of packed operands: uniform words, values
// drawn among the extremes, and constant extremes (every pair of −32768 in
// both operands sums to 2³¹, which wraps to −2³¹ in each lane).
var int16Fills = []struct {
	name string
	val  func(r *rand.Rand, query bool) int16
}{
	{"uniform", func(r *rand.Rand, _ bool) int16 { return int16(r.Uint32()) }},
	{"extremes", func(r *rand.Rand, _ bool) int16 {
		return [...]int16{32767, -32767, -32768, 0, 1, -1}[r.IntN(6)]
	}},
	{"min×min", func(*rand.Rand, bool) int16 { return -32768 }},
	{"max×max", func(*rand.Rand, bool) int16 { return 32767 }},
	{"min×max", func(_ *rand.Rand, query bool) int16 {
		if query {
			return -32768
		}
		return 32767
	}},
}

// int16ScaleSets are σ_q, σ_g draws: rank's (powers of two and small
// values), ones whose products are subnormal or underflow to zero, huge
// ones whose products come near the top of float32 or overflow to ±Inf,
// and signed ones. None is zero, so
// no product is Inf·0 (a NaN).
var int16ScaleSets = []struct {
	name string
	q, g func(r *rand.Rand) float32
}{
	{"rank", int16Scale, int16Scale},
	{"subnormal",
		func(r *rand.Rand) float32 { return nonzero32(math.Ldexp(1+r.Float64(), -r.IntN(40))) },
		func(r *rand.Rand) float32 { return nonzero32(math.Ldexp(1+r.Float64(), -120-r.IntN(29))) }},
	{"huge",
		func(r *rand.Rand) float32 { return nonzero32(math.Ldexp(1+r.Float64(), r.IntN(40))) },
		func(r *rand.Rand) float32 { return nonzero32(math.Ldexp(1+r.Float64(), 50+r.IntN(77))) }},
	{"signed",
		func(r *rand.Rand) float32 { return nonzero32(r.NormFloat64()) },
		func(r *rand.Rand) float32 { return nonzero32(r.NormFloat64() * 1e-4) }},
}

func int16Scale(r *rand.Rand) float32 { return int16Scales(r, 1)[0] }

func nonzero32(x float64) float32 {
	if f := float32(x); f != 0 {
		return f
	}
	return math.SmallestNonzeroFloat32
}

// int16SIMDKinds are the SIMD tiles; the test of one the CPU lacks is
// skipped with the reason.
var int16SIMDKinds = []int16TileKind{int16AVX2, int16VNNI}

func needInt16Tile(t testing.TB, k int16TileKind) {
	t.Helper()
	if !slices.Contains(int16Kinds(), k) {
		t.Skipf("this CPU or build has no %v int16 tile (it has %v)", k, int16Kinds())
	}
}

// TestInt16TilesMatchGeneric: each SIMD tile writes the bits of
// dotInt16TileGeneric on full tiles, for every fill, scale set and width,
// with row strides above 32, and touches nothing between the rows.
func TestInt16TilesMatchGeneric(t *testing.T) {
	t.Parallel()
	for _, k := range int16SIMDKinds {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			needInt16Tile(t, k)
			r := rand.New(rand.NewPCG(21, uint64(k)))
			for _, d := range int16Widths {
				np := Int16Pairs(d)
				for fi, fill := range int16Fills {
					qa := make([]int32, Int16QueryTile*np)
					ga := make([]int32, Int16GalleryTile*np)
					for i := range qa {
						qa[i] = int16Word(fill.val(r, true), fill.val(r, true))
					}
					for i := range ga {
						ga[i] = int16Word(fill.val(r, false), fill.val(r, false))
					}
					for si, sc := range int16ScaleSets {
						qs, gs := make([]float32, Int16QueryTile), make([]float32, Int16GalleryTile)
						for i := range qs {
							qs[i] = sc.q(r)
						}
						for j := range gs {
							gs[j] = sc.g(r)
						}
						ldo := []int{32, 33, 47, 100}[(fi+si)%4]
						want := make([]float32, (Int16QueryTile-1)*ldo+Int16GalleryTile+5)
						got := make([]float32, len(want))
						sentinel := math.Float32frombits(0x7fc0dead)
						for e := range want {
							want[e], got[e] = sentinel, sentinel
						}
						dotInt16TileGeneric(qa, ga, np, qs, gs, want, ldo)
						dotInt16Tile(k, qa, ga, np, qs, gs, got, ldo)
						for e := range want {
							if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
								t.Fatalf("d=%d %s %s ldo=%d element %d (row %d, column %d): tile %v (%#x), generic %v (%#x)",
									d, fill.name, sc.name, ldo, e, e/ldo, e%ldo, got[e], math.Float32bits(got[e]), want[e], math.Float32bits(want[e]))
							}
						}
					}
				}
			}
		})
	}
}

// TestInt16TileShapes runs DotInt16's driver with each tile this CPU has on
// shapes that are not multiples of the 12 × 32 tile (partial tiles go
// through the scratch tile, whole ones straight to out with ldo = gn > 32)
// against DotInt16Row and ScaleInt16.
func TestInt16TileShapes(t *testing.T) {
	t.Parallel()
	for _, k := range append([]int16TileKind{int16Generic}, int16SIMDKinds...) {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			needInt16Tile(t, k)
			r := rand.New(rand.NewPCG(22, uint64(k)))
			shapes := [][2]int{{1, 1}, {1, 33}, {12, 32}, {11, 31}, {13, 33}, {24, 64}, {25, 70}, {36, 96}, {7, 100}}
			for _, d := range int16Widths {
				for n, sh := range shapes {
					qn, gn := sh[0], sh[1]
					q, g := int16Rows(r, qn, d), int16Rows(r, gn, d)
					if n%3 == 0 { // constant extremes: every sum wraps
						fill := int16Fills[2+n/3%3]
						for i := range q {
							q[i] = fill.val(r, true)
						}
						for i := range g {
							g[i] = fill.val(r, false)
						}
					}
					sc := int16ScaleSets[n%len(int16ScaleSets)]
					qs, gs := make([]float32, qn), make([]float32, gn)
					for i := range qs {
						qs[i] = sc.q(r)
					}
					for j := range gs {
						gs[j] = sc.g(r)
					}
					qp := make([]int32, Int16QueryLen(qn, d))
					gp := make([]int32, Int16GalleryLen(gn, d))
					for i := range qn {
						PackInt16Query(q[i*d:(i+1)*d], i, qp)
					}
					for j := range gn {
						PackInt16Gallery(g[j*d:(j+1)*d], j, gp)
					}
					out := make([]float32, qn*gn)
					dotInt16(k, qp, qn, gp, gn, d, qs, gs, out)
					for i := range qn {
						for j := range gn {
							want := ScaleInt16(DotInt16Row(q[i*d:(i+1)*d], g[j*d:(j+1)*d]), qs[i], gs[j])
							if math.Float32bits(out[i*gn+j]) != math.Float32bits(want) {
								t.Fatalf("d=%d qn=%d gn=%d scales %s (%d,%d): got %v, want %v", d, qn, gn, sc.name, i, j, out[i*gn+j], want)
							}
						}
					}
				}
			}
		})
	}
}

// TestInt16TileFor: the tile chosen for each kernel name and CPU.
func TestInt16TileFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		vnni, avx bool
		want      int16TileKind
	}{
		{"avx512", true, true, int16VNNI},
		{"avx512", false, true, int16AVX2},
		{"avx512", false, false, int16Generic},
		{"avx2", true, true, int16AVX2},
		{"avx2", false, true, int16AVX2},
		{"avx2", false, false, int16Generic},
		{"generic", true, true, int16Generic},
		{"generic", false, true, int16Generic},
		{"", true, true, int16Generic},
	} {
		if got := int16TileFor(c.name, c.vnni, c.avx); got != c.want {
			t.Errorf("int16TileFor(%q, vnni %v, avx2 %v) = %v, want %v", c.name, c.vnni, c.avx, got, c.want)
		}
	}
}

// TestDotInt16FollowsKernel: DotInt16 and Int16Fast follow the active
// kernel (what VERTEBRAE_KERNEL chooses at start-up): the AVX2 tile under
// avx2, the VNNI tile (or AVX2 without VNNI) under avx512, the portable
// one under generic. Not parallel: it switches the package's kernel.
func TestDotInt16FollowsKernel(t *testing.T) {
	before := Name()
	defer func() {
		if err := Use(before); err != nil {
			t.Fatal(err)
		}
	}()
	r := rand.New(rand.NewPCG(23, 24))
	const qn, gn, d = 25, 70, 385
	q, g := int16Rows(r, qn, d), int16Rows(r, gn, d)
	qs, gs := int16Scales(r, qn), int16Scales(r, gn)
	qp := make([]int32, Int16QueryLen(qn, d))
	gp := make([]int32, Int16GalleryLen(gn, d))
	for i := range qn {
		PackInt16Query(q[i*d:(i+1)*d], i, qp)
	}
	for j := range gn {
		PackInt16Gallery(g[j*d:(j+1)*d], j, gp)
	}
	has := func(k int16TileKind) bool { return slices.Contains(int16Kinds(), k) }
	ran := 0
	for _, name := range Available() {
		want := int16Generic
		switch {
		case name == "avx512" && has(int16VNNI):
			want = int16VNNI
		case name == "avx2" || name == "avx512":
			want = int16AVX2
		}
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		if got := int16Kind(); got != want || Int16Fast() != (want != int16Generic) {
			t.Fatalf("under %s: tile %v, Int16Fast %v; want %v", name, got, Int16Fast(), want)
		}
		out := make([]float32, qn*gn)
		DotInt16(qp, qn, gp, gn, d, qs, gs, out)
		for i := range qn {
			for j := range gn {
				w := ScaleInt16(DotInt16Row(q[i*d:(i+1)*d], g[j*d:(j+1)*d]), qs[i], gs[j])
				if math.Float32bits(out[i*gn+j]) != math.Float32bits(w) {
					t.Fatalf("under %s (%v tile) (%d,%d): got %v, want %v", name, want, i, j, out[i*gn+j], w)
				}
			}
		}
		if name == "avx2" {
			ran++
		}
	}
	if ran == 0 {
		t.Logf("the avx2 kernel is not available here (%v): only the selection table covers it", Available())
	}
}
