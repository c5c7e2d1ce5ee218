package kernel

import (
	"math"
	"strconv"
)

// The integer kernel of rank's int16 screen for the float32 protocol
// (rank/screen.md "float32 protocol"). It is not the exact rule of SPEC
// §4.2: it computes the integer dot product of two quantised rows,
//
//	I = Σ_k a_k·b_k   (int16 values, products and sums in int32, wrapping),
//
// and scales it to float32 as c = fl32(fl32(fl32(I)·σ_g)·σ_q). Addition
// modulo 2³² is associative and commutative, so every summation order
// gives the same I, and the callers keep |partial sums| < 2³¹ so that I
// is the exact integer. DotInt16Row plus the scaling is the definition
// every implementation reproduces bit for bit.

// Int16QueryTile and Int16GalleryTile are the row groups of the packed
// layouts: queries in groups of 12 rows, gallery rows in groups of 16, and
// a kernel call covers 12 queries × 32 gallery rows.
const (
	Int16QueryTile   = 12
	Int16GalleryTile = 32
	int16Lanes       = 16
	// Int16GalleryGroup is the row group of the packed gallery layout
	// (PackInt16GalleryGroup).
	Int16GalleryGroup = int16Lanes
)

// int16TileKind names a 12 × 32 tile of DotInt16: every one computes the
// bits of dotInt16TileGeneric.
type int16TileKind uint8

const (
	int16Generic int16TileKind = iota // dotInt16TileGeneric
	int16AVX2                         // VPMADDWD + VPADDD, ymm (int16avx2_amd64.s)
	int16VNNI                         // AVX-512 VPDPWSSD, zmm (int16_amd64.s)
)

func (k int16TileKind) String() string {
	switch k {
	case int16Generic:
		return "generic"
	case int16AVX2:
		return "avx2"
	case int16VNNI:
		return "vnni"
	}
	return "int16TileKind(" + strconv.Itoa(int(k)) + ")"
}

// int16TileFor chooses the tile for a kernel name (Name) on a CPU with or
// without AVX-512 VNNI and AVX2 (int16Kind passes this CPU's; a build
// without the assembly passes neither): under "avx512" the VNNI tile where
// the CPU has VNNI; under "avx2", or "avx512" without VNNI, the AVX2 tile
// where it has AVX2; else (and always under "generic") the portable tile.
func int16TileFor(name string, vnni, avx2 bool) int16TileKind {
	switch {
	case name == "avx512" && vnni:
		return int16VNNI
	case (name == "avx2" || name == "avx512") && avx2:
		return int16AVX2
	}
	return int16Generic
}

// int16SIMD reports whether DotInt16 runs a SIMD tile under the active
// kernel.
func int16SIMD() bool { return int16Kind() != int16Generic }

// DotInt16Row is the integer dot product of the definition (int32,
// wrapping).
func DotInt16Row(a, b []int16) int32 {
	b = b[:len(a)]
	var acc int32
	for k, x := range a {
		acc += int32(x) * int32(b[k])
	}
	return acc
}

// ScaleInt16 is the scaling of the definition: fl32(fl32(fl32(I)·gs)·qs).
func ScaleInt16(i int32, qs, gs float32) float32 {
	return float32(float32(float32(i)*gs) * qs)
}

// Int16Pairs is the number of 32-bit pairs of a row of width d.
func Int16Pairs(d int) int { return (d + 1) / 2 }

// Int16QueryLen and Int16GalleryLen are the lengths (in int32 pairs) of
// the packed layouts of n rows of width d: whole groups, zero-padded.
func Int16QueryLen(n, d int) int {
	return (n + Int16QueryTile - 1) / Int16QueryTile * Int16QueryTile * Int16Pairs(d)
}

func Int16GalleryLen(n, d int) int {
	return (n + Int16GalleryTile - 1) / Int16GalleryTile * Int16GalleryTile * Int16Pairs(d)
}

// PackInt16Query writes query row i (width d) into the packed query
// layout dst: group i/12 holds, for each pair p, the pairs of its 12 rows.
// Rows never written must be zero (a fresh or cleared slice).
func PackInt16Query(row []int16, i int, dst []int32) {
	packInt16(row, i, Int16QueryTile, dst)
}

// PackInt16Gallery writes gallery row j into the packed gallery layout
// dst: group j/16 holds, for each pair p, the pairs of its 16 rows.
func PackInt16Gallery(row []int16, j int, dst []int32) {
	packInt16(row, j, int16Lanes, dst)
}

// PackInt16GalleryGroup writes the n ≤ Int16GalleryGroup (16) gallery rows of rows (row-major,
// width d) to positions j0 … j0+n−1 of the packed gallery layout, j0 a
// multiple of 16: what n PackInt16Gallery calls write, in sequential
// stores (one row's pairs lie 64 bytes apart in the layout).
func PackInt16GalleryGroup(rows []int16, j0, n, d int, dst []int32) {
	if j0%int16Lanes != 0 || n > int16Lanes {
		panic("kernel: PackInt16GalleryGroup needs a whole group")
	}
	np := Int16Pairs(d)
	rows = rows[:n*d]
	g := dst[j0*np : (j0+int16Lanes)*np]
	for p := range d / 2 {
		o := g[p*int16Lanes : p*int16Lanes+n]
		k := 2 * p
		for l := range o {
			o[l] = int32(uint32(uint16(rows[l*d+k])) | uint32(uint16(rows[l*d+k+1]))<<16)
		}
	}
	if d%2 == 1 {
		o := g[(np-1)*int16Lanes : (np-1)*int16Lanes+n]
		for l := range o {
			o[l] = int32(uint32(uint16(rows[l*d+d-1])))
		}
	}
}

func packInt16(row []int16, i, tile int, dst []int32) {
	d := len(row)
	np := Int16Pairs(d)
	base := (i/tile)*tile*np + i%tile
	k := 0
	for p := range d / 2 {
		dst[base+p*tile] = int32(uint32(uint16(row[k])) | uint32(uint16(row[k+1]))<<16)
		k += 2
	}
	if d%2 == 1 {
		dst[base+(np-1)*tile] = int32(uint32(uint16(row[d-1])))
	}
}

// DotInt16 writes out[i*gn+j] = ScaleInt16(I_ij, qs[i], gs[j]) for the qn
// packed queries qp and the gn packed gallery rows gp of width d.
func DotInt16(qp []int32, qn int, gp []int32, gn, d int, qs, gs []float32, out []float32) {
	dotInt16(int16Kind(), qp, qn, gp, gn, d, qs, gs, out)
}

// dotInt16 is DotInt16 with the tile k (one this CPU runs).
func dotInt16(k int16TileKind, qp []int32, qn int, gp []int32, gn, d int, qs, gs []float32, out []float32) {
	np := Int16Pairs(d)
	out = out[:qn*gn]
	qs, gs = qs[:qn], gs[:gn]
	qp, gp = qp[:Int16QueryLen(qn, d)], gp[:Int16GalleryLen(gn, d)]
	var tile [Int16QueryTile * Int16GalleryTile]float32
	var qsPad [Int16QueryTile]float32
	var gsPad [Int16GalleryTile]float32
	for j0 := 0; j0 < gn; j0 += Int16GalleryTile {
		jn := min(Int16GalleryTile, gn-j0)
		gsT := gs[j0:]
		if jn < Int16GalleryTile {
			gsPad = [Int16GalleryTile]float32{}
			copy(gsPad[:], gs[j0:])
			gsT = gsPad[:]
		}
		ga := gp[j0*np:]
		for i0 := 0; i0 < qn; i0 += Int16QueryTile {
			in := min(Int16QueryTile, qn-i0)
			qsT := qs[i0:]
			if in < Int16QueryTile {
				qsPad = [Int16QueryTile]float32{}
				copy(qsPad[:], qs[i0:])
				qsT = qsPad[:]
			}
			qa := qp[i0*np:]
			full := in == Int16QueryTile && jn == Int16GalleryTile
			dst, ldo := tile[:], Int16GalleryTile
			if full {
				dst, ldo = out[i0*gn+j0:], gn
			}
			if k == int16Generic {
				dotInt16TileGeneric(qa, ga, np, qsT, gsT, dst, ldo)
			} else {
				dotInt16Tile(k, qa, ga, np, qsT, gsT, dst, ldo)
			}
			if !full {
				for i := range in {
					copy(out[(i0+i)*gn+j0:(i0+i)*gn+j0+jn], tile[i*Int16GalleryTile:])
				}
			}
		}
	}
}

// dotInt16TileGeneric is the portable tile: 12 packed queries × 32 packed
// gallery rows (two groups of 16), written to dst with row stride ldo.
func dotInt16TileGeneric(qa, ga []int32, np int, qs, gs []float32, dst []float32, ldo int) {
	var acc [Int16QueryTile][Int16GalleryTile]int32
	for p := range np {
		qv := qa[p*Int16QueryTile : (p+1)*Int16QueryTile]
		g0 := ga[p*int16Lanes : (p+1)*int16Lanes]
		g1 := ga[(np+p)*int16Lanes : (np+p+1)*int16Lanes]
		for i, qq := range qv {
			qlo, qhi := int32(int16(qq)), qq>>16
			for l := range int16Lanes {
				a, b := g0[l], g1[l]
				acc[i][l] += qlo*int32(int16(a)) + qhi*(a>>16)
				acc[i][int16Lanes+l] += qlo*int32(int16(b)) + qhi*(b>>16)
			}
		}
	}
	for i := range Int16QueryTile {
		for j := range Int16GalleryTile {
			dst[i*ldo+j] = ScaleInt16(acc[i][j], qs[i], gs[j])
		}
	}
}

// Int16Fast reports whether DotInt16 runs a SIMD tile under the active
// kernel: AVX-512 VNNI under "avx512" (VPDPWSSD, twice the multiply-adds of
// a float32 FMA per instruction), AVX2 under "avx2" or "avx512" without
// VNNI (VPMADDWD + VPADDD). The portable tile is far slower than Dot32, so
// rank screens with it only in tests.
func Int16Fast() bool { return int16SIMD() }

// Int16FastFloat64 reports whether the int16 screen can pay under the
// float64 protocol: the integer tile and the re-scoring of its undecided
// pairs (Dot64PairsQuery) both run in SIMD under the active kernel.
func Int16FastFloat64() bool { return Int16Fast() && Dot64PairsQueryFast() }

// pairs32Impl names an implementation of Dot32Pairs: every one produces
// the bits of DotRow32.
type pairs32Impl uint8

const (
	pairs32Scalar pairs32Impl = iota // DotRow32 pair by pair
	pairs32AVX2                      // 8 chains per ymm (pairs32avx2_amd64.s)
	pairs32AVX512                    // 16 chains per zmm (pairs_amd64.s)
)

func (k pairs32Impl) String() string {
	switch k {
	case pairs32Scalar:
		return "scalar"
	case pairs32AVX2:
		return "avx2"
	case pairs32AVX512:
		return "avx512"
	}
	return "pairs32Impl(" + strconv.Itoa(int(k)) + ")"
}

// pairs32For chooses the Dot32Pairs implementation for a kernel name
// (Name) on a CPU with or without AVX-512F and AVX2+FMA (pairs32Kind passes
// this CPU's; a build without the assembly passes neither), as
// int16TileFor chooses the int16 tile: the AVX-512 chains under "avx512",
// the AVX2 chains under "avx2" (or "avx512" without AVX-512F), else (and
// always under "generic") DotRow32 pair by pair.
func pairs32For(name string, avx512, avx2 bool) pairs32Impl {
	switch {
	case name == "avx512" && avx512:
		return pairs32AVX512
	case (name == "avx2" || name == "avx512") && avx2:
		return pairs32AVX2
	}
	return pairs32Scalar
}

// Dot32Pairs writes out[l] = DotRow32(q[qoff[l]:qoff[l]+d], g[goff[l]:goff[l]+d])
// for element offsets qoff[l], goff[l] of rows of q and g: the exact
// float32 rule for a list of scattered pairs, as rank's int16 screen
// verifies its undecided pairs. Lanes of a vector hold pairs' chains, fed
// by transposes of the rows' chunks in registers (gathers were slower):
// with AVX-512 16 pairs per zmm (16×16 transposes); with AVX2 8 pairs per
// ymm, up to 4 groups in flight, and q_k broadcast for 8 consecutive
// pairs that share a query row. Every implementation produces the bits of
// DotRow32.
func Dot32Pairs(q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32) {
	qoff, out = qoff[:len(goff)], out[:len(goff)]
	for l, o := range goff {
		if o < 0 || int(o)+d > len(g) || qoff[l] < 0 || int(qoff[l])+d > len(q) {
			panic("kernel: Dot32Pairs offset out of range")
		}
	}
	if d == 0 || len(goff) == 0 {
		clear(out)
		return
	}
	dot32Pairs(pairs32Kind(), q, qoff, g, goff, d, out)
}

// dot32Pairs is Dot32Pairs (offsets checked, d ≥ 1, at least one pair)
// with the implementation k, which the CPU must run.
func dot32Pairs(k pairs32Impl, q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32) {
	switch {
	case k == pairs32AVX512 && len(g) < 1<<31 && len(q) < 1<<31: // the gathers take int32 offsets
		dot32PairsSIMD(q, qoff, g, goff, d, out)
	case k == pairs32AVX2:
		dot32PairsAVX2(q, qoff, g, goff, d, out)
	default:
		for l, o := range goff {
			out[l] = DotRow32(q[qoff[l]:int(qoff[l])+d], g[o:int(o)+d])
		}
	}
}

// AbsMaxSumSq32 returns max_i |x_i| and a float64 sum of the squares x_i²
// (each exact; the sum is formed by chains of at most len(x)/16 + 12
// roundings per term, so it is within γ_{len(x)+12}(2⁻⁵³) of Σ x_i²).
func AbsMaxSumSq32(x []float32) (mx, ss float64) { return absMaxSumSq32(x) }

func absMaxSumSq32Generic(x []float32) (mx, ss float64) {
	for _, v := range x {
		f := float64(v)
		if a := math.Abs(f); a > mx {
			mx = a
		}
		ss = math.FMA(f, f, ss)
	}
	return mx, ss
}

// Quantise16 writes q_i = Q_i = round-to-even(fl64(x_i·inv)) as int16 (the
// caller ensures |Q_i| ≤ 32767) and returns n2 = Σ Q_i² (exact: integers
// below 2⁵³ while len(x) < 2²³) and rr, a sum of the squared residuals
// δ_i = x_i − σ·Q_i (each exact in float64 for a float32 σ) formed by
// chains of at most len(x)/8 + 9 roundings per term.
func Quantise16(x []float32, inv, sigma float64, q []int16) (n2, rr float64) {
	return quantise16(x, inv, sigma, q[:len(x)])
}

func quantise16Generic(x []float32, inv, sigma float64, q []int16) (n2, rr float64) {
	q = q[:len(x)]
	for i, v := range x {
		f := float64(v)
		t := math.RoundToEven(f * inv)
		q[i] = int16(t)
		n2 = math.FMA(t, t, n2)
		dl := math.FMA(-sigma, t, f)
		rr = math.FMA(dl, dl, rr)
	}
	return n2, rr
}
