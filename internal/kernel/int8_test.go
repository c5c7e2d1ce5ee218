package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The tiles of DotInt8 (AVX-512 VNNI, portable) against each other and the
// definition, DotInt8Row and ScaleInt8, bit for bit. The VNNI tile is
// called directly, so that it is checked whatever kernel is active.

// int8Widths are the row widths d of the tile tests (nq = (d+3)/4 quads):
// one quad, every padding of the last quad (d mod 4 = 1, 2, 3, 0), widths
// that are not multiples of 64, and rank's common widths.
var int8Widths = []int{1, 2, 3, 4, 5, 17, 64, 383, 384, 769, 1536}

// int8Fills are the contents of the rows: uniform values, values drawn
// among the extremes, and constant extremes in both operands (all −128,
// whose products 2¹⁴ are the largest, all 127, and mixed signs).
var int8Fills = []struct {
	name string
	val  func(r *rand.Rand, query bool) int8
}{
	{"uniform", func(r *rand.Rand, _ bool) int8 { return int8(r.Uint32()) }},
	{"extremes", func(r *rand.Rand, _ bool) int8 {
		return [...]int8{127, -127, -128, 0, 1, -1}[r.IntN(6)]
	}},
	{"min×min", func(*rand.Rand, bool) int8 { return -128 }},
	{"max×max", func(*rand.Rand, bool) int8 { return 127 }},
	{"min×max", func(_ *rand.Rand, query bool) int8 {
		if query {
			return -128
		}
		return 127
	}},
	{"max×min", func(_ *rand.Rand, query bool) int8 {
		if query {
			return 127
		}
		return -128
	}},
}

func int8FillRows(r *rand.Rand, n, d int, query bool, val func(*rand.Rand, bool) int8) []int8 {
	v := make([]int8, n*d)
	for i := range v {
		v[i] = val(r, query)
	}
	return v
}

// int8Rows draws n rows of width d: uniform values with a share of the
// extremes.
func int8Rows(r *rand.Rand, n, d int) []int8 {
	return int8FillRows(r, n, d, false, func(r *rand.Rand, _ bool) int8 {
		switch r.IntN(8) {
		case 0:
			return 127
		case 1:
			return -128
		case 2:
			return 0
		}
		return int8(r.Uint32())
	})
}

// int8Pack packs qn query rows and gn gallery rows of width d.
func int8Pack(q []int8, qn int, g []int8, gn, d int) (qp, gp []int32) {
	qp = make([]int32, Int8QueryLen(qn, d))
	gp = make([]int32, Int8GalleryLen(gn, d))
	for i := range qn {
		PackInt8Query(q[i*d:(i+1)*d], i, qp)
	}
	for j := range gn {
		PackInt8Gallery(g[j*d:(j+1)*d], j, gp)
	}
	return qp, gp
}

func int8ScalesFrom(r *rand.Rand, n int, f func(*rand.Rand) float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = f(r)
	}
	return s
}

func needInt8Tile(t testing.TB, k int8TileKind) {
	t.Helper()
	if !slices.Contains(int8Kinds(), k) {
		t.Skipf("this CPU or build has no %v int8 tile (it has %v): AVX-512F and AVX-512 VNNI are needed", k, int8Kinds())
	}
}

// int8Mutants are deliberately wrong models of the VNNI tile; each must
// differ from the definition on the test data, or the tests could not
// tell such a tile from a right one.
var int8Mutants = []struct {
	name string
	dot  func(a, b []int8) int32
}{
	{"no correction", func(a, b []int8) int32 { // Σ (a_k+128)·b_k
		var s int32
		for k, x := range a {
			s += (int32(x) + 128) * int32(b[k])
		}
		return s
	}},
	{"no bias", func(a, b []int8) int32 { // VPDPBUSD on the signed query bytes
		var s int32
		for k, x := range a {
			s += int32(uint8(x)) * int32(b[k])
		}
		return s
	}},
	{"saturating", func(a, b []int8) int32 { // VPDPBUSDS: Σ u·b clamped, then corrected
		var s int64
		var c int32
		for k, x := range a {
			s += (int64(x) + 128) * int64(b[k])
			s = min(max(s, math.MinInt32), math.MaxInt32)
			c += int32(b[k])
		}
		return int32(s) - c<<7
	}},
}

// TestInt8TileMatchesDefinition: each tile (the VNNI one where the CPU has
// it) writes, on full 12 × 32 tiles, the bits of DotInt8Row and ScaleInt8
// for every fill, scale set and width, with row strides above 32, and
// touches nothing between the rows; the mutants differ on the same data.
func TestInt8TileMatchesDefinition(t *testing.T) {
	t.Parallel()
	for _, k := range []int8TileKind{int8Generic, int8VNNI} {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			needInt8Tile(t, k)
			r := rand.New(rand.NewPCG(81, uint64(k)))
			for _, d := range int8Widths {
				nq := Int8Quads(d)
				mutDiffers := make([]bool, len(int8Mutants))
				for fi, fill := range int8Fills {
					q := int8FillRows(r, Int8QueryTile, d, true, fill.val)
					g := int8FillRows(r, Int8GalleryTile, d, false, fill.val)
					qa, ga := int8Pack(q, Int8QueryTile, g, Int8GalleryTile, d)
					var dots, mut [Int8QueryTile][Int8GalleryTile]int32
					for i := range Int8QueryTile {
						for j := range Int8GalleryTile {
							a, b := q[i*d:(i+1)*d], g[j*d:(j+1)*d]
							dots[i][j] = DotInt8Row(a, b)
							for m, mu := range int8Mutants {
								mut[i][j] = mu.dot(a, b)
								if mut[i][j] != dots[i][j] {
									mutDiffers[m] = true
								}
							}
						}
					}
					for si, sc := range int16ScaleSets {
						qs := int8ScalesFrom(r, Int8QueryTile, sc.q)
						gs := int8ScalesFrom(r, Int8GalleryTile, sc.g)
						ldo := []int{32, 33, 47, 100}[(fi+si)%4]
						sentinel := math.Float32frombits(0x7fc0dead)
						want := make([]float32, (Int8QueryTile-1)*ldo+Int8GalleryTile+5)
						for e := range want {
							want[e] = sentinel
						}
						for i := range Int8QueryTile {
							for j := range Int8GalleryTile {
								want[i*ldo+j] = ScaleInt8(dots[i][j], qs[i], gs[j])
							}
						}
						got := make([]float32, len(want))
						for e := range got {
							got[e] = sentinel
						}
						dotInt8Tile(k, qa, ga, nq, qs, gs, got, ldo)
						for e := range want {
							if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
								t.Fatalf("d=%d %s %s ldo=%d element %d (row %d, column %d): tile %v (%#x), definition %v (%#x)",
									d, fill.name, sc.name, ldo, e, e/ldo, e%ldo, got[e], math.Float32bits(got[e]), want[e], math.Float32bits(want[e]))
							}
						}
					}
				}
				// The saturating mutant only differs where Σ u·b leaves int32
				// (TestInt8TileWide); the others must differ at every width
				// ("no bias" only where a query byte is negative).
				for m, mu := range int8Mutants[:2] {
					if !mutDiffers[m] {
						t.Errorf("d=%d: the %q mutant gives the definition's sums on every fill", d, mu.name)
					}
				}
			}
		})
	}
}

// TestInt8TileWide: widths where the biased sums Σ (a_k+128)·b_k of the
// VNNI tile pass ±2³¹ (d > 65793; they wrap, and the correction wraps
// back), and where the definition's own sum wraps (d = 2¹⁷, all −128):
// the tile still gives DotInt8Row's bits, and the saturating mutant
// (VPDPBUSDS) would not.
func TestInt8TileWide(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("wide rows: skipped in -short")
	}
	for _, c := range []struct {
		name string
		d    int
		q, g int8
	}{
		{"biased sum below −2³¹", 70000, 127, -128},
		{"biased sum above 2³¹", 70000, 127, 127},
		{"definition wraps", 1 << 17, -128, -128},
		{"largest exact", Int8ExactWidth, -128, -128},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needInt8Tile(t, int8VNNI)
			d := c.d
			r := rand.New(rand.NewPCG(82, uint64(d)))
			q := int8FillRows(r, Int8QueryTile, d, true, func(*rand.Rand, bool) int8 { return c.q })
			g := int8FillRows(r, Int8GalleryTile, d, false, func(*rand.Rand, bool) int8 { return c.g })
			// a few other values, so that rows differ
			for i := range 64 {
				q[r.IntN(len(q))] = int8(i)
				g[r.IntN(len(g))] = int8(-i)
			}
			qa, ga := int8Pack(q, Int8QueryTile, g, Int8GalleryTile, d)
			qs := int8ScalesFrom(r, Int8QueryTile, int16Scale)
			gs := int8ScalesFrom(r, Int8GalleryTile, int16Scale)
			got := make([]float32, Int8QueryTile*Int8GalleryTile)
			dotInt8Tile(int8VNNI, qa, ga, Int8Quads(d), qs, gs, got, Int8GalleryTile)
			satDiffers := false
			for i := range Int8QueryTile {
				for j := range Int8GalleryTile {
					a, b := q[i*d:(i+1)*d], g[j*d:(j+1)*d]
					dot := DotInt8Row(a, b)
					w := ScaleInt8(dot, qs[i], gs[j])
					if math.Float32bits(got[i*Int8GalleryTile+j]) != math.Float32bits(w) {
						t.Fatalf("d=%d (%d,%d): tile %v, definition %v (I = %d)", d, i, j, got[i*Int8GalleryTile+j], w, dot)
					}
					if int8Mutants[2].dot(a, b) != dot {
						satDiffers = true
					}
				}
			}
			if (c.q == 127) != satDiffers {
				t.Errorf("the saturating mutant differs: %v; want %v", satDiffers, c.q == 127)
			}
		})
	}
}

// TestInt8TileShapes runs DotInt8's driver with each tile this CPU has on
// shapes that are not multiples of the 12 × 32 tile (partial tiles go
// through the scratch tile, whole ones straight to out with ldo = gn > 32)
// against DotInt8Row and ScaleInt8.
func TestInt8TileShapes(t *testing.T) {
	t.Parallel()
	for _, k := range []int8TileKind{int8Generic, int8VNNI} {
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			needInt8Tile(t, k)
			r := rand.New(rand.NewPCG(83, uint64(k)))
			shapes := [][2]int{{1, 1}, {1, 33}, {12, 32}, {11, 31}, {13, 33}, {24, 64}, {25, 70}, {36, 96}, {7, 100}}
			for _, d := range int8Widths {
				for n, sh := range shapes {
					qn, gn := sh[0], sh[1]
					q, g := int8Rows(r, qn, d), int8Rows(r, gn, d)
					if n%3 == 0 { // constant extremes
						fill := int8Fills[2+n/3%4]
						q = int8FillRows(r, qn, d, true, fill.val)
						g = int8FillRows(r, gn, d, false, fill.val)
					}
					sc := int16ScaleSets[n%len(int16ScaleSets)]
					qs, gs := int8ScalesFrom(r, qn, sc.q), int8ScalesFrom(r, gn, sc.g)
					qp, gp := int8Pack(q, qn, g, gn, d)
					out := make([]float32, qn*gn)
					dotInt8(k, qp, qn, gp, gn, d, qs, gs, out)
					for i := range qn {
						for j := range gn {
							want := ScaleInt8(DotInt8Row(q[i*d:(i+1)*d], g[j*d:(j+1)*d]), qs[i], gs[j])
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

// TestDotInt8RowSums: the definition on hand-computed sums, the extremes
// at the widths where they are exact and where they wrap.
func TestDotInt8RowSums(t *testing.T) {
	t.Parallel()
	rep := func(v int8, n int) []int8 { return slices.Repeat([]int8{v}, n) }
	for _, c := range []struct {
		a, b []int8
		want int32
	}{
		{nil, nil, 0},
		{[]int8{1, -2, 3}, []int8{4, 5, -6}, 4 - 10 - 18},
		{[]int8{-128}, []int8{-128}, 1 << 14},
		{[]int8{127}, []int8{-128}, -127 * 128},
		{rep(-128, Int8ExactWidth), rep(-128, Int8ExactWidth), (1<<17 - 1) << 14},
		{rep(-128, 1<<17), rep(-128, 1<<17), math.MinInt32}, // 2³¹ wraps
		{rep(127, 1<<17), rep(-128, 1<<17), -127 << 24},
	} {
		if got := DotInt8Row(c.a, c.b); got != c.want {
			t.Errorf("DotInt8Row(width %d, %v…, %v…) = %d, want %d", len(c.a), c.a[:min(3, len(c.a))], c.b[:min(3, len(c.b))], got, c.want)
		}
	}
	if got := ScaleInt8(3, 0.1, 0.7); got != float32(float32(float32(3)*0.7)*0.1) {
		t.Errorf("ScaleInt8(3, 0.1, 0.7) = %v", got)
	}
}

// TestPackInt8: the packed layouts hold the rows' bytes where the tiles
// read them (the query biased, the padding a_k = 0 and b_k = 0), the
// corrections after each gallery group, and PackInt8GalleryGroup writes
// what PackInt8Gallery does.
func TestPackInt8(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(84, 85))
	for _, d := range []int{1, 2, 3, 4, 5, 16, 17, 384, 769} {
		for _, gn := range []int{1, 15, 16, 17, 33, 40} {
			t.Run(fmt.Sprintf("d=%d/gn=%d", d, gn), func(t *testing.T) {
				nq := Int8Quads(d)
				rows := int8Rows(r, gn, d)
				want := make([]int32, Int8GalleryLen(gn, d))
				got := make([]int32, len(want))
				for j := range gn {
					PackInt8Gallery(rows[j*d:(j+1)*d], j, want)
				}
				for j0 := 0; j0 < gn; j0 += 16 {
					n := min(16, gn-j0)
					PackInt8GalleryGroup(rows[j0*d:(j0+n)*d], j0, n, d, got)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("PackInt8GalleryGroup differs from PackInt8Gallery")
				}
				qp := make([]int32, Int8QueryLen(gn, d))
				for i := range gn {
					PackInt8Query(rows[i*d:(i+1)*d], i, qp)
				}
				for j := range gn {
					g := want[j/16*(nq+1)*16:]
					var sum int32
					for k := range 4 * nq {
						var v int8
						if k < d {
							v = rows[j*d+k]
						}
						if b := int8(g[k/4*16+j%16] >> (8 * (k % 4))); b != v {
							t.Fatalf("gallery row %d byte %d: %d, want %d", j, k, b, v)
						}
						u := uint8(qp[j/12*12*nq+k/4*12+j%12] >> (8 * (k % 4)))
						if int(u) != int(v)+128 {
							t.Fatalf("query row %d byte %d: %d, want %d", j, k, u, int(v)+128)
						}
						sum += int32(v)
					}
					if c := g[nq*16+j%16]; c != 128*sum {
						t.Fatalf("gallery row %d: correction %d, want %d", j, c, 128*sum)
					}
				}
			})
		}
	}
}

// TestInt8TileFor: the tile chosen for each kernel name and CPU.
func TestInt8TileFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		vnni bool
		want int8TileKind
	}{
		{"avx512", true, int8VNNI},
		{"avx512", false, int8Generic},
		{"avx2", true, int8Generic},
		{"generic", true, int8Generic},
		{"", true, int8Generic},
	} {
		if got := int8TileFor(c.name, c.vnni); got != c.want {
			t.Errorf("int8TileFor(%q, vnni %v) = %v, want %v", c.name, c.vnni, got, c.want)
		}
	}
}

// TestDotInt8FollowsKernel: DotInt8 and Int8Fast follow the active kernel:
// the VNNI tile under avx512 where the CPU has it, else the portable one.
// Not parallel: it switches the package's kernel.
func TestDotInt8FollowsKernel(t *testing.T) {
	before := Name()
	defer func() {
		if err := Use(before); err != nil {
			t.Fatal(err)
		}
	}()
	r := rand.New(rand.NewPCG(86, 87))
	const qn, gn, d = 25, 70, 385
	q, g := int8Rows(r, qn, d), int8Rows(r, gn, d)
	qs, gs := int16Scales(r, qn), int16Scales(r, gn)
	qp, gp := int8Pack(q, qn, g, gn, d)
	for _, name := range Available() {
		want := int8Generic
		if name == "avx512" && slices.Contains(int8Kinds(), int8VNNI) {
			want = int8VNNI
		}
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		if got := int8Kind(); got != want || Int8Fast() != (want != int8Generic) {
			t.Fatalf("under %s: tile %v, Int8Fast %v; want %v", name, got, Int8Fast(), want)
		}
		out := make([]float32, qn*gn)
		DotInt8(qp, qn, gp, gn, d, qs, gs, out)
		for i := range qn {
			for j := range gn {
				w := ScaleInt8(DotInt8Row(q[i*d:(i+1)*d], g[j*d:(j+1)*d]), qs[i], gs[j])
				if math.Float32bits(out[i*gn+j]) != math.Float32bits(w) {
					t.Fatalf("under %s (%v tile) (%d,%d): got %v, want %v", name, want, i, j, out[i*gn+j], w)
				}
			}
		}
	}
}

// BenchmarkDotInt8Tile times one 12 × 32 tile at d = 768 with each tile
// this CPU has (the operands, 34 KB, stay in L2 as in DotInt8) and reports
// GMAC/s, one MAC being an int8 multiply-add: 12·32·768 per call (compare
// BenchmarkDotInt16Tile).
func BenchmarkDotInt8Tile(b *testing.B) {
	const d = 768
	nq := Int8Quads(d)
	r := rand.New(rand.NewPCG(1, 2))
	qa, ga := int8Pack(int8Rows(r, Int8QueryTile, d), Int8QueryTile, int8Rows(r, Int8GalleryTile, d), Int8GalleryTile, d)
	qs, gs := int16Scales(r, Int8QueryTile), int16Scales(r, Int8GalleryTile)
	out := make([]float32, Int8QueryTile*Int8GalleryTile)
	for _, k := range []int8TileKind{int8VNNI, int8Generic} {
		b.Run(k.String(), func(b *testing.B) {
			needInt8Tile(b, k)
			for b.Loop() {
				dotInt8Tile(k, qa, ga, nq, qs, gs, out, Int8GalleryTile)
			}
			b.ReportMetric(Int8QueryTile*Int8GalleryTile*d*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// BenchmarkPackInt8GalleryGroup packs 512 rows of width 768 (a screen
// sub-block) group by group: ns per row.
func BenchmarkPackInt8GalleryGroup(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, d = 512, 768
	rows := int8Rows(r, n, d)
	dst := make([]int32, Int8GalleryLen(n, d))
	for b.Loop() {
		for j0 := 0; j0 < n; j0 += 16 {
			PackInt8GalleryGroup(rows[j0*d:(j0+16)*d], j0, 16, d, dst)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
