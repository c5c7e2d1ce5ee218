// Command asmgen writes the AVX2 and AVX-512 tile kernels of package kernel:
// kernel_amd64.s, their Go declarations (kernel_amd64_stubs.go) and the
// table the driver picks them from (kernel_amd64_tables.go). Run it with
// `go generate ./kernel`; the output is deterministic.
//
// Every tile kernel computes an MR×NR block of score accumulators, one per
// SIMD lane: MR gallery rows (read in place, one broadcast per row and k)
// against NR queries (a k-major packed panel, NV vectors of W lanes per k).
// Each lane walks k = 0…d−1 in order with one vector FMA per step, which is
// exactly the scalar fma chain of SPEC §4.2, so the results are the same bits
// as the row definition whatever the tile shape or lane.
//
// Tile contract (all strides in bytes):
//
//	a   gallery row 0 of the tile; row r starts at a + r*lda
//	p   packed queries: p[k*NR + l] = q[i0+l, k] (zero for padding lanes)
//	d   dimension, ≥ 1
//	c   out[i0, j0]; the score of (query i0+l, row r) goes to c + l*ldc + r*es
//	nq  queries to write, 1…NR;  ng  gallery rows to write, 1…MR
//
// The kernel reads MR full rows at a and d×NR elements at p (float32: it
// also prefetches the MR·lda bytes after its rows, the next tile's, as the
// drivers pack rows with lda = d·es; a prefetch never faults), and writes only
// the nq×ng valid scores: a full tile (nq = NR, ng = MR) is transposed in
// registers and written with vector stores (fullTileStore); other tiles go
// through a transposing copy from a stack tile.
//
// Squared L2 computes t = q − g exactly as written (VSUBPD with the query
// vector as minuend) and then fma(t, t, acc). The AVX-512 kernels use
// AVX512F only (VPXORQ rather than VXORPS, which needs DQ; no mask or
// byte/word instructions), so they run on every CPU with AVX512F.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// isa describes one vector instruction set.
type isa struct {
	name   string // suffix of the function names
	vbytes int    // bytes per vector register
	vec    func(i int) VecPhysical
	zero   func(v VecPhysical)
	shapes [][2]int // (MR, NV) tile shapes, NV ascending
	// blkShapes are the shapes of the blocked screening kernels.
	blkShapes [][2]int
}

var zregs = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
	Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}

var yregs = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}

var isas = []isa{
	{
		name:   "AVX2",
		vbytes: 32,
		vec:    func(i int) VecPhysical { return yregs[i] },
		zero:   func(v VecPhysical) { VXORPS(v, v, v) },
		// 16 registers: MR·NV accumulators + NV query vectors + broadcast + difference.
		shapes:    [][2]int{{12, 1}, {6, 2}},
		blkShapes: [][2]int{{12, 1}, {6, 2}},
	},
	{
		name:   "AVX512",
		vbytes: 64,
		vec:    func(i int) VecPhysical { return zregs[i] },
		// VPXORQ, not VXORPS: the EVEX form of VXORPS needs AVX512DQ.
		zero: func(v VecPhysical) { VPXORQ(v, v, v) },
		// 32 registers: always 24 accumulators.
		shapes: [][2]int{{24, 1}, {12, 2}, {8, 3}, {6, 4}},
		// The blocked kernels measured 2–3 % faster with 48-query panels
		// (8×3: 3 query vectors loaded per 24 FMAs) than with 64 (6×4) on
		// an Emerald Rapids core; the exact float32 kernels did not.
		blkShapes: [][2]int{{24, 1}, {12, 2}, {8, 3}},
	},
}

// prec describes one floating-point precision.
type prec struct {
	bits  int
	es    int // element size in bytes
	movup func(mxyz, mxyz1 Op)
	bcast func(mx, xyz Op)
	fma   func(mxyz, xyz, xyz1 Op)
	sub   func(mxyz, xyz, xyz1 Op)
	mov   func(src, dst Op) // scalar element move
	tmp   func() GPVirtual
}

var precs = []prec{
	{64, 8, func(a, b Op) { VMOVUPD(a, b) }, func(a, b Op) { VBROADCASTSD(a, b) },
		func(a, b, c Op) { VFMADD231PD(a, b, c) }, func(a, b, c Op) { VSUBPD(a, b, c) },
		func(a, b Op) { MOVQ(a, b) }, GP64},
	{32, 4, func(a, b Op) { VMOVUPS(a, b) }, func(a, b Op) { VBROADCASTSS(a, b) },
		func(a, b, c Op) { VFMADD231PS(a, b, c) }, func(a, b, c Op) { VSUBPS(a, b, c) },
		func(a, b Op) { MOVL(a, b) }, GP32},
}

var tables = flag.String("tables", "", "write the Go table of tile kernels to `file`")

func main() {
	flag.Parse()
	ConstraintExpr("amd64,!purego")
	for _, is := range isas {
		for _, pr := range precs {
			for _, sq := range []bool{false, true} {
				for _, sh := range is.shapes {
					tile(is, pr, sq, false, sh[0], sh[1])
				}
			}
		}
		// The screening kernel: float32 dot products accumulated in
		// chunks of screenChunk dimensions.
		for _, sh := range is.blkShapes {
			tile(is, precs[1], false, true, sh[0], sh[1])
		}
	}
	scanKernels()
	scanKernelsAVX2()
	placeKernel()
	if *tables != "" {
		writeTables(*tables)
	}
	Generate()
}

// writeTables writes one simdSet literal per ISA, listing its tile kernels.
func writeTables(path string) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by command: go run main.go -tables %s. DO NOT EDIT.\n\n", path)
	fmt.Fprintf(&b, "//go:build amd64 && !purego\n\npackage kernel\n\n")
	for _, is := range isas {
		fmt.Fprintf(&b, "var set%s = simdSet{\n", is.name)
		for _, pr := range precs {
			for _, sq := range []bool{false, true} {
				field := fmt.Sprintf("dot%d", pr.bits)
				if sq {
					field = fmt.Sprintf("sqDist%d", pr.bits)
				}
				fmt.Fprintf(&b, "%s: tiles[float%d]{width: %d, shapes: []tileShape[float%d]{\n", field, pr.bits, is.vbytes/pr.es, pr.bits)
				for _, sh := range is.shapes {
					fmt.Fprintf(&b, "{mr: %d, nv: %d, fn: %s},\n", sh[0], sh[1], funcName(is.name, pr.bits, sq, sh[0], sh[1]))
				}
				fmt.Fprintf(&b, "}},\n")
			}
		}
		fmt.Fprintf(&b, "dotBlk32: blkTiles{width: %d, shapes: []blkShape{\n", is.vbytes/4)
		for _, sh := range is.blkShapes {
			fmt.Fprintf(&b, "{mr: %d, nv: %d, fn: %s},\n", sh[0], sh[1], tileName(is.name, 32, "dotBlk", sh[0], sh[1]))
		}
		fmt.Fprintf(&b, "}},\n")
		fmt.Fprintf(&b, "}\n\n")
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// funcName returns the Go name of a tile kernel, e.g. dot64AVX512x6x4.
func funcName(isaName string, bits int, sq bool, mr, nv int) string {
	op := "dot"
	if sq {
		op = "sqDist"
	}
	return tileName(isaName, bits, op, mr, nv)
}

func tileName(isaName string, bits int, op string, mr, nv int) string {
	return fmt.Sprintf("%s%d%sx%dx%d", op, bits, isaName, mr, nv)
}

// screenChunk is the chunk length of the blocked screening kernels (dotBlk32):
// each accumulator restarts at +0 every screenChunk dimensions and the chunk
// sums are added in order into a total (rank/screen.md §6). It must match
// kernel.ScreenChunk.
const screenChunk = 32

func tile(is isa, pr prec, sq, blk bool, mr, nv int) {
	es, vb := pr.es, is.vbytes
	nr := nv * vb / es // queries per tile
	name := funcName(is.name, pr.bits, sq, mr, nv)
	if blk {
		name = tileName(is.name, pr.bits, "dotBlk", mr, nv)
	}
	typ := fmt.Sprintf("float%d", pr.bits)
	sig := fmt.Sprintf("func(a *%s, lda int, p *%s, d int, c *%s, ldc int, nq int, ng int)", typ, typ, typ)
	if blk {
		sig = fmt.Sprintf("func(a *%s, lda int, p *%s, d int, c *%s, ldc int, nq int, ng int, t *%s, flags int)", typ, typ, typ, typ)
	}
	TEXT(name, 0, sig)
	Pragma("noescape")
	what := "dot products"
	if sq {
		what = "squared distances"
	}
	if blk {
		what = fmt.Sprintf("dot products accumulated in chunks of %d dimensions", screenChunk)
	}
	Doc(fmt.Sprintf("%s computes a %d-row × %d-query tile of %s (see the tile contract).", name, mr, nr, what))
	if blk {
		Doc(fmt.Sprintf("%s continues the totals at t (the tile as [row][query], %d bytes) over the next d", name, mr*nv*vb),
			"dimensions, which start a chunk: flags&1 starts them at +0, flags&2 copies them into out at the end.")
	}

	acc := func(r, v int) VecPhysical { return is.vec(r*nv + v) }
	pv := func(v int) VecPhysical { return is.vec(mr*nv + v) }
	bc := is.vec(mr*nv + nv)
	t := is.vec(mr*nv + nv + 1)

	var frame Mem
	if !blk {
		frame = AllocLocal(mr * nv * vb)
	}

	Comment("Every accumulator starts at +0.")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			is.zero(acc(r, v))
		}
	}

	a := Load(Param("a"), GP64())
	lda := Load(Param("lda"), GP64())
	p := Load(Param("p"), GP64())
	d := Load(Param("d"), GP64())

	Comment("Rows 3m, 3m+1, 3m+2 are addressed as (base_m), (base_m)(lda*1), (base_m)(lda*2).")
	bases := []Register{a}
	if mr > 3 {
		l3 := GP64()
		LEAQ(Mem{Base: lda, Index: lda, Scale: 2}, l3)
		for m := 1; m < (mr+2)/3; m++ {
			b := GP64()
			MOVQ(bases[m-1], b)
			ADDQ(l3, b)
			bases = append(bases, b)
		}
	}
	row := func(r, disp int) Mem {
		m := Mem{Base: bases[r/3], Disp: disp}
		if r%3 > 0 {
			m.Index, m.Scale = lda, uint8(r%3)
		}
		return m
	}

	// step is one k: NV query vectors, then per gallery row a broadcast and
	// NV FMAs (preceded by the query−gallery difference for squared L2).
	step := func(u int) {
		for v := 0; v < nv; v++ {
			pr.movup(Mem{Base: p, Disp: u*nr*es + v*vb}, pv(v))
		}
		for r := 0; r < mr; r++ {
			pr.bcast(row(r, u*es), bc)
			for v := 0; v < nv; v++ {
				if sq {
					pr.sub(bc, pv(v), t) // t = q − g
					pr.fma(t, t, acc(r, v))
				} else {
					pr.fma(bc, pv(v), acc(r, v))
				}
			}
		}
	}
	advance := func(k int) {
		ADDQ(imm(k*nr*es), p)
		for _, b := range bases {
			ADDQ(imm(k*es), b)
		}
	}

	// The next tile's gallery rows follow this tile's (the drivers pass
	// packed rows, lda = d·es): each unrolled iteration of a float32
	// kernel prefetches the next stretch of them into L2, so that the row
	// streams start there instead of each paying memory latency before
	// the hardware prefetchers catch on (into L1 they evicted the panel;
	// the float64 kernels measured slower with it either way). A prefetch
	// never faults, so running past the gallery is harmless.
	var pf GPVirtual
	if pr.bits == 32 {
		pf = GP64()
		IMUL3Q(U32(mr), lda, pf)
		ADDQ(a, pf)
	}
	prefetchNext := func() {
		if pr.bits == 64 {
			return // measured slower for the float64 kernels
		}
		n := (unrollSteps*mr*es + 63) / 64
		for l := 0; l < n; l++ {
			PREFETCHT1(Mem{Base: pf, Disp: 64 * l})
		}
		ADDQ(imm(unrollSteps*mr*es), pf)
	}

	// The k loop runs unroll steps per iteration, then d mod unroll single
	// steps: any d ≥ 1 works, and no lane ever sees an extra (padding) term.
	const log2Unroll = 2
	const unroll = 1 << log2Unroll
	if unroll != unrollSteps {
		log.Fatal("unrollSteps")
	}
	if !blk {
		n := GP64()
		MOVQ(d, n)
		SHRQ(Imm(log2Unroll), n)
		JZ(LabelRef(name + "_rest"))
		Label(name + "_loop4")
		for u := 0; u < unroll; u++ {
			step(u)
		}
		prefetchNext()
		advance(unroll)
		DECQ(n)
		JNZ(LabelRef(name + "_loop4"))

		Label(name + "_rest")
		ANDQ(Imm(unroll-1), d)
		JZ(LabelRef(name + "_store"))
		Label(name + "_loop1")
		step(0)
		advance(1)
		DECQ(d)
		JNZ(LabelRef(name + "_loop1"))

		Label(name + "_store")
		if fastStore(is, pr) {
			fullTileStore(name, is, pr, mr, nv, nr, acc, nil)
			Label(name + "_spill")
		}
		Comment("Spill the tile as [row][query], then copy it transposed into out.")
		for r := 0; r < mr; r++ {
			for v := 0; v < nv; v++ {
				pr.movup(acc(r, v), frame.Offset(r*nv*vb+v*vb))
			}
		}
	} else {
		// The totals live at t as [row][query]; after each chunk every
		// accumulator is added to its total (in chunk order) and restarts
		// at +0. With flags&2 they then feed the transposing copy.
		tt := Load(Param("t"), GP64())
		tot := func(r, v int) Mem { return Mem{Base: tt, Disp: r*nv*vb + v*vb} }
		fl := Load(Param("flags"), GP64())
		ANDQ(Imm(1), fl)
		JZ(LabelRef(name + "_go"))
		Comment("A first call: every total starts at +0.")
		for r := 0; r < mr; r++ {
			for v := 0; v < nv; v++ {
				pr.movup(acc(0, 0), tot(r, v))
			}
		}
		Label(name + "_go")
		fold := func() {
			for r := 0; r < mr; r++ {
				for v := 0; v < nv; v++ {
					VADDPS(tot(r, v), acc(r, v), acc(r, v))
					pr.movup(acc(r, v), tot(r, v))
					is.zero(acc(r, v))
				}
			}
		}
		n, m := GP64(), GP64()
		MOVQ(d, n)
		SHRQ(Imm(5), n) // full chunks
		JZ(LabelRef(name + "_rest"))
		Label(name + "_chunk")
		MOVQ(U32(screenChunk/unroll), m)
		Label(name + "_loop4")
		for u := 0; u < unroll; u++ {
			step(u)
		}
		prefetchNext()
		advance(unroll)
		DECQ(m)
		JNZ(LabelRef(name + "_loop4"))
		Comment("End of a chunk: add it to the totals.")
		fold()
		DECQ(n)
		JNZ(LabelRef(name + "_chunk"))

		Label(name + "_rest")
		ANDQ(Imm(screenChunk-1), d)
		JZ(LabelRef(name + "_store"))
		Label(name + "_loop1")
		step(0)
		advance(1)
		DECQ(d)
		JNZ(LabelRef(name + "_loop1"))
		Comment("The last, short chunk.")
		fold()

		Label(name + "_store")
		fl2 := Load(Param("flags"), GP64())
		ANDQ(Imm(2), fl2)
		JNZ(LabelRef(name + "_out"))
		VZEROUPPER()
		RET()
		Label(name + "_out")
		if fastStore(is, pr) {
			fullTileStore(name, is, pr, mr, nv, nr, acc, tot)
			Label(name + "_spill")
		}
		frame = Mem{Base: tt}
	}
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	nq := Load(Param("nq"), GP64())
	ng := Load(Param("ng"), GP64())
	src := GP64()
	LEAQ(frame, src) // the spilled tile (the totals for the blocked kernel)
	x := pr.tmp()
	CMPQ(ng, Imm(uint64(mr)))
	JNE(LabelRef(name + "_partial"))

	Comment("A full tile: every row of every query.")
	Label(name + "_full")
	for r := 0; r < mr; r++ {
		pr.mov(Mem{Base: src, Disp: r * nv * vb}, x)
		pr.mov(x, Mem{Base: c, Disp: r * es})
	}
	ADDQ(Imm(uint64(es)), src)
	ADDQ(ldc, c)
	DECQ(nq)
	JNZ(LabelRef(name + "_full"))
	VZEROUPPER()
	RET()

	Comment("A short group of gallery rows: the first ng rows of every query.")
	Label(name + "_partial")
	for r := 0; r < mr; r++ {
		if r > 0 {
			CMPQ(ng, Imm(uint64(r)))
			JLE(LabelRef(name + "_next"))
		}
		pr.mov(Mem{Base: src, Disp: r * nv * vb}, x)
		pr.mov(x, Mem{Base: c, Disp: r * es})
	}
	Label(name + "_next")
	ADDQ(Imm(uint64(es)), src)
	ADDQ(ldc, c)
	DECQ(nq)
	JNZ(LabelRef(name + "_partial"))
	VZEROUPPER()
	RET()
}

// unrollSteps is the number of k steps per iteration of the main loop.
const unrollSteps = 4

// imm is an immediate that ADDQ and CMPQ accept whatever its size.
func imm(x int) Constant {
	if x < 128 {
		return Imm(uint64(x))
	}
	return U32(x)
}

// scanKernels writes the AVX-512 row scans behind kernel.MaxFinite32 and
// kernel.Scan32 (rank's screened decisions and counting epilogue). Both
// take whole vectors of 16 float32 values; the Go wrappers handle the tail.
func scanKernels() {
	TEXT("maxFinite32AVX512", NOSPLIT, "func(x *float32, n int, out *float32)")
	Pragma("noescape")
	Doc("maxFinite32AVX512 writes, for n ≥ 1 vectors of 16 values at x, the lane maxima to out[0:16]",
		"and the OR of the bits of x − x (zero exactly when every value is finite) to out[16:32].")
	{
		x := Load(Param("x"), GP64())
		n := Load(Param("n"), GP64())
		out := Load(Param("out"), GP64())
		mx, bad, t := Z0, Z1, Z2
		VMOVUPS(Mem{Base: x}, mx)
		VSUBPS(mx, mx, bad)
		ADDQ(Imm(64), x)
		DECQ(n)
		JZ(LabelRef("maxFinite32AVX512_done"))
		Label("maxFinite32AVX512_loop")
		VMOVUPS(Mem{Base: x}, t)
		VMAXPS(t, mx, mx)
		VSUBPS(t, t, t)
		VPORD(t, bad, bad)
		ADDQ(Imm(64), x)
		DECQ(n)
		JNZ(LabelRef("maxFinite32AVX512_loop"))
		Label("maxFinite32AVX512_done")
		VMOVUPS(mx, Mem{Base: out})
		VMOVUPS(bad, Mem{Base: out, Disp: 64})
		VZEROUPPER()
		RET()
	}

	TEXT("convertNorm64AVX512", NOSPLIT, "func(x *float64, n int, y *float32, out *float64)")
	Pragma("noescape")
	Doc("convertNorm64AVX512 rounds n ≥ 1 groups of 16 float64 values at x to float32 at y, writes the",
		"two 8-lane FMA chains of x² (values 16m…16m+7 and 16m+8…16m+15) to out[0:16], and the OR of the",
		"bits of y − y (zero exactly when every rounding is finite) to out[16:32] as float32 values.")
	{
		x := Load(Param("x"), GP64())
		n := Load(Param("n"), GP64())
		y := Load(Param("y"), GP64())
		out := Load(Param("out"), GP64())
		a0, a1, bad, v0, v1, f0, f1, t0, t1 := Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8
		VPXORQ(a0, a0, a0)
		VPXORQ(a1, a1, a1)
		VPXORQ(bad, bad, bad)
		Label("convertNorm64AVX512_loop")
		VMOVUPD(Mem{Base: x}, v0)
		VMOVUPD(Mem{Base: x, Disp: 64}, v1)
		VCVTPD2PS(v0, f0.AsY())
		VCVTPD2PS(v1, f1.AsY())
		VMOVUPS(f0.AsY(), Mem{Base: y})
		VMOVUPS(f1.AsY(), Mem{Base: y, Disp: 32})
		VFMADD231PD(v0, v0, a0)
		VFMADD231PD(v1, v1, a1)
		VSUBPS(f0, f0, t0) // the upper lanes are zero
		VSUBPS(f1, f1, t1)
		VPORD(t0, bad, bad)
		VPORD(t1, bad, bad)
		ADDQ(Imm(128), x)
		ADDQ(Imm(64), y)
		DECQ(n)
		JNZ(LabelRef("convertNorm64AVX512_loop"))
		VMOVUPD(a0, Mem{Base: out})
		VMOVUPD(a1, Mem{Base: out, Disp: 64})
		VMOVUPS(bad, Mem{Base: out, Disp: 128})
		VZEROUPPER()
		RET()
	}

	TEXT("scan32AVX512", NOSPLIT, "func(x *float32, n int, cut *float32, lanes *int32, idx *int32, cnt *int32) int")
	Pragma("noescape")
	Doc("scan32AVX512 scans n ≥ 1 vectors of 16 values at x with cut = {above, lo, hi, high}: it adds,",
		"per lane, the number of values greater than above to cnt[0:16], and writes the offsets of the",
		"values in [lo, hi] or at least high, in order, to idx, returning how many it wrote.",
		"lanes holds 0…15.")
	{
		x := Load(Param("x"), GP64())
		n := Load(Param("n"), GP64())
		cut := Load(Param("cut"), GP64())
		lanes := Load(Param("lanes"), GP64())
		idx := Load(Param("idx"), GP64())
		cnt := Load(Param("cnt"), GP64())
		start := GP64()
		MOVQ(idx, start)
		zAbove, zLo, zIdx, zStep, zOne, zCnt, v, zHi, zHigh := Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8
		VBROADCASTSS(Mem{Base: cut}, zAbove)
		VBROADCASTSS(Mem{Base: cut, Disp: 4}, zLo)
		VBROADCASTSS(Mem{Base: cut, Disp: 8}, zHi)
		VBROADCASTSS(Mem{Base: cut, Disp: 12}, zHigh)
		VMOVDQU32(Mem{Base: lanes}, zIdx)
		VMOVDQU32(Mem{Base: cnt}, zCnt)
		t := GP32()
		MOVL(U32(16), t)
		VPBROADCASTD(t, zStep)
		MOVL(U32(1), t)
		VPBROADCASTD(t, zOne)
		Label("scan32AVX512_loop")
		VMOVUPS(Mem{Base: x}, v)
		VCMPPS(Imm(0x1e), zAbove, v, K1) // v > above (ordered, quiet)
		VPADDD(zOne, zCnt, K1, zCnt)
		VCMPPS(Imm(0x1d), zLo, v, K2)     // v >= lo
		VCMPPS(Imm(0x12), zHi, v, K2, K2) // and v <= hi
		VCMPPS(Imm(0x1d), zHigh, v, K3)   // v >= high
		KORW(K3, K2, K2)
		KORTESTW(K2, K2)
		JZ(LabelRef("scan32AVX512_next"))
		VPCOMPRESSD(zIdx, K2, Mem{Base: idx})
		KMOVW(K2, t)
		POPCNTL(t, t)
		LEAQ(Mem{Base: idx, Index: t.As64(), Scale: 4}, idx)
		Label("scan32AVX512_next")
		VPADDD(zStep, zIdx, zIdx)
		ADDQ(Imm(64), x)
		DECQ(n)
		JNZ(LabelRef("scan32AVX512_loop"))
		VMOVDQU32(zCnt, Mem{Base: cnt})
		SUBQ(start, idx)
		SHRQ(Imm(2), idx)
		Store(idx, ReturnIndex(0))
		VZEROUPPER()
		RET()
	}
}

// scanKernelsAVX2 writes the AVX2 forms of the row scans, with the
// contracts of the AVX-512 ones (16 float32 or float64 values per step, the
// same output layout), so that the Go wrappers are shared: each 16-lane
// vector is two ymm halves, lanes 0–7 and 8–15. AVX2 has no compress
// store, so scan32AVX2 writes a step's hits from the bits of VMOVMSKPS,
// lowest first. None of them needs more than AVX2 (no BMI, no POPCNT).
func scanKernelsAVX2() {
	TEXT("maxFinite32AVX2", NOSPLIT, "func(x *float32, n int, out *float32)")
	Pragma("noescape")
	Doc("maxFinite32AVX2 is maxFinite32AVX512 with AVX2: lane l < 8 of out is the maximum of the values",
		"16m+l, lane 8+l that of 16m+8+l.")
	{
		x := Load(Param("x"), GP64())
		n := Load(Param("n"), GP64())
		out := Load(Param("out"), GP64())
		m0, m1, b0, b1, t0, t1 := Y0, Y1, Y2, Y3, Y4, Y5
		VMOVUPS(Mem{Base: x}, m0)
		VMOVUPS(Mem{Base: x, Disp: 32}, m1)
		VSUBPS(m0, m0, b0)
		VSUBPS(m1, m1, b1)
		ADDQ(Imm(64), x)
		DECQ(n)
		JZ(LabelRef("maxFinite32AVX2_done"))
		Label("maxFinite32AVX2_loop")
		VMOVUPS(Mem{Base: x}, t0)
		VMOVUPS(Mem{Base: x, Disp: 32}, t1)
		VMAXPS(t0, m0, m0)
		VMAXPS(t1, m1, m1)
		VSUBPS(t0, t0, t0)
		VSUBPS(t1, t1, t1)
		VORPS(t0, b0, b0)
		VORPS(t1, b1, b1)
		ADDQ(Imm(64), x)
		DECQ(n)
		JNZ(LabelRef("maxFinite32AVX2_loop"))
		Label("maxFinite32AVX2_done")
		VMOVUPS(m0, Mem{Base: out})
		VMOVUPS(m1, Mem{Base: out, Disp: 32})
		VMOVUPS(b0, Mem{Base: out, Disp: 64})
		VMOVUPS(b1, Mem{Base: out, Disp: 96})
		VZEROUPPER()
		RET()
	}

	TEXT("convertNorm64AVX2", NOSPLIT, "func(x *float64, n int, y *float32, out *float64)")
	Pragma("noescape")
	Doc("convertNorm64AVX2 is convertNorm64AVX512 with AVX2: out[0:16] are four 4-lane FMA chains of",
		"x² (values 16m+4c…16m+4c+3 in chain c), so lane l of out still sums the values 16m+l.")
	{
		x := Load(Param("x"), GP64())
		n := Load(Param("n"), GP64())
		y := Load(Param("y"), GP64())
		out := Load(Param("out"), GP64())
		acc := []VecPhysical{Y0, Y1, Y2, Y3}
		v := []VecPhysical{Y4, Y5, Y6, Y7}
		f := []VecPhysical{X8, X9, X10, X11}
		bad, t := X12, X13
		for _, a := range acc {
			VXORPD(a, a, a)
		}
		VXORPS(bad, bad, bad)
		Label("convertNorm64AVX2_loop")
		for c := range 4 {
			VMOVUPD(Mem{Base: x, Disp: 32 * c}, v[c])
			VCVTPD2PSY(v[c], f[c])
			VMOVUPS(f[c], Mem{Base: y, Disp: 16 * c})
			VFMADD231PD(v[c], v[c], acc[c])
			VSUBPS(f[c], f[c], t)
			VORPS(t, bad, bad)
		}
		ADDQ(Imm(128), x)
		ADDQ(Imm(64), y)
		DECQ(n)
		JNZ(LabelRef("convertNorm64AVX2_loop"))
		for c := range 4 {
			VMOVUPD(acc[c], Mem{Base: out, Disp: 32 * c})
		}
		zero := Y14
		VXORPS(zero, zero, zero)
		VMOVUPS(zero, Mem{Base: out, Disp: 128})
		VMOVUPS(zero, Mem{Base: out, Disp: 160})
		VMOVUPS(bad, Mem{Base: out, Disp: 128})
		VZEROUPPER()
		RET()
	}

	TEXT("scan32AVX2", NOSPLIT, "func(x *float32, n int, cut *float32, lanes *int32, idx *int32, cnt *int32) int")
	Pragma("noescape")
	Doc("scan32AVX2 is scan32AVX512 with AVX2 (lanes is not read): cnt lane l < 8 counts the values",
		"16m+l, lane 8+l those of 16m+8+l.")
	{
		x := Load(Param("x"), GP64())
		n := Load(Param("n"), GP64())
		cut := Load(Param("cut"), GP64())
		idx := Load(Param("idx"), GP64())
		cnt := Load(Param("cnt"), GP64())
		start, off := GP64(), GP64()
		MOVQ(idx, start)
		XORQ(off, off)
		yAbove, yLo, yHi, yHigh, c0, c1, v, m, h := Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8
		VBROADCASTSS(Mem{Base: cut}, yAbove)
		VBROADCASTSS(Mem{Base: cut, Disp: 4}, yLo)
		VBROADCASTSS(Mem{Base: cut, Disp: 8}, yHi)
		VBROADCASTSS(Mem{Base: cut, Disp: 12}, yHigh)
		VMOVDQU(Mem{Base: cnt}, c0)
		VMOVDQU(Mem{Base: cnt, Disp: 32}, c1)
		bits, hi, b, w := GP64(), GP64(), GP64(), GP64()
		Label("scan32AVX2_loop")
		for half, c := range []VecPhysical{c0, c1} {
			VMOVUPS(Mem{Base: x, Disp: 32 * half}, v)
			VCMPPS(Imm(0x1e), yAbove, v, m) // v > above (ordered, quiet): all ones, −1 as an integer
			VPSUBD(m, c, c)
			VCMPPS(Imm(0x1d), yLo, v, m) // v >= lo
			VCMPPS(Imm(0x12), yHi, v, h) // v <= hi
			VANDPS(h, m, m)
			VCMPPS(Imm(0x1d), yHigh, v, h) // v >= high
			VORPS(h, m, m)
			if half == 0 {
				VMOVMSKPS(m, bits.As32())
			} else {
				VMOVMSKPS(m, hi.As32())
				SHLQ(Imm(8), hi)
				ORQ(hi, bits)
			}
		}
		TESTQ(bits, bits)
		JZ(LabelRef("scan32AVX2_next"))
		Label("scan32AVX2_hit")
		BSFQ(bits, b)
		LEAQ(Mem{Base: off, Index: b, Scale: 1}, w)
		MOVL(w.As32(), Mem{Base: idx})
		ADDQ(Imm(4), idx)
		LEAQ(Mem{Base: bits, Disp: -1}, w)
		ANDQ(w, bits)
		JNZ(LabelRef("scan32AVX2_hit"))
		Label("scan32AVX2_next")
		ADDQ(Imm(16), off)
		ADDQ(Imm(64), x)
		DECQ(n)
		JNZ(LabelRef("scan32AVX2_loop"))
		VMOVDQU(c0, Mem{Base: cnt})
		VMOVDQU(c1, Mem{Base: cnt, Disp: 32})
		SUBQ(start, idx)
		SHRQ(Imm(2), idx)
		Store(idx, ReturnIndex(0))
		VZEROUPPER()
		RET()
	}
}

// fastStore reports whether the tile kernels of an instruction set and
// precision write a full tile through fullTileStore (all of them do).
func fastStore(is isa, pr prec) bool { return true }

// fullTileStore writes a full tile (nq == NR and ng == MR; otherwise it
// jumps to name_spill) straight from the accumulators, instead of one
// scalar load and store per score from a spilled copy. AVX-512 float32:
// each block of 8 rows × 16 queries is transposed in registers (two rounds
// of unpacks, one of 128-bit shuffles) into vectors holding 8 rows of 2
// queries, and each query's scores are written with one masked store;
// missing rows of a last, short block (MR mod 8) are masked off. AVX-512
// float64 and AVX2: see transposeStore64 and transposeStoreAVX2. With tot
// (the blocked kernels), the accumulators are first loaded from the
// totals. The values are only moved, so no bit changes.
func fullTileStore(name string, is isa, pr prec, mr, nv, nr int, acc func(r, v int) VecPhysical, tot func(r, v int) Mem) {
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	nq := Load(Param("nq"), GP64())
	ng := Load(Param("ng"), GP64())
	CMPQ(ng, Imm(uint64(mr)))
	JNE(LabelRef(name + "_spill"))
	CMPQ(nq, Imm(uint64(nr)))
	JNE(LabelRef(name + "_spill"))
	Comment("A full tile: transpose blocks of 8 rows in registers.")
	if tot != nil {
		for r := 0; r < mr; r++ {
			for v := 0; v < nv; v++ {
				VMOVUPS(tot(r, v), acc(r, v))
			}
		}
	}
	nregs, need := 32, 8
	if is.vbytes == 32 {
		nregs, need = 16, 4
	}
	free := make([]VecPhysical, 0, 8)
	for i := mr * nv; i < nregs && len(free) < 8; i++ {
		free = append(free, is.vec(i))
	}
	if len(free) < need {
		log.Fatalf("%s: %d free registers for the transposing store", name, len(free))
	}
	if is.vbytes == 32 {
		transposeStoreAVX2(pr, mr, nv, acc, free, c, ldc)
		return
	}
	if pr.bits == 64 {
		transposeStore64(mr, nv, acc, free, c, ldc)
		return
	}
	ldc4, l12 := GP64(), GP64()
	MOVQ(ldc, ldc4)
	SHLQ(Imm(2), ldc4)
	LEAQ(Mem{Base: ldc4, Index: ldc4, Scale: 2}, l12)
	// masks[n] = {low, high}: rows 0…n−1 of the query in lanes 0–7 or 8–15.
	masks := map[int][2]OpmaskPhysical{}
	kregs := []OpmaskPhysical{K1, K2, K3, K4, K5, K6}
	mk := GP32()
	for g0 := 0; g0 < mr; g0 += 8 {
		n := min(8, mr-g0)
		if _, ok := masks[n]; ok {
			continue
		}
		lo, hi := kregs[0], kregs[1]
		kregs = kregs[2:]
		MOVL(U32(1<<n-1), mk)
		KMOVW(mk, lo)
		MOVL(U32((1<<n-1)<<8), mk)
		KMOVW(mk, hi)
		masks[n] = [2]OpmaskPhysical{lo, hi}
	}
	pj := GP64()
	for v := 0; v < nv; v++ {
		for g0 := 0; g0 < mr; g0 += 8 {
			n := min(8, mr-g0)
			a := func(i int) VecPhysical {
				if i < n {
					return acc(g0+i, v)
				}
				return acc(g0, v) // a missing row: its lanes are masked off
			}
			f := free
			for m := 0; 2*m < n; m++ {
				VUNPCKLPS(a(2*m+1), a(2*m), f[2*m])
				VUNPCKHPS(a(2*m+1), a(2*m), f[2*m+1])
			}
			// u[j] holds rows 0–3 (u[4+j] rows 4–7) of query 4c+j in its
			// 128-bit chunk c.
			s := acc(g0, v) // dead after the unpacks
			VUNPCKLPD(f[2], f[0], s)
			VUNPCKHPD(f[2], f[0], f[0])
			VUNPCKLPD(f[3], f[1], f[2])
			VUNPCKHPD(f[3], f[1], f[1])
			if n > 4 {
				VUNPCKLPD(f[6], f[4], f[3])
				VUNPCKHPD(f[6], f[4], f[4])
				VUNPCKLPD(f[7], f[5], f[6])
				VUNPCKHPD(f[7], f[5], f[5])
			}
			u := []VecPhysical{s, f[0], f[2], f[1], f[3], f[4], f[6], f[5]}
			x := f[7]
			k := masks[n]
			MOVQ(c, pj)
			for j := 0; j < 4; j++ {
				// Queries j and 4+j, then 8+j and 12+j.
				VSHUFF32X4(Imm(0x44), u[4+j], u[j], x)
				VSHUFF32X4(Imm(0xd8), x, x, x)
				VMOVUPS(x, k[0], Mem{Base: pj, Disp: g0 * 4})
				VMOVUPS(x, k[1], Mem{Base: pj, Index: ldc4, Scale: 1, Disp: g0*4 - 32})
				VSHUFF32X4(Imm(0xee), u[4+j], u[j], u[j])
				VSHUFF32X4(Imm(0xd8), u[j], u[j], u[j])
				VMOVUPS(u[j], k[0], Mem{Base: pj, Index: ldc4, Scale: 2, Disp: g0 * 4})
				VMOVUPS(u[j], k[1], Mem{Base: pj, Index: l12, Scale: 1, Disp: g0*4 - 32})
				if j < 3 {
					ADDQ(ldc, pj)
				}
			}
		}
		if v < nv-1 {
			ADDQ(l12, c)
			ADDQ(ldc4, c)
		}
	}
	VZEROUPPER()
	RET()
}

// transposeStore64 is fullTileStore for float64 (8 lanes): each block of 8
// rows × 8 queries is transposed with one round of unpacks and two of
// 128-bit shuffles into one vector per query, written with one masked store.
func transposeStore64(mr, nv int, acc func(r, v int) VecPhysical, free []VecPhysical, c, ldc Register) {
	ldc2, l6 := GP64(), GP64()
	LEAQ(Mem{Base: ldc, Index: ldc, Scale: 1}, ldc2)
	LEAQ(Mem{Base: ldc2, Index: ldc2, Scale: 2}, l6)
	masks := map[int]OpmaskPhysical{}
	kregs := []OpmaskPhysical{K1, K2, K3}
	mk := GP32()
	for g0 := 0; g0 < mr; g0 += 8 {
		n := min(8, mr-g0)
		if _, ok := masks[n]; ok {
			continue
		}
		MOVL(U32(1<<n-1), mk)
		KMOVW(mk, kregs[0])
		masks[n] = kregs[0]
		kregs = kregs[1:]
	}
	pj := GP64()
	for v := 0; v < nv; v++ {
		for g0 := 0; g0 < mr; g0 += 8 {
			n := min(8, mr-g0)
			a := func(i int) VecPhysical {
				if i < n {
					return acc(g0+i, v)
				}
				return acc(g0, v) // a missing row: its lanes are masked off
			}
			f := free
			// t[2m+h] holds rows 2m, 2m+1 of query 2c+h in its chunk c.
			for m := 0; 2*m < n; m++ {
				VUNPCKLPD(a(2*m+1), a(2*m), f[2*m])
				VUNPCKHPD(a(2*m+1), a(2*m), f[2*m+1])
			}
			// Three spares: rows of the block, dead after the unpacks
			// (a block has at least 4 rows: MR is 6, 8, 12 or 24).
			s1, s2, s3 := acc(g0, v), acc(g0+1, v), acc(g0+2, v)
			k := masks[n]
			for h := 0; h < 2; h++ {
				MOVQ(c, pj)
				if h == 1 {
					ADDQ(ldc, pj)
				}
				// Queries h, 2+h (chunks 0, 1), then 4+h, 6+h (chunks 2, 3).
				VSHUFF64X2(Imm(0x44), f[2+h], f[h], s1)
				VSHUFF64X2(Imm(0x44), f[6+h], f[4+h], s2)
				VSHUFF64X2(Imm(0x88), s2, s1, s3)
				VMOVUPD(s3, k, Mem{Base: pj, Disp: g0 * 8})
				VSHUFF64X2(Imm(0xdd), s2, s1, s3)
				VMOVUPD(s3, k, Mem{Base: pj, Index: ldc, Scale: 2, Disp: g0 * 8})
				VSHUFF64X2(Imm(0xee), f[2+h], f[h], s1)
				VSHUFF64X2(Imm(0xee), f[6+h], f[4+h], s2)
				VSHUFF64X2(Imm(0x88), s2, s1, s3)
				VMOVUPD(s3, k, Mem{Base: pj, Index: ldc, Scale: 4, Disp: g0 * 8})
				VSHUFF64X2(Imm(0xdd), s2, s1, s3)
				VMOVUPD(s3, k, Mem{Base: pj, Index: l6, Scale: 1, Disp: g0 * 8})
			}
		}
		if v < nv-1 {
			ADDQ(l6, c)
			ADDQ(ldc2, c)
		}
	}
	VZEROUPPER()
	RET()
}

// transposeStoreAVX2 is fullTileStore for AVX2 (4 free registers): float32
// rows in blocks of 4 are transposed with two rounds of unpacks into one
// 128-bit half per query (rows 4m…4m+3), a last pair of rows with one
// round into 64-bit quarters; float64 rows in pairs with one round of
// unpacks into 128-bit halves. Each half is stored directly (VEXTRACTF128
// for the upper one), so there is no cross-lane shuffle.
func transposeStoreAVX2(pr prec, mr, nv int, acc func(r, v int) VecPhysical, free []VecPhysical, c, ldc Register) {
	ldc3, pj4 := GP64(), GP64()
	LEAQ(Mem{Base: ldc, Index: ldc, Scale: 2}, ldc3)
	x := func(v VecPhysical) Op { return v.AsX() }
	lanes := 32 / pr.es
	// at returns the address of row r of query q (0 ≤ q < lanes) of the
	// current vector: c + q*ldc + r*es, through c and pj4 = c + 4*ldc.
	at := func(q, r int) Mem {
		base := c
		if q >= 4 {
			base, q = pj4, q-4
		}
		m := Mem{Base: base, Disp: r * pr.es}
		switch q {
		case 1:
			m.Index, m.Scale = ldc, 1
		case 2:
			m.Index, m.Scale = ldc, 2
		case 3:
			m.Index, m.Scale = ldc3, 1
		}
		return m
	}
	f := free
	for v := 0; v < nv; v++ {
		if lanes == 8 {
			LEAQ(Mem{Base: c, Index: ldc, Scale: 4}, pj4)
		}
		a := func(r int) VecPhysical { return acc(r, v) }
		r := 0
		if pr.bits == 32 {
			for ; r+4 <= mr; r += 4 {
				VUNPCKLPS(a(r+1), a(r), f[0])
				VUNPCKHPS(a(r+1), a(r), f[1])
				VUNPCKLPS(a(r+3), a(r+2), f[2])
				VUNPCKHPS(a(r+3), a(r+2), f[3])
				// u[j] holds rows r…r+3 of query 4c+j in its half c.
				u := []VecPhysical{a(r), a(r + 1), a(r + 2), a(r + 3)}
				VUNPCKLPD(f[2], f[0], u[0])
				VUNPCKHPD(f[2], f[0], u[1])
				VUNPCKLPD(f[3], f[1], u[2])
				VUNPCKHPD(f[3], f[1], u[3])
				for j := 0; j < 4; j++ {
					VMOVUPS(x(u[j]), at(j, r))
					VEXTRACTF128(Imm(1), u[j], at(4+j, r))
				}
			}
			if r < mr { // a last pair of rows
				VUNPCKLPS(a(r+1), a(r), f[0]) // queries 4c, 4c+1
				VUNPCKHPS(a(r+1), a(r), f[1]) // queries 4c+2, 4c+3
				VEXTRACTF128(Imm(1), f[0], x(f[2]))
				VEXTRACTF128(Imm(1), f[1], x(f[3]))
				for h, t := range []VecPhysical{f[0], f[1], f[2], f[3]} {
					q := 2 * h // t holds queries 2h, 2h+1
					VMOVSD(x(t), at(q, r))
					VMOVHPS(x(t), at(q+1, r))
				}
				r += 2
			}
		} else {
			for ; r < mr; r += 2 {
				VUNPCKLPD(a(r+1), a(r), f[0]) // queries 0 (half 0), 2 (half 1)
				VUNPCKHPD(a(r+1), a(r), f[1]) // queries 1, 3
				VMOVUPS(x(f[0]), at(0, r))
				VEXTRACTF128(Imm(1), f[0], at(2, r))
				VMOVUPS(x(f[1]), at(1, r))
				VEXTRACTF128(Imm(1), f[1], at(3, r))
			}
		}
		if r != mr {
			log.Fatalf("transposeStoreAVX2: %d rows", mr)
		}
		if v < nv-1 {
			if lanes == 8 {
				LEAQ(Mem{Base: pj4, Index: ldc, Scale: 4}, c)
			} else {
				LEAQ(Mem{Base: c, Index: ldc, Scale: 4}, c)
			}
		}
	}
	VZEROUPPER()
	RET()
}

// placeKernel writes the AVX-512 form of kernel.PlaceBuckets32 (rank's
// counting of negatives against many positives): per lane, the bucket of a
// score, the slot range of that bucket from the uint16 table (one 32-bit
// gather at byte offset 2k reads entries k and k+1), and, when the bucket
// holds at most one threshold, the slot from one comparison with it (two
// more gathers: its score and its gallery index). Lanes whose bucket holds
// several thresholds get −1; the Go wrapper places them. Only AVX512F
// instructions (gathers, compares into masks, 16-bit mask logic).
// placeWidth is the most thresholds a bucket may hold for placeBuckets32 to
// place a score in it (kernel.PlaceWidth).
const placeWidth = 3

func placeKernel() {
	TEXT("placeBuckets32AVX512", NOSPLIT, "func(v *float32, idx *int32, n int, par *float32, tab *uint16, sc *float32, ix *int32, slot *int32)")
	Pragma("noescape")
	Doc("placeBuckets32AVX512 places n ≥ 1 vectors of 16 scores v (gallery indices g) with par = {lo, scale,",
		"top}: k = trunc(min(max((v − lo)·scale, 0), top)) (a NaN coordinate is 0), r = tab[k+1],",
		"h = tab[k]; slot = −1 when h − r > 3, else r plus the number of thresholds r ≤ t < h the value",
		"does not precede (it precedes t when v > sc[t], or v = sc[t] and g < ix[t]).")
	{
		v := Load(Param("v"), GP64())
		g := Load(Param("idx"), GP64())
		n := Load(Param("n"), GP64())
		par := Load(Param("par"), GP64())
		tab := Load(Param("tab"), GP64())
		sc := Load(Param("sc"), GP64())
		ix := Load(Param("ix"), GP64())
		slot := Load(Param("slot"), GP64())
		zLo, zScale, zTop, zZero, zMask, zOne, zMinus1, zWidth := Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z17
		zv, zx, zk, zp, zr, zh, zs, zi, zg, zd, zt, zacc := Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z18, Z19
		VBROADCASTSS(Mem{Base: par}, zLo)
		VBROADCASTSS(Mem{Base: par, Disp: 4}, zScale)
		VBROADCASTSS(Mem{Base: par, Disp: 8}, zTop)
		VPXORQ(zZero, zZero, zZero)
		t := GP32()
		MOVL(U32(0xffff), t)
		VPBROADCASTD(t, zMask)
		MOVL(U32(1), t)
		VPBROADCASTD(t, zOne)
		MOVL(U32(0xffffffff), t)
		VPBROADCASTD(t, zMinus1)
		MOVL(U32(placeWidth), t)
		VPBROADCASTD(t, zWidth)
		Label("placeBuckets32AVX512_loop")
		VMOVUPS(Mem{Base: v}, zv)
		VMOVDQU32(Mem{Base: g}, zg)
		VSUBPS(zLo, zv, zx)
		VMULPS(zScale, zx, zx)
		VMAXPS(zZero, zx, zx) // a NaN coordinate: the second source, 0
		VMINPS(zTop, zx, zx)
		VCVTTPS2DQ(zx, zk)
		KXNORW(K1, K1, K1)
		VPGATHERDD(Mem{Base: tab, Index: zk, Scale: 2}, K1, zp) // tab[k] | tab[k+1]<<16
		VPSRLD(Imm(16), zp, zr)
		VPANDD(zMask, zp, zh)
		VMOVDQA32(zr, zacc)
		VMOVDQA32(zr, zt)
		// Threshold t = r + i for i < placeWidth, in lanes where t < h: one
		// more slot when the value does not precede it. Rank order makes
		// those thresholds a prefix, so the sum is the slot.
		for i := 0; i < placeWidth; i++ {
			VPCMPGTD(zt, zh, K1) // t < h
			if i > 0 {
				KORTESTW(K1, K1) // no lane has a threshold t
				JZ(LabelRef("placeBuckets32AVX512_done"))
			}
			KMOVW(K1, K2)
			VGATHERDPS(Mem{Base: sc, Index: zt, Scale: 4}, K2, zs)
			VCMPPS(Imm(0x1e), zs, zv, K4) // v > s (ordered, quiet)
			// Where v = s the indices decide; ties are rare, so the
			// indices are read only for them.
			VCMPPS(Imm(0x00), zs, zv, K1, K5) // v = s and t < h
			noTies := fmt.Sprintf("placeBuckets32AVX512_noties%d", i)
			KORTESTW(K5, K5)
			JZ(LabelRef(noTies))
			KMOVW(K5, K3)
			VPGATHERDD(Mem{Base: ix, Index: zt, Scale: 4}, K3, zi)
			VPCMPGTD(zg, zi, K5, K6) // ix > g, where v = s
			KORW(K6, K4, K4)
			Label(noTies)
			// K4: the value precedes threshold t.
			KANDNW(K1, K4, K4)           // t < h and it does not
			VPADDD(zOne, zacc, K4, zacc) // one more slot
			if i+1 < placeWidth {
				VPADDD(zOne, zt, zt)
			}
		}
		Label("placeBuckets32AVX512_done")
		VPSUBD(zr, zh, zd)
		VPCMPGTD(zWidth, zd, K1) // h − r > placeWidth: too many thresholds
		VMOVDQA32(zMinus1, K1, zacc)
		VMOVDQU32(zacc, Mem{Base: slot})
		ADDQ(Imm(64), v)
		ADDQ(Imm(64), g)
		ADDQ(Imm(64), slot)
		DECQ(n)
		JNZ(LabelRef("placeBuckets32AVX512_loop"))
		VZEROUPPER()
		RET()
	}
}
