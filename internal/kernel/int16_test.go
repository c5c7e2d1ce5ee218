package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// int16Rows draws n rows of width d: uniform values, with a share of the
// extremes (±32767, −32768) so that the wrapping of the definition is
// exercised too.
func int16Rows(r *rand.Rand, n, d int) []int16 {
	v := make([]int16, n*d)
	for i := range v {
		switch r.IntN(8) {
		case 0:
			v[i] = 32767
		case 1:
			v[i] = -32768
		case 2:
			v[i] = 0
		default:
			v[i] = int16(r.IntN(65536) - 32768)
		}
	}
	return v
}

func int16Scales(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		if r.IntN(2) == 0 {
			s[i] = float32(math.Ldexp(1, r.IntN(60)-40)) // powers of two, as rank uses
		} else {
			s[i] = float32(r.Float64() * 1e-3)
		}
	}
	return s
}

// TestDotInt16MatchesDefinition compares DotInt16 (the active tile and the
// portable one) with DotInt16Row and ScaleInt16 bit for bit.
func TestDotInt16MatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range []int{1, 2, 3, 17, 31, 32, 33, 384, 769} {
		for _, sh := range [][2]int{{1, 1}, {1, 33}, {12, 32}, {13, 31}, {25, 70}, {7, 100}} {
			qn, gn := sh[0], sh[1]
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
			out := make([]float32, qn*gn)
			DotInt16(qp, qn, gp, gn, d, qs, gs, out)
			for i := range qn {
				for j := range gn {
					want := ScaleInt16(DotInt16Row(q[i*d:(i+1)*d], g[j*d:(j+1)*d]), qs[i], gs[j])
					if math.Float32bits(out[i*gn+j]) != math.Float32bits(want) {
						t.Fatalf("d=%d qn=%d gn=%d (%d,%d): got %v, want %v (tile %v)", d, qn, gn, i, j, out[i*gn+j], want, int16Kind())
					}
				}
			}
		}
	}
}

// TestDotInt16TileMatchesGeneric runs every tile this CPU has (the AVX2
// and VNNI assembly) against the portable tile on full tiles;
// int16tile_test.go covers them in depth.
func TestDotInt16TileMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, d := range []int{1, 2, 5, 64, 385} {
		np := Int16Pairs(d)
		qa := make([]int32, Int16QueryTile*np)
		ga := make([]int32, Int16GalleryTile*np)
		for i := range qa {
			qa[i] = int32(r.Uint32())
		}
		for i := range ga {
			ga[i] = int32(r.Uint32())
		}
		qs, gs := int16Scales(r, Int16QueryTile), int16Scales(r, Int16GalleryTile)
		b := make([]float32, Int16QueryTile*40)
		dotInt16TileGeneric(qa, ga, np, qs, gs, b, 40)
		for _, k := range int16Kinds()[1:] {
			a := make([]float32, Int16QueryTile*40)
			dotInt16Tile(k, qa, ga, np, qs, gs, a, 40)
			for e := range a {
				if math.Float32bits(a[e]) != math.Float32bits(b[e]) {
					t.Fatalf("%v d=%d element %d: tile %v, generic %v", k, d, e, a[e], b[e])
				}
			}
		}
	}
}

// TestDot32PairsMatchesDotRow32 compares Dot32Pairs with DotRow32 bit for
// bit on scattered pairs (repeats, short last groups of 16 pairs, partial
// last blocks of 16 dimensions), with values from subnormal to overflowing.
func TestDot32PairsMatchesDotRow32(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	val := func() float32 {
		switch r.IntN(10) {
		case 0:
			return float32(r.NormFloat64() * 1e-41) // subnormal
		case 1:
			return float32(r.NormFloat64() * 1e19) // products near overflow
		case 2:
			return 0
		default:
			return float32(r.NormFloat64())
		}
	}
	for _, d := range []int{1, 2, 3, 15, 16, 17, 31, 384, 769} {
		const rows, qrows = 50, 7
		g := make([]float32, rows*d)
		for i := range g {
			g[i] = val()
		}
		q := make([]float32, qrows*d)
		for i := range q {
			q[i] = val()
		}
		for _, n := range []int{1, 15, 16, 17, 63, 64, 65, 130} {
			goff, qoff := make([]int32, n), make([]int32, n)
			for l := range goff {
				goff[l], qoff[l] = int32(r.IntN(rows)*d), int32(r.IntN(qrows)*d)
			}
			out := make([]float32, n)
			Dot32Pairs(q, qoff, g, goff, d, out)
			for l, o := range goff {
				want := DotRow32(q[qoff[l]:int(qoff[l])+d], g[o:int(o)+d])
				got := out[l]
				if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
					t.Fatalf("d=%d n=%d lane %d: got %v, want %v (SIMD %v)", d, n, l, got, want, gatherSIMD())
				}
			}
		}
	}
}

// TestQuantise16MatchesGeneric: the SIMD passes give the portable Q and
// Σ Q² exactly, max|x| exactly, and the float64 sums within their stated
// rounding bounds.
func TestQuantise16MatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, d := range []int{1, 7, 8, 9, 16, 17, 384, 769} {
		x := make([]float32, d)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(5)-2)))
		}
		mx, ss := AbsMaxSumSq32(x)
		gmx, gss := absMaxSumSq32Generic(x)
		if mx != gmx || math.Abs(ss-gss) > 2*float64(d+12)*0x1p-53*gss {
			t.Fatalf("d=%d: AbsMaxSumSq32 %v %v, generic %v %v", d, mx, ss, gmx, gss)
		}
		sigma := float64(float32(mx / 30000))
		inv := 1 / sigma
		q, gq := make([]int16, d), make([]int16, d)
		n2, rr := Quantise16(x, inv, sigma, q)
		gn2, grr := quantise16Generic(x, inv, sigma, gq)
		var want float64
		for i, v := range x {
			if q[i] != gq[i] {
				t.Fatalf("d=%d i=%d: Q %d, generic %d", d, i, q[i], gq[i])
			}
			dl := float64(v) - sigma*float64(q[i])
			want += dl * dl
		}
		if n2 != gn2 || math.Abs(rr-grr) > 2*float64(d+12)*0x1p-53*want {
			t.Fatalf("d=%d: Quantise16 %v %v, generic %v %v", d, n2, rr, gn2, grr)
		}
	}
}

// PackInt16GalleryGroup writes what PackInt16Gallery writes row by row,
// for whole and partial groups, even and odd widths.
func TestPackInt16GalleryGroup(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, d := range []int{1, 2, 3, 16, 17, 384, 769} {
		for _, gn := range []int{1, 15, 16, 17, 33, 40} {
			rows := int16Rows(r, gn, d)
			want := make([]int32, Int16GalleryLen(gn, d))
			got := make([]int32, len(want))
			for j := range gn {
				PackInt16Gallery(rows[j*d:(j+1)*d], j, want)
			}
			for j0 := 0; j0 < gn; j0 += 16 {
				n := min(16, gn-j0)
				PackInt16GalleryGroup(rows[j0*d:(j0+n)*d], j0, n, d, got)
			}
			for k := range want {
				if got[k] != want[k] {
					t.Fatalf("d=%d gn=%d element %d: got %#x, want %#x", d, gn, k, got[k], want[k])
				}
			}
		}
	}
}
