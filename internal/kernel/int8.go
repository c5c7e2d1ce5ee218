package kernel

import "strconv"

// The integer kernel of an int8 screen (issue #28), the analogue of the
// int16 one (int16.go). It computes the integer dot product of two
// quantised rows,
//
//	I = Σ_k a_k·b_k   (int8 values, products and sums in int32, wrapping),
//
// and scales it to float32 as c = fl32(fl32(fl32(I)·σ_g)·σ_q). Each
// product has |a_k·b_k| ≤ 2¹⁴ (the largest is (−128)·(−128)), so every
// partial sum of a row of width d lies in [−16256·d, 16384·d] and I is the
// exact integer for d ≤ Int8ExactWidth = 2¹⁷ − 1 (at d = 2¹⁷ the all-(−128)
// rows sum to 2³¹, which wraps to −2³¹). Addition modulo 2³² is
// associative and commutative, so every summation order gives the same I
// for every d; DotInt8Row plus ScaleInt8 is the definition every
// implementation reproduces bit for bit.
//
// The AVX-512 VNNI tile (int8_amd64.s) multiplies with VPDPBUSD, which
// takes unsigned bytes from one operand and signed bytes from the other.
// The packed query layout therefore holds u_k = a_k + 128 ∈ [0, 255] (the
// byte a_k XOR 0x80), and each row of the packed gallery layout carries
// its correction c = 128·Σ_k b_k (int32, |c| ≤ d·2¹⁴), so that
//
//	Σ_k u_k·b_k − c = Σ_k a_k·b_k   (mod 2³²).
//
// VPDPBUSD adds in int32 with wrapping (not VPDPBUSDS, which saturates),
// and so does the subtraction, so the tile's I equals DotInt8Row's modulo
// 2³² — bit for bit — for every d, even where the biased sum itself,
// |Σ u_k·b_k| ≤ d·255·128, passes 2³¹ (d > 65793). No width limit is
// needed for the kernels to agree; Int8ExactWidth bounds where the common
// result is the true integer.

// Int8ExactWidth is the largest row width for which DotInt8Row's int32 is
// the exact integer Σ a_k·b_k for every pair of int8 rows.
const Int8ExactWidth = 1<<17 - 1

// Int8QueryTile and Int8GalleryTile are the row groups of the packed
// layouts: queries in groups of 12 rows, gallery rows in groups of 16
// (Int8GalleryGroup), and a kernel call covers 12 queries × 32 gallery
// rows.
const (
	Int8QueryTile    = 12
	Int8GalleryTile  = 32
	int8Lanes        = 16
	Int8GalleryGroup = int8Lanes
	// int8QueryBias is XORed into every byte of the packed query layout:
	// a_k + 128 as an unsigned byte.
	int8QueryBias = 0x80
)

// int8TileKind names a 12 × 32 tile of DotInt8: every one computes the
// bits of dotInt8TileGeneric.
type int8TileKind uint8

const (
	int8Generic int8TileKind = iota // dotInt8TileGeneric
	int8VNNI                        // AVX-512 VPDPBUSD, zmm (int8_amd64.s)
)

func (k int8TileKind) String() string {
	switch k {
	case int8Generic:
		return "generic"
	case int8VNNI:
		return "vnni"
	}
	return "int8TileKind(" + strconv.Itoa(int(k)) + ")"
}

// int8TileFor chooses the tile for a kernel name (Name) on a CPU with or
// without AVX-512F + AVX-512 VNNI (int8Kind passes this CPU's; a build
// without the assembly passes false): the VNNI tile under "avx512" where
// the CPU has it, else (and always under "avx2" or "generic") the portable
// tile.
func int8TileFor(name string, vnni bool) int8TileKind {
	if name == "avx512" && vnni {
		return int8VNNI
	}
	return int8Generic
}

// Int8Fast reports whether DotInt8 runs a SIMD tile under the active
// kernel: AVX-512 VNNI (VPDPBUSD, four int8 multiply-adds per int32 lane)
// under "avx512". The portable tile is far slower than Dot32.
func Int8Fast() bool { return int8Kind() != int8Generic }

// DotInt8Row is the integer dot product of the definition (int32,
// wrapping; the exact integer for len(a) ≤ Int8ExactWidth).
func DotInt8Row(a, b []int8) int32 {
	b = b[:len(a)]
	var acc int32
	for k, x := range a {
		acc += int32(x) * int32(b[k])
	}
	return acc
}

// ScaleInt8 is the scaling of the definition: fl32(fl32(fl32(I)·gs)·qs),
// as ScaleInt16.
func ScaleInt8(i int32, qs, gs float32) float32 {
	return float32(float32(float32(i)*gs) * qs)
}

// Int8Quads is the number of 32-bit quads (four int8 dimensions) of a row
// of width d.
func Int8Quads(d int) int { return (d + 3) / 4 }

// int8GroupLen is the length (in int32) of one group of 16 packed gallery
// rows: nq quads × 16 lanes, then the 16 rows' corrections.
func int8GroupLen(d int) int { return (Int8Quads(d) + 1) * int8Lanes }

// Int8QueryLen and Int8GalleryLen are the lengths (in int32) of the packed
// layouts of n rows of width d: whole groups, zero-padded. A gallery group
// of 16 rows holds their quads (quad p of the 16 rows at 16p … 16p+15)
// followed by their 16 corrections 128·Σ_k b_k.
func Int8QueryLen(n, d int) int {
	return (n + Int8QueryTile - 1) / Int8QueryTile * Int8QueryTile * Int8Quads(d)
}

func Int8GalleryLen(n, d int) int {
	return (n + Int8GalleryTile - 1) / Int8GalleryTile * 2 * int8GroupLen(d)
}

// int8Quad packs four int8 values, the first in the low byte.
func int8Quad(a, b, c, d int8) int32 {
	return int32(uint32(uint8(a)) | uint32(uint8(b))<<8 | uint32(uint8(c))<<16 | uint32(uint8(d))<<24)
}

// int8Biased is the 0x80 XOR of every byte of a quad (x ↦ x + 128 as an
// unsigned byte, and back).
func int8Biased(q int32) int32 { return q ^ int8BiasWord }

// int8BiasWord is int8QueryBias in each byte of a word: 0x80808080.
const int8BiasWord = -0x7f7f7f80

// int8RowQuad is quad p of row, the dimensions past the end zero.
func int8RowQuad(row []int8, p int) int32 {
	k := 4 * p
	if k+4 <= len(row) {
		return int8Quad(row[k], row[k+1], row[k+2], row[k+3])
	}
	var v [4]int8
	copy(v[:], row[k:])
	return int8Quad(v[0], v[1], v[2], v[3])
}

// int8Correction is 128·Σ_k b_k of a gallery row (int32; exact for
// len(b) < 2¹⁷, wrapping beyond, as the tile's sums).
func int8Correction(b []int8) int32 {
	var s int32
	for _, x := range b {
		s += int32(x)
	}
	return s << 7
}

// PackInt8Query writes query row i (width d) into the packed query layout
// dst: group i/12 holds, for each quad p, the quads of its 12 rows, every
// byte biased to a_k + 128 (the padding past d too, so a padded dimension
// is a_k = 0). Rows never written (zero words: a_k = −128) only feed
// results that DotInt8 discards.
func PackInt8Query(row []int8, i int, dst []int32) {
	d := len(row)
	nq := Int8Quads(d)
	base := (i/Int8QueryTile)*Int8QueryTile*nq + i%Int8QueryTile
	for p := range nq {
		dst[base+p*Int8QueryTile] = int8Biased(int8RowQuad(row, p))
	}
}

// PackInt8Gallery writes gallery row j (width d) into the packed gallery
// layout dst: its quads (zero-padded past d) in lane j%16 of group j/16,
// and its correction 128·Σ_k b_k.
func PackInt8Gallery(row []int8, j int, dst []int32) {
	d := len(row)
	nq := Int8Quads(d)
	g := dst[(j/int8Lanes)*int8GroupLen(d):][:int8GroupLen(d)]
	l := j % int8Lanes
	for p := range nq {
		g[p*int8Lanes+l] = int8RowQuad(row, p)
	}
	g[nq*int8Lanes+l] = int8Correction(row)
}

// PackInt8GalleryGroup writes the n ≤ Int8GalleryGroup (16) gallery rows
// of rows (row-major, width d) to positions j0 … j0+n−1 of the packed
// gallery layout, j0 a multiple of 16: what n PackInt8Gallery calls write,
// in sequential stores.
func PackInt8GalleryGroup(rows []int8, j0, n, d int, dst []int32) {
	if j0%int8Lanes != 0 || n > int8Lanes {
		panic("kernel: PackInt8GalleryGroup needs a whole group")
	}
	nq := Int8Quads(d)
	rows = rows[:n*d]
	g := dst[(j0/int8Lanes)*int8GroupLen(d):][:int8GroupLen(d)]
	for p := range d / 4 {
		o := g[p*int8Lanes : p*int8Lanes+n]
		k := 4 * p
		for l := range o {
			r := rows[l*d+k : l*d+k+4]
			o[l] = int8Quad(r[0], r[1], r[2], r[3])
		}
	}
	if d%4 != 0 {
		o := g[(nq-1)*int8Lanes : (nq-1)*int8Lanes+n]
		for l := range o {
			o[l] = int8RowQuad(rows[l*d:(l+1)*d], nq-1)
		}
	}
	c := g[nq*int8Lanes : nq*int8Lanes+n]
	for l := range c {
		c[l] = int8Correction(rows[l*d : (l+1)*d])
	}
}

// DotInt8 writes out[i*gn+j] = ScaleInt8(I_ij, qs[i], gs[j]) for the qn
// packed queries qp (PackInt8Query) and the gn packed gallery rows gp
// (PackInt8Gallery) of width d.
func DotInt8(qp []int32, qn int, gp []int32, gn, d int, qs, gs []float32, out []float32) {
	dotInt8(int8Kind(), qp, qn, gp, gn, d, qs, gs, out)
}

// dotInt8 is DotInt8 with the tile k (one this CPU runs).
func dotInt8(k int8TileKind, qp []int32, qn int, gp []int32, gn, d int, qs, gs []float32, out []float32) {
	nq := Int8Quads(d)
	gl := int8GroupLen(d)
	out = out[:qn*gn]
	qs, gs = qs[:qn], gs[:gn]
	qp, gp = qp[:Int8QueryLen(qn, d)], gp[:Int8GalleryLen(gn, d)]
	var tile [Int8QueryTile * Int8GalleryTile]float32
	var qsPad [Int8QueryTile]float32
	var gsPad [Int8GalleryTile]float32
	for j0 := 0; j0 < gn; j0 += Int8GalleryTile {
		jn := min(Int8GalleryTile, gn-j0)
		gsT := gs[j0:]
		if jn < Int8GalleryTile {
			gsPad = [Int8GalleryTile]float32{}
			copy(gsPad[:], gs[j0:])
			gsT = gsPad[:]
		}
		ga := gp[j0/int8Lanes*gl:]
		for i0 := 0; i0 < qn; i0 += Int8QueryTile {
			in := min(Int8QueryTile, qn-i0)
			qsT := qs[i0:]
			if in < Int8QueryTile {
				qsPad = [Int8QueryTile]float32{}
				copy(qsPad[:], qs[i0:])
				qsT = qsPad[:]
			}
			qa := qp[i0*nq:]
			full := in == Int8QueryTile && jn == Int8GalleryTile
			dst, ldo := tile[:], Int8GalleryTile
			if full {
				dst, ldo = out[i0*gn+j0:], gn
			}
			if k == int8Generic {
				dotInt8TileGeneric(qa, ga, nq, qsT, gsT, dst, ldo)
			} else {
				dotInt8Tile(k, qa, ga, nq, qsT, gsT, dst, ldo)
			}
			if !full {
				for i := range in {
					copy(out[(i0+i)*gn+j0:(i0+i)*gn+j0+jn], tile[i*Int8GalleryTile:])
				}
			}
		}
	}
}

// dotInt8TileGeneric is the portable tile: 12 packed queries × 32 packed
// gallery rows (two groups of 16), written to dst with row stride ldo. It
// decodes the biased query bytes back to a_k and multiplies signed by
// signed, as DotInt8Row; it does not read the corrections.
func dotInt8TileGeneric(qa, ga []int32, nq int, qs, gs []float32, dst []float32, ldo int) {
	gl := (nq + 1) * int8Lanes
	var acc [Int8QueryTile][Int8GalleryTile]int32
	for p := range nq {
		qv := qa[p*Int8QueryTile : (p+1)*Int8QueryTile]
		g0 := ga[p*int8Lanes : (p+1)*int8Lanes]
		g1 := ga[gl+p*int8Lanes : gl+(p+1)*int8Lanes]
		for i, qq := range qv {
			u := int8Biased(qq)
			a0, a1, a2, a3 := int32(int8(u)), int32(int8(u>>8)), int32(int8(u>>16)), u>>24
			for l := range int8Lanes {
				x, y := g0[l], g1[l]
				acc[i][l] += a0*int32(int8(x)) + a1*int32(int8(x>>8)) + a2*int32(int8(x>>16)) + a3*(x>>24)
				acc[i][int8Lanes+l] += a0*int32(int8(y)) + a1*int32(int8(y>>8)) + a2*int32(int8(y>>16)) + a3*(y>>24)
			}
		}
	}
	for i := range Int8QueryTile {
		for j := range Int8GalleryTile {
			dst[i*ldo+j] = ScaleInt8(acc[i][j], qs[i], gs[j])
		}
	}
}
