//go:build amd64 && !purego

package kernel

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

var (
	hasVNNI     = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI
	hasInt16AVX = cpu.X86.HasAVX2
)

// int16Kind is the tile DotInt16 runs under the active kernel.
func int16Kind() int16TileKind { return int16TileFor(Name(), hasVNNI, hasInt16AVX) }

// int16Kinds lists the tiles this CPU runs, the portable one first.
func int16Kinds() []int16TileKind {
	k := []int16TileKind{int16Generic}
	if hasInt16AVX {
		k = append(k, int16AVX2)
	}
	if hasVNNI {
		k = append(k, int16VNNI)
	}
	return k
}

// dotInt16VNNI is the 12 × 32 tile with AVX-512 VNNI (int16_amd64.s).
//
//go:noescape
func dotInt16VNNI(qa, ga *int32, np int, qs, gs, dst *float32, ldo int)

// dotInt16AVX2 is the 12 × 32 tile with AVX2 (int16avx2_amd64.s).
//
//go:noescape
func dotInt16AVX2(qa, ga *int32, np int, qs, gs, dst *float32, ldo int)

// dotInt16Tile runs the SIMD tile k, which the CPU must have (int16Kinds).
func dotInt16Tile(k int16TileKind, qa, ga []int32, np int, qs, gs []float32, dst []float32, ldo int) {
	if np == 0 || k == int16Generic { // the assembly loops take at least one pair
		dotInt16TileGeneric(qa, ga, np, qs, gs, dst, ldo)
		return
	}
	_ = qa[Int16QueryTile*np-1]
	_ = ga[Int16GalleryTile*np-1]
	_ = qs[Int16QueryTile-1]
	_ = gs[Int16GalleryTile-1]
	_ = dst[(Int16QueryTile-1)*ldo+Int16GalleryTile-1]
	switch {
	case k == int16VNNI && hasVNNI:
		dotInt16VNNI(&qa[0], &ga[0], np, &qs[0], &gs[0], &dst[0], ldo)
	case k == int16AVX2 && hasInt16AVX:
		dotInt16AVX2(&qa[0], &ga[0], np, &qs[0], &gs[0], &dst[0], ldo)
	default:
		panic("kernel: int16 tile " + k.String() + " not available on this CPU")
	}
}

// gatherSIMD reports whether Dot32Pairs runs the AVX-512 chains.
func gatherSIMD() bool { return cpu.X86.HasAVX512F && Name() == "avx512" }

// hasPairs32AVX2: the CPU runs dot32PairsT8 and dot32PairsQ8.
var hasPairs32AVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// pairs32Kind is the Dot32Pairs implementation under the active kernel.
func pairs32Kind() pairs32Impl {
	return pairs32For(Name(), cpu.X86.HasAVX512F, hasPairs32AVX2)
}

// pairs32Kinds lists the Dot32Pairs implementations this CPU runs, the
// scalar one first.
func pairs32Kinds() []pairs32Impl {
	k := []pairs32Impl{pairs32Scalar}
	if hasPairs32AVX2 {
		k = append(k, pairs32AVX2)
	}
	if cpu.X86.HasAVX512F {
		k = append(k, pairs32AVX512)
	}
	return k
}

// dot32PairsT8 is groups (1–4) × 8 chains, query and gallery rows
// transposed in registers (pairs32avx2_amd64.s); d ≥ 1.
//
//go:noescape
func dot32PairsT8(q *float32, qoff *int32, rows *float32, goff *int32, d int, groups int, out *float32)

// dot32PairsQ8 is groups (1–4) × 8 chains whose group g shares the query
// row at qoff[g], broadcast per dimension (pairs32avx2_amd64.s); d ≥ 1.
//
//go:noescape
func dot32PairsQ8(q *float32, qoff *int32, rows *float32, goff *int32, d int, groups int, out *float32)

// pairs32Batch collects the pairs of one Dot32Pairs call for the AVX2
// kernels: whole groups of 8 consecutive pairs sharing a query (rank lists
// a tile's pairs query by query) for dot32PairsQ8, the others for
// dot32PairsT8, up to 4 groups a call.
type pairs32Batch struct {
	q, g   []float32
	d      int
	out    []float32
	qGroup [4]int32  // query offset of each shared-query group
	qGoff  [32]int32 // their gallery offsets
	qAt    [4]int    // out index of each group's first pair
	nq     int       // shared-query groups collected
	tQoff  [32]int32 // the other pairs
	tGoff  [32]int32
	tAt    [32]int
	nt     int
	r      [32]float32
}

func (b *pairs32Batch) flushQ() {
	if b.nq == 0 {
		return
	}
	dot32PairsQ8(&b.q[0], &b.qGroup[0], &b.g[0], &b.qGoff[0], b.d, b.nq, &b.r[0])
	for k := range b.nq {
		copy(b.out[b.qAt[k]:b.qAt[k]+8], b.r[8*k:8*k+8])
	}
	b.nq = 0
}

func (b *pairs32Batch) flushT() {
	n := b.nt
	if n == 0 {
		return
	}
	groups := (n + 7) / 8
	for k := n; k < 8*groups; k++ { // a short last group repeats its last pair
		b.tQoff[k], b.tGoff[k] = b.tQoff[n-1], b.tGoff[n-1]
	}
	dot32PairsT8(&b.q[0], &b.tQoff[0], &b.g[0], &b.tGoff[0], b.d, groups, &b.r[0])
	for k, at := range b.tAt[:n] {
		b.out[at] = b.r[k]
	}
	b.nt = 0
}

// dot32PairsAVX2 is Dot32Pairs (offsets checked, d ≥ 1) with the AVX2
// kernels.
func dot32PairsAVX2(q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32) {
	b := pairs32Batch{q: q, g: g, d: d, out: out}
	n := len(goff)
	for i := 0; i < n; {
		j := i + 1
		for j < n && qoff[j] == qoff[i] {
			j++
		}
		for ; i+8 <= j; i += 8 {
			b.qGroup[b.nq], b.qAt[b.nq] = qoff[i], i
			copy(b.qGoff[8*b.nq:8*b.nq+8], goff[i:i+8])
			if b.nq++; b.nq == 4 {
				b.flushQ()
			}
		}
		for ; i < j; i++ {
			b.tQoff[b.nt], b.tGoff[b.nt], b.tAt[b.nt] = qoff[i], goff[i], i
			if b.nt++; b.nt == 32 {
				b.flushT()
			}
		}
	}
	b.flushQ()
	b.flushT()
}

// dot32PairsSIMD runs 16 pairs per dot32PairsT call; a short last group
// repeats its last pair.
func dot32PairsSIMD(q []float32, qoff []int32, g []float32, goff []int32, d int, out []float32) {
	var buf [512]float32
	var qo, gO [16]int32
	var r [16]float32
	n := len(goff)
	for k := 0; k < n; k += 16 {
		if k+16 <= n {
			dot32PairsT(&q[0], &qoff[k], &g[0], &goff[k], d, &buf[0], &out[k])
			continue
		}
		for l := range qo {
			qo[l], gO[l] = qoff[min(k+l, n-1)], goff[min(k+l, n-1)]
		}
		dot32PairsT(&q[0], &qo[0], &g[0], &gO[0], d, &buf[0], &r[0])
		copy(out[k:n], r[:])
	}
}

// hasQuantSIMD: the CPU runs the AVX-512 passes of quant_amd64.s;
// hasQuantAVX2: the AVX2 + FMA passes of quantavx2_amd64.s, which give the
// same bits (each float64 lane of a zmm is half of one of two ymm, fed
// the same elements through the same operations).
var (
	hasQuantSIMD = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL
	hasQuantAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

// quantImpl names an implementation of absMaxSumSq32 and quantise16.
type quantImpl uint8

const (
	quantGeneric quantImpl = iota // the scalar loops of int16.go
	quantAVX2                     // quantavx2_amd64.s
	quantAVX512                   // quant_amd64.s
)

// quantKind is the implementation this CPU runs: AVX-512 where it has it,
// else AVX2 + FMA, else the scalar loops. The choice does not follow the
// kernel name (Name): the two SIMD forms give the same bits.
var quantKind = quantFor(hasQuantSIMD, hasQuantAVX2)

func quantFor(avx512, avx2 bool) quantImpl {
	switch {
	case avx512:
		return quantAVX512
	case avx2:
		return quantAVX2
	}
	return quantGeneric
}

//go:noescape
func absMaxSumSq32AVX512(x *float32, n int, mx *float32, ss *float64)

//go:noescape
func quant16AVX512(x *float32, n int, inv, sigma float64, q *int16, out *float64)

// absMaxSumSq32AVX2 is absMaxSumSq32AVX512 with AVX2 + FMA
// (quantavx2_amd64.s), the same outputs bit for bit; n ≥ 1.
//
//go:noescape
func absMaxSumSq32AVX2(x *float32, n int, mx *float32, ss *float64)

// quant16AVX2 is quant16AVX512 with AVX2 + FMA (quantavx2_amd64.s), the
// same outputs bit for bit; n ≥ 1.
//
//go:noescape
func quant16AVX2(x *float32, n int, inv, sigma float64, q *int16, out *float64)

func absMaxSumSq32(x []float32) (mx, ss float64) { return absMaxSumSq32With(quantKind, x) }

// absMaxSumSq32With is absMaxSumSq32 with the implementation k (one this
// CPU runs). The SIMD forms take whole blocks of 16 values: 16 lane maxima
// and 8 float64 lane sums, which are combined here after the scalar loop
// over the tail.
func absMaxSumSq32With(k quantImpl, x []float32) (mx, ss float64) {
	nb := len(x) / 16
	if k == quantGeneric || nb == 0 {
		return absMaxSumSq32Generic(x)
	}
	var m [16]float32
	var s [8]float64
	switch {
	case k == quantAVX512 && hasQuantSIMD:
		absMaxSumSq32AVX512(&x[0], nb, &m[0], &s[0])
	case k == quantAVX2 && hasQuantAVX2:
		absMaxSumSq32AVX2(&x[0], nb, &m[0], &s[0])
	default:
		panic("kernel: quantisation pass not available on this CPU")
	}
	tm, ts := absMaxSumSq32Generic(x[nb*16:])
	mx = tm
	for _, v := range m {
		mx = max(mx, float64(v))
	}
	ss = ts
	for _, v := range s {
		ss += v
	}
	return mx, ss
}

func quantise16(x []float32, inv, sigma float64, q []int16) (n2, rr float64) {
	return quantise16With(quantKind, x, inv, sigma, q)
}

// quantise16With is quantise16 with the implementation k (one this CPU
// runs). The SIMD forms take whole blocks of 8 values: 8 float64 lane
// sums of each, which are added here to the scalar loop's over the tail.
func quantise16With(k quantImpl, x []float32, inv, sigma float64, q []int16) (n2, rr float64) {
	nb := len(x) / 8
	if k == quantGeneric || nb == 0 {
		return quantise16Generic(x, inv, sigma, q)
	}
	q = q[:len(x)]
	var out [16]float64
	switch {
	case k == quantAVX512 && hasQuantSIMD:
		quant16AVX512(&x[0], nb, inv, sigma, &q[0], &out[0])
	case k == quantAVX2 && hasQuantAVX2:
		quant16AVX2(&x[0], nb, inv, sigma, &q[0], &out[0])
	default:
		panic("kernel: quantisation pass not available on this CPU")
	}
	n2, rr = quantise16Generic(x[nb*8:], inv, sigma, q[nb*8:])
	for l := range 8 {
		n2 += out[l]
		rr += out[8+l]
	}
	return n2, rr
}

// dot32PairsT is 16 chains with the rows transposed in registers
// (pairs_amd64.s); buf is 512 floats of scratch.
//
//go:noescape
func dot32PairsT(q *float32, qoff *int32, rows *float32, goff *int32, d int, buf *float32, out *float32)

// placeSIMD reports whether PlaceBuckets32 runs the AVX-512 loop.
func placeSIMD() bool { return cpu.X86.HasAVX512F && Name() == "avx512" }

// placeBuckets32SIMD places len(v), a multiple of 16, scores. Every
// bucket index is at most Top, so the 32-bit gathers of Tab (at 2k bytes)
// stay inside it, and the table is non-increasing, so every threshold the
// kernel reads lies below Tab[0] ≤ len(sc) (the gathers of sc and ix are
// masked to the bucket's thresholds).
func placeBuckets32SIMD(b *Buckets32, v []float32, g []int32, sc []float32, ix []int32, slot []int32) {
	if len(b.Tab) < int(b.Top)+2 || int(b.Tab[0]) > len(sc) || len(ix) < len(sc) {
		panic("kernel: bucket table out of step with its thresholds")
	}
	par := [3]float32{b.Lo, b.Scale, b.Top}
	placeBuckets32AVX512(&v[0], &g[0], len(v)/16, &par[0], &b.Tab[0], unsafe.SliceData(sc), unsafe.SliceData(ix), &slot[0])
}
