package rank

import (
	"context"
	"math"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
	"github.com/vertebrae-eval/vertebrae/memory"
)

// The integer screens (screen.md §7 for the float32 protocol, §8 for the
// float64 protocol, §9 for int8). Every float32 row x (the working row
// under float32, fl32 of the float64 working row y under float64) is
// quantised to integers Q, |Q_i| ≤ 32767 (int16) or 127 (int8), with a
// float32 step σ; the integer dot product I = Σ Q^q_i Q^g_i is exact
// (kernel.DotInt16: the VNNI or AVX2 tile; kernel.DotInt8: the VNNI
// tile), and c = fl32(fl32(fl32(I)·σ_g)·σ_q) is the cheap score. Under
// float64 the bound adds ‖y − x‖ to the quantisation residual and takes
// the float64 chain's own error. Both widths share the quantisation rule,
// the bound and this code; only the kernels and the largest |Q_i| differ.
//
// A screen is used only where it pays: the CPU runs its integer tile
// (kernel.Int8Fast, kernel.Int16Fast), the run has at least
// screenIntMinPairs pairs, and a measured sample leaves few pairs
// undecided. The int8 screen is tried first: its tile does twice the
// multiply-adds per instruction, but its bound is about 50 times wider,
// so it pays only where the positives stand apart from the bulk of the
// scores (as real relevance does); elsewhere the int16 screen runs.

// screen16MaxUndecided is the largest undecided share of the sampled pairs
// for which a float32-protocol run is screened (screen.md §7.5): the
// integer kernel and quantisation cost about 0.45 of the exhaustive float32
// pass and each undecided pair about 20 exhaustive pairs, so the screen
// breaks even near 2.7 % and this cut expects at most 0.61 of the
// exhaustive cost.
const screen16MaxUndecided = 0.008

// screen16x64MaxUndecided is the same cut for the float64 protocol, where
// the int16 screen replaces the float32 one (screen.md §8.4: break-even near
// 1.5 %).
const screen16x64MaxUndecided = 0.01

// screen8MaxUndecided is the cut of the int8 screen, both protocols
// (screen.md §9.3): its tile and quantisation cost about 0.2 of the
// exhaustive float32 pass against the int16 screen's 0.4, and each
// undecided pair the same 20 exhaustive pairs, so at 0.4 % it costs at
// most what the int16 screen costs with nothing undecided.
const screen8MaxUndecided = 0.004

// screenIntMinPairs is the smallest run screened: below it the run takes
// milliseconds, and quantising the queries and the sample would be most of
// what the screen saves.
const screenIntMinPairs = 1 << 22

// intNormCap bounds ‖Q‖² of every row: then every partial sum of
// Q^q_i·Q^g_i is at most ‖Q^q‖‖Q^g‖ ≤ 46340² < 2³¹ (Cauchy–Schwarz), so
// the int32 accumulation is exact in any order. (An int8 row reaches it
// only beyond d = 133,000.)
const intNormCap = 46340 * 46340

// intFormat is the integer type of a screen: its name (ScreenStats.Kind,
// VERTEBRAE_SCREEN) and its largest |Q_i|.
type intFormat struct {
	name string
	qmax float64
}

var (
	int8Format  = intFormat{"int8", 127}
	int16Format = intFormat{"int16", 32767}
)

// Both widths' packed layouts tile 12 queries against 32 gallery rows in
// groups of 16, so the driver's tiles and packing groups serve both (a
// compile error here if a kernel changes its shape).
var (
	_ = [1]struct{}{}[kernel.Int8QueryTile-kernel.Int16QueryTile]
	_ = [1]struct{}{}[kernel.Int8GalleryTile-kernel.Int16GalleryTile]
	_ = [1]struct{}{}[kernel.Int8GalleryGroup-kernel.Int16GalleryGroup]
)

func (f intFormat) is8() bool { return f.qmax == int8Format.qmax }

// queryLen and galleryLen are the int32 lengths of the packed layouts.
func (f intFormat) queryLen(n, d int) int {
	if f.is8() {
		return kernel.Int8QueryLen(n, d)
	}
	return kernel.Int16QueryLen(n, d)
}

func (f intFormat) galleryLen(n, d int) int {
	if f.is8() {
		return kernel.Int8GalleryLen(n, d)
	}
	return kernel.Int16GalleryLen(n, d)
}

// rowWords is the int32 words of one packed query row (query tiles start
// at multiples of it).
func (f intFormat) rowWords(d int) int {
	if f.is8() {
		return kernel.Int8Quads(d)
	}
	return kernel.Int16Pairs(d)
}

// fast reports whether the CPU runs the format's SIMD tile (and, for the
// float64 protocol, re-scores undecided pairs in SIMD too).
func (f intFormat) fast(prec Precision) bool {
	if f.is8() {
		return kernel.Int8Fast() && (prec == Float32 || kernel.Dot64PairsQueryFast())
	}
	if prec == Float64 {
		return kernel.Int16FastFloat64()
	}
	return kernel.Int16Fast()
}

// screenIntFits bounds the products whose float32 chains are screened:
// with R_q·R_g ≤ 2¹²⁰ no exact chain or cheap score can overflow, so every
// exact score of a screened pair is finite (screen.md §7.3).
const screenIntFits = 0x1p120

type screenInt[T working] struct {
	screenCounters
	format      intFormat
	q16         []int16   // quantised queries from qlo (int8 values under int8)
	qs          []float32 // σ_q
	qn, qr, qR  []float64 // ≥ ‖σ_qQ^q‖, ≥ ‖q − σ_qQ^q‖, ≥ ‖q‖
	qp          []int32   // the packed queries of the current chunk, from qpLo
	qpLo        int
	qlo         int
	maxQR       float64 // the largest R_q
	gd, g3, tau float64 // γ_d of the exact rule, γ_3(v) and (d+2)·2⁻¹⁴⁹
	f64         bool    // the float64 protocol
	sdv         float64 // float64: √d·2⁻¹⁵⁰ of the residual bound
	scale       float64
	subN        int
	sim         Similarity
	d           int
}

// wsInt is one worker's integer screen buffers.
type wsInt struct {
	row16 []int16
	row8  []int8 // int8: a row group narrowed for packing
	gp    []int32
	gs    []float32
	r64   []float64 // float64 protocol: the block rows' norm bounds
	b     blockInt  // bound data of the prepared sub-block
}

// blockInt is what the bound needs of a quantised gallery sub-block.
type blockInt struct {
	n, r, R float64 // the largest row bounds: ≥ ‖σQ‖, ≥ ‖y − σQ‖, ≥ ‖y‖
	ok      bool    // every row quantised
}

// newScreenInt prepares the integer screen of format f for a run, or
// returns nil when it cannot run or (unless forced) the sample says it
// would not pay. f32 is the float32 screen of a float64-protocol run (its
// float32 roundings of the query rows and their norm bounds are reused);
// smp is the run's sample block, shared by the integer screens tried.
func newScreenInt[T working](ctx context.Context, s *scorer[T], c *chunk[T], f32 *screen32[T], f intFormat, smp *screenSample[T]) *screenInt[T] {
	d, n := s.d, s.qhi-s.qlo
	st := &screenInt[T]{format: f, q16: make([]int16, n*d), qs: make([]float32, n), qn: make([]float64, n), qr: make([]float64, n), qR: make([]float64, n),
		qlo: s.qlo, g3: gamma(3, u32), tau: float64(d+2) * 0x1p-149, scale: s.pl.scale, subN: s.pl.subRows, sim: s.pl.sim, d: d}
	st.kind = f.name
	st.f64 = s.pl.prec == Float64
	st.gd = gamma(d, u32)
	if st.f64 {
		st.gd, st.sdv = gamma(d, u64), math.Sqrt(float64(d))*0x1p-150*(1+0x1p-40)
	}
	// What the screen holds (SPEC §7.5): the quantised and packed queries
	// and their bounds, the sample, and per worker a packed sub-block, its
	// cheap scores, the pairs to verify and, for float64 rows not stored
	// as working values, the block's rows. Without the room the run is
	// scored without it, which needs none of it.
	sn := int64(min(s.pl.rows.len(), 4096))
	qb := int64(max(kernel.Int16QueryTile, min(s.pr.o.QueryBatch, n)))
	sub := int64(st.subN)
	var block int64
	if st.f64 && s.g.direct64 == nil {
		block = memory.Bytes(int64(s.pr.threads), int64(s.pl.gb), int64(d), 8)
	}
	need := memory.Sum(block,
		memory.Bytes(int64(n), int64(d), 2), memory.Bytes(int64(f.queryLen(c.q1-c.q0, d)), 4), memory.Bytes(int64(n), 4+3*8),
		memory.Bytes(sn, int64(d), 4+2), memory.Bytes(sn, 2*kernel.Int16QueryTile, 4),
		memory.Bytes(int64(s.pr.threads), memory.Sum(memory.Bytes(sub, int64(d)+1, 2+4), memory.Bytes(qb, sub, 4+16+8+8+4))))
	if memory.Check(ctx, f.what(), need) != nil {
		return nil
	}
	// Quantise the queries, the sample's first (a run the sample rejects
	// quantises no more).
	quantise := func(q0, q1 int) bool {
		tmp := make([]float32, d)
		for q := q0; q < q1; q++ {
			i := q - s.qlo
			var x []float32
			if st.f64 {
				x = f32.q32[i*d : (i+1)*d] // fl32 of the float64 working row; f32.rq[i] ≥ its norm
			} else {
				x = any(s.qrow(q)).([]float32)
			}
			copy(tmp, x)
			sg, qn, r, R, ok := quantiseInt(tmp, st.q16[i*d:(i+1)*d], f.qmax)
			if !ok {
				return false // a value beyond the screen's range
			}
			if st.f64 {
				R = f32.rq[i]
				r = st.rho(r, R)
			}
			st.qs[i], st.qn[i], st.qr[i], st.qR[i] = float32(sg), qn, r, R
			st.maxQR = max(st.maxQR, R)
		}
		return true
	}
	ns := min(c.q1, c.q0+2*kernel.Int16QueryTile)
	if !quantise(c.q0, ns) {
		return nil
	}
	if s.pl.screens.force != f.name {
		limit := screen16MaxUndecided
		switch {
		case f.is8():
			limit = screen8MaxUndecided
		case st.f64:
			limit = screen16x64MaxUndecided
		}
		st.pack(c.q0, ns)
		if !samplePays[T](s, st, c, limit, smp) {
			return nil
		}
	}
	if !quantise(s.qlo, c.q0) || !quantise(ns, s.qhi) {
		return nil
	}
	return st
}

// rho is the residual bound of a float64 working row y with float32
// rounding x (screen.md §8.1): ‖y − σQ‖ ≤ ‖x − σQ‖ + ‖y − x‖ ≤ r + v·R + √d·2⁻¹⁵⁰,
// with r ≥ ‖x − σQ‖ and R ≥ ‖y‖. Its two roundings are covered by the
// outward rounding of the bound.
func (st *screenInt[T]) rho(r, R float64) float64 { return r + u32*R + st.sdv }

// pack lays out queries [q0, q1) for the integer tile (groups of
// kernel.Int16QueryTile = kernel.Int8QueryTile from q0, so query tiles of
// a chunk start aligned).
func (st *screenInt[T]) pack(q0, q1 int) {
	d := st.d
	st.qp = growTo(st.qp, st.format.queryLen(q1-q0, d))
	clear(st.qp)
	st.qpLo = q0
	var row8 []int8
	if st.format.is8() {
		row8 = make([]int8, d)
	}
	for q := q0; q < q1; q++ {
		i := q - st.qlo
		row := st.q16[i*d : (i+1)*d]
		if row8 == nil {
			kernel.PackInt16Query(row, q-q0, st.qp)
			continue
		}
		narrow8(row, row8)
		kernel.PackInt8Query(row8, q-q0, st.qp)
	}
}

// narrow8 copies int16 values known to lie in [−127, 127] to int8.
func narrow8(src []int16, dst []int8) {
	dst = dst[:len(src)]
	for k, v := range src {
		dst[k] = int8(v)
	}
}

// what names the screen's memory in a budget error.
func (f intFormat) what() string {
	return "Int" + f.name[3:] + " screen (packed queries and sub-blocks)"
}

// chunk packs the queries of a chunk before its pass.
func (st *screenInt[T]) chunk(c *chunk[T]) { st.pack(c.q0, c.q1) }

func (st *screenInt[T]) counters() *screenCounters { return &st.screenCounters }

func (st *screenInt[T]) stats() ScreenStats { return st.screenCounters.stats() }

func (st *screenInt[T]) queryTile(qb int) int {
	// Both formats tile 12 queries (kernel.Int8QueryTile = Int16QueryTile).
	return max(kernel.Int16QueryTile, qb/kernel.Int16QueryTile*kernel.Int16QueryTile)
}

// subRows: a sub-block is quantised, scored against a query block and
// verified while its float32 rows are near in the cache hierarchy; shorter
// rows would make the per-row work of the decisions dominate.
func (st *screenInt[T]) subRows(n, qb int) int { return st.subN }

// block prepares the block's float32 rows (the working rows, or fl32 of the
// float64 working rows with their norm bounds) and checks that the bound
// covers them.
func (st *screenInt[T]) block(s *scorer[T], w *worker[T], b block) bool {
	cs, d := &w.cheap, s.d
	cs.rows.reset(s.g, b, false)
	y := cs.rows.span(0, b.n)
	if !st.f64 {
		g32 := any(y).([]float32)
		cs.g32 = g32
		return st.maxQR*blockNormBound(st.sim, g32, d) <= screenIntFits
	}
	// The float64 working rows are produced once (an integer screen's
	// undecided pairs touch most rows of a block); then one pass: the
	// float32 rounding of each row, whether it fits float32, and its norm
	// bound (screen.md §8.2: then no exact score can overflow).
	y64 := any(y).([]float64)
	cs.g32 = growTo(cs.g32, b.n*d)
	x := &cs.sInt
	x.r64 = growTo(x.r64, b.n)
	fits := true
	for j := range b.n {
		var f bool
		x.r64[j], f = convertNormBound(y64[j*d:(j+1)*d], cs.g32[j*d:(j+1)*d])
		fits = fits && f
	}
	return fits
}

// sub quantises rows [j0, j1) of the prepared block.
func (st *screenInt[T]) sub(w *worker[T], j0, j1 int) bool {
	cs, d := &w.cheap, st.d
	var r64 []float64
	if st.f64 {
		r64 = cs.sInt.r64[j0:j1]
	}
	cs.sInt.b = st.quantiseBlock(&cs.sInt, cs.g32[j0*d:j1*d], j1-j0, r64)
	return cs.sInt.b.ok
}

func (st *screenInt[T]) tile(s *scorer[T], w *worker[T], q0, q1, j0, j1 int, out []float32) {
	x, d := &w.cheap.sInt, st.d
	qp, qs, gs := st.qp[(q0-st.qpLo)*st.format.rowWords(d):], st.qs[q0-st.qlo:q1-st.qlo], x.gs[:j1-j0]
	if st.format.is8() {
		kernel.DotInt8(qp, q1-q0, x.gp, j1-j0, d, qs, gs, out)
		return
	}
	kernel.DotInt16(qp, q1-q0, x.gp, j1-j0, d, qs, gs, out)
}

// bound is e' ≥ |c − s| for query q and the prepared sub-block, rounded
// outward (screen.md §7.2):
//
//	e = min(n_q r_g + r_q R_g, R_q r_g + r_q n_g) + γ_d·R_q R_g + γ_3(v)·n_q n_g + τ + σ_q·2⁻¹⁴⁹
func (st *screenInt[T]) bound(w *worker[T], q int) float64 {
	b := w.cheap.sInt.b
	i := q - st.qlo
	nq, rq, Rq := st.qn[i], st.qr[i], st.qR[i]
	quant := min(nq*b.r+rq*b.R, Rq*b.r+rq*b.n)
	e := quant + st.gd*Rq*b.R + st.g3*nq*b.n + st.tau + float64(st.qs[i])*0x1p-149
	return math.Nextafter(e*(1+0x1p-40), math.Inf(1)) * st.scale
}

// quantiseBlock quantises gn float32 gallery rows into x.gp (packed) and
// x.gs (steps). Under the float64 protocol (r64 ≠ nil: the bounds of the
// float64 working rows y, whose float32 roundings g32 are) the residual
// bound covers y − σQ (screen.md §8.1).
func (st *screenInt[T]) quantiseBlock(x *wsInt, g32 []float32, gn int, r64 []float64) blockInt {
	d, f := st.d, st.format
	// Rows packed together, in sequential stores (kernel.Int8GalleryGroup =
	// Int16GalleryGroup).
	const group = kernel.Int16GalleryGroup
	x.row16 = growTo(x.row16, group*d)
	if f.is8() {
		x.row8 = growTo(x.row8, group*d)
	}
	x.gp = growTo(x.gp, f.galleryLen(gn, d))
	x.gs = growTo(x.gs, gn)
	b := blockInt{ok: true}
	for j := range gn {
		l := j % group
		sg, n, r, R, ok := quantiseInt(g32[j*d:(j+1)*d], x.row16[l*d:(l+1)*d], f.qmax)
		if !ok {
			return blockInt{}
		}
		if l == group-1 || j == gn-1 {
			if f.is8() {
				narrow8(x.row16[:(l+1)*d], x.row8)
				kernel.PackInt8GalleryGroup(x.row8, j-l, l+1, d, x.gp)
			} else {
				kernel.PackInt16GalleryGroup(x.row16, j-l, l+1, d, x.gp)
			}
		}
		x.gs[j] = float32(sg)
		if r64 != nil {
			r, R = st.rho(r, r64[j]), r64[j]
		}
		b.n, b.r, b.R = max(b.n, n), max(b.r, r), max(b.R, R)
	}
	return b
}

// quantiseInt writes the integer image of the float32 row x to q, every
// |Q_i| ≤ qmax (127 or 32767), and returns its float32 step σ and the
// norms of the bound: n ≥ ‖σQ‖, r ≥ ‖x − σQ‖, R ≥ ‖x‖ (screen.md §7.1,
// §9.1). ok is false when no step fits.
func quantiseInt(x []float32, q []int16, qmax float64) (sigma, n, r, R float64, ok bool) {
	d := len(x)
	q = q[:d]
	mx, ss := kernel.AbsMaxSumSq32(x)
	if mx-mx != 0 || ss-ss != 0 {
		return 0, 0, 0, 0, false
	}
	// The squares are exact and each meets at most d + 12 roundings in ss,
	// so ‖x‖² ≤ ss·(1 + γ_{2d+24}(u)); the root and products round at most
	// four times more, covered by 1 + 2⁻⁵⁰ (screen.md §7.1).
	R = math.Sqrt(ss*(1+gamma(2*d+24, u64))) * (1 + 0x1p-50)
	if mx == 0 {
		clear(q)
		return 1, 0, 0, 0, true
	}
	// Any float32 step σ will do (σ·Q and x − σ·Q are exact in float64);
	// the smallest that keeps |Q| ≤ qmax and ‖Q‖ ≤ 46340 makes the
	// residual smallest.
	sig32 := float32(max(mx/qmax, math.Sqrt(ss)/46340, 0x1p-126))
	for ; ; sig32 = float32(float64(sig32) * (1 + 0x1p-12)) {
		sigma = float64(sig32)
		if sigma > math.MaxFloat32 {
			return 0, 0, 0, 0, false
		}
		inv := 1 / sigma
		if mx*inv > qmax-1 { // then every |x_i·inv| rounds to at most qmax
			continue
		}
		n2, rr := kernel.Quantise16(x, inv, sigma, q)
		if n2 > intNormCap {
			continue
		}
		// n2 is exact; rr meets at most d + 9 roundings per term.
		n = sigma * math.Sqrt(n2) * (1 + 0x1p-50)
		r = math.Sqrt(rr*(1+gamma(2*d+24, u64))) * (1 + 0x1p-50)
		return sigma, n, r, R, true
	}
}

// blockNormBound is an upper bound of ‖x‖ over the float32 rows of a
// block: 2 for cosine (normalised rows: ‖x‖ ≤ (1 + 2⁻²⁴)(1 + O(d·2⁻⁵³))),
// else √d·max|x_i| (rounded up), +Inf when a value is not finite (the
// block is then scored exhaustively). The maximum comes from the SIMD
// pass of kernel.AbsMaxSumSq32 (its sum of squares is not used).
func blockNormBound(sim Similarity, g32 []float32, d int) float64 {
	if sim == Cosine {
		return 2
	}
	mx, _ := kernel.AbsMaxSumSq32(g32)
	if mx-mx != 0 {
		return math.Inf(1)
	}
	return math.Sqrt(float64(d)) * mx * (1 + 0x1p-40)
}
