package rank

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/memory"
)

// The int16 screen of the float32 protocol (SPEC §4.2 "Screened
// evaluation"; the bound and its proof are screen.md §7). Every float32
// working row x is quantised to int16 values Q with a power-of-two step σ,
// the integer dot product I = Σ Q^q_i Q^g_i is exact (kernel.DotInt16, the
// AVX-512 VNNI tile), and c = fl32(fl32(fl32(I)·σ_g)·σ_q) is the cheap
// score. A comparison is decided from c only where the proven bound
// |c − s| ≤ e makes it certain (the rules of screen.md §5); every undecided
// pair gets its exact float32 score by the one formula (kernel.Dot32, a
// batch of gathered gallery rows per query), so every reported number is
// that of exhaustive evaluation.
//
// Scope as the float64 screen: dot and cosine, dense endpoints, explicit
// relevance, no run export, and only where it pays: the CPU runs the
// integer tile (kernel.Int16Fast) and a measured sample of the run leaves
// few pairs undecided (screen16Sample).

// screen16Force screens whatever the CPU (tests: the portable tile).
var screen16Force = false

// screen16MaxUndecided is the largest undecided share of the sampled pairs
// for which the run is screened (screen.md §7.5): the integer kernel and
// quantisation cost about 0.45 of the exhaustive float32 pass and each
// undecided pair about 20 exhaustive pairs (kernel.Dot32Pairs), so the
// screen breaks even near 2.7 % and this cut expects at most 0.61 of the
// exhaustive cost.
const screen16MaxUndecided = 0.008

// screen16MinPairs is the smallest run screened: below it the run takes
// milliseconds, and quantising the queries and the sample would be most of
// what the screen saves.
const screen16MinPairs = 1 << 22

// int16NormCap bounds ‖Q‖ of every row: then every partial sum of
// Q^q_i·Q^g_i is at most ‖Q^q‖‖Q^g‖ ≤ 46340² < 2³¹ (Cauchy–Schwarz), so
// the int32 accumulation is exact in any order.
const int16NormCap = 46340 * 46340

type screen16State struct {
	qp             []int32   // packed quantised queries
	qs             []float32 // σ_q
	qn, qr, qR     []float64 // ≥ ‖σ_qQ^q‖, ≥ ‖q − σ_qQ^q‖, ≥ ‖q‖
	qok            []bool    // the row could be quantised
	allOK          bool      // every query row was quantised
	maxQR          float64   // the largest R_q
	gd, g3, tau    float64   // γ_d of the exact rule (v; float64 protocol: u), γ_3(v) and (d+2)·2⁻¹⁴⁹
	f64            bool      // the float64 protocol (screen16_64.go)
	sdv            float64   // float64 protocol: √d·2⁻¹⁵⁰ of the residual bound
	pairs, exact   atomic.Int64
	blocks         atomic.Int64
	sampled, undec int64 // the selection sample
	scratch        sync.Map
}

// ws16 is one worker's int16 screen buffers.
type ws16 struct {
	row16 []int16
	gp    []int32
	gs    []float32
	out   []float32
	need  []need16
	vals  []float32
	exact []float32
	off   []int32 // element offsets of the rows to verify
	// float64 protocol (screen16_64.go)
	r64    []float64 // the block rows' norm bounds
	vals64 []float64 // exact scores of the listed pairs
	tmp64  []float64 // the same, grouped by query
	start  []int32   // per query: where its pairs start (then end) in the grouping
	order  []int32   // the grouping: positions in need
}

// need16 is a pair that needs its exact score: query, offset, whether
// it may be the nearest negative, and (slot ≥ −1) whether it is undecided
// for the rank counts, with the slot the cheap counts gave it (−1: none).
type need16 struct {
	q, j  int32
	nn    bool
	undec bool
	cheap int32
}

func (st *screen16State) ws(w *workspace) *ws16 {
	if x, ok := st.scratch.Load(w); ok {
		return x.(*ws16)
	}
	x := &ws16{}
	st.scratch.Store(w, x)
	return x
}

// quantise16 writes the int16 image of the float32 row x to q and returns
// its power-of-two step σ and the norms of the bound: n ≥ ‖σQ‖,
// r ≥ ‖x − σQ‖, R ≥ ‖x‖ (screen.md §7.1). ok is false when no step fits.
func quantise16(x []float32, q []int16) (sigma, n, r, R float64, ok bool) {
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
	// the smallest that keeps |Q| ≤ 32767 and ‖Q‖ ≤ 46340 makes the
	// residual smallest.
	sig32 := float32(max(mx/32767, math.Sqrt(ss)/46340, 0x1p-126))
	for ; ; sig32 = float32(float64(sig32) * (1 + 0x1p-12)) {
		sigma = float64(sig32)
		if sigma > math.MaxFloat32 {
			return 0, 0, 0, 0, false
		}
		inv := 1 / sigma
		if mx*inv > 32766 { // then every |x_i·inv| rounds to at most 32767
			continue
		}
		n2, rr := kernel.Quantise16(x, inv, sigma, q)
		if n2 > int16NormCap {
			continue
		}
		// n2 is exact; rr meets at most d + 9 roundings per term.
		n = sigma * math.Sqrt(n2) * (1 + 0x1p-50)
		r = math.Sqrt(rr*(1+gamma(2*d+24, u64))) * (1 + 0x1p-50)
		return sigma, n, r, R, true
	}
}

// newScreen16 prepares the int16 screen, or returns nil when it does not
// apply or the sample says it would not pay.
func (s *scorer) newScreen16(ctx context.Context) *screen16State {
	o := s.o
	if o.Precision == Float64 {
		return s.newScreen16x64(ctx) // screen16_64.go
	}
	if o.Exhaustive || ScreenDisabledByEnv() || o.Precision != Float32 || o.Similarity == SquaredL2 || s.sparse ||
		s.p.Classes != nil || o.TopN > 0 || o.FullRanking || s.q32 == nil || s.d >= 1<<22 ||
		!(kernel.Int16Fast() && int64(s.nq)*int64(s.ng) >= screen16MinPairs || screen16Force) {
		return nil
	}
	d := s.d
	// What the screen holds (SPEC §7.5): the packed queries and their
	// bounds, the sample, and per worker a packed sub-block, its cheap
	// scores and the pairs to verify. Without the room the exhaustive
	// float32 pass runs, which needs none of it.
	sn := int64(min(s.ng, 4096))
	qb := int64(max(kernel.Int16QueryTile, min(o.QueryBatch, s.nq)))
	sub := int64(screen16SubRows)
	need := memory.Sum(
		memory.Bytes(int64(kernel.Int16QueryLen(s.nq, d)), 4), memory.Bytes(int64(s.nq), 4+3*8+1),
		memory.Bytes(sn, int64(d), 4+2), memory.Bytes(sn, 2*kernel.Int16QueryTile, 4),
		memory.Bytes(int64(s.threads), memory.Sum(memory.Bytes(sub, int64(d)+1, 2+4), memory.Bytes(qb, sub, 4+16+4+4+4))))
	if memory.Check(ctx, "Int16 screen (packed queries and sub-blocks)", need) != nil {
		return nil
	}
	st := &screen16State{
		qp:  make([]int32, kernel.Int16QueryLen(s.nq, d)),
		qs:  make([]float32, s.nq),
		qn:  make([]float64, s.nq),
		qr:  make([]float64, s.nq),
		qR:  make([]float64, s.nq),
		qok: make([]bool, s.nq),
		gd:  gamma(d, u32),
		g3:  gamma(3, u32),
		tau: float64(d+2) * 0x1p-149,
	}
	row := make([]int16, d)
	st.allOK = true
	for q := range s.nq {
		sg, n, r, R, ok := quantise16(s.q32[q*d:(q+1)*d], row)
		if !ok {
			st.allOK = false // every block takes the exhaustive path
			continue
		}
		kernel.PackInt16Query(row, q, st.qp)
		st.qs[q], st.qn[q], st.qr[q], st.qR[q], st.qok[q] = float32(sg), n, r, R, true
		st.maxQR = max(st.maxQR, R)
	}
	if !st.allOK || !screen16Force && !st.samplePays(s, screen16MaxUndecided) {
		return nil
	}
	return st
}

// samplePays screens the first queries (at most 24) against up to 4096
// gallery rows spread over the gallery and reports whether the share of
// pairs the rank rules leave undecided is at most limit. The sample is
// quantised and bounded in sub-blocks of screen16SubRows rows, as a run is.
func (st *screen16State) samplePays(s *scorer, limit float64) bool {
	d := s.d
	nq := min(s.nq, 2*kernel.Int16QueryTile)
	for q := range nq {
		if !st.qok[q] {
			return false
		}
	}
	ng := min(s.ng, 4096)
	sub := min(ng, screen16SubRows)
	g32 := make([]float32, sub*d)
	tmp := make([]float64, d)
	var r64 []float64 // float64 protocol: the working rows' bounds
	if st.f64 {
		r64 = make([]float64, sub)
	}
	out := make([]float32, nq*sub)
	x := &ws16{}
	var und int64
	for j0 := 0; j0 < ng; j0 += sub {
		sn := min(sub, ng-j0)
		for j := range sn {
			gi := int(int64(j0+j) * int64(s.ng) / int64(ng))
			if st.f64 {
				var fits bool
				if r64[j], fits = s.g.screenRow(gi, tmp, g32[j*d:(j+1)*d]); !fits {
					return false // values beyond float32 (scored exactly): keep the float32 screen
				}
				continue
			}
			copy(g32[j*d:(j+1)*d], s.g.block32(gi, gi+1, g32[j*d:(j+1)*d], tmp))
		}
		var rs []float64
		if r64 != nil {
			rs = r64[:sn]
		}
		gb := st.quantiseBlock(x, g32[:sn*d], sn, d, rs)
		if !gb.ok {
			return false
		}
		kernel.DotInt16(st.qp, nq, x.gp, sn, d, st.qs[:nq], x.gs[:sn], out[:nq*sn])
		for q := range nq {
			e := st.bound(q, gb)
			ord := s.qs[q].ordScore
			for _, c := range out[q*sn : (q+1)*sn] {
				cf := float64(c)
				for _, sr := range ord {
					if cf >= sr-e && cf <= sr+e {
						und++
						break
					}
				}
			}
		}
	}
	st.sampled, st.undec = int64(nq*ng), und
	return float64(und) <= limit*float64(nq*ng)
}

// block16 is what the bound needs of a quantised gallery block.
type block16 struct {
	n, r, R float64 // the largest row bounds of the block: ≥ ‖σQ‖, ≥ ‖y − σQ‖, ≥ ‖y‖
	ok      bool    // every row quantised
}

// quantiseBlock quantises gn float32 gallery rows into x.gp (packed) and
// x.gs (steps). Under the float64 protocol (r64 ≠ nil: the bounds of the
// float64 working rows y, whose float32 roundings g32 are) the residual
// bound covers y − σQ (screen.md §8.1).
func (st *screen16State) quantiseBlock(x *ws16, g32 []float32, gn, d int, r64 []float64) block16 {
	const group = kernel.Int16GalleryGroup // rows packed together, in sequential stores
	x.row16 = growTo(x.row16, group*d)
	x.gp = growTo(x.gp, kernel.Int16GalleryLen(gn, d))
	x.gs = growTo(x.gs, gn)
	b := block16{ok: true}
	for j := range gn {
		l := j % group
		sg, n, r, R, ok := quantise16(g32[j*d:(j+1)*d], x.row16[l*d:(l+1)*d])
		if !ok {
			return block16{}
		}
		if l == group-1 || j == gn-1 {
			kernel.PackInt16GalleryGroup(x.row16, j-l, l+1, d, x.gp)
		}
		x.gs[j] = float32(sg)
		if r64 != nil {
			r, R = st.rho(r, r64[j]), r64[j]
		}
		b.n, b.r, b.R = max(b.n, n), max(b.r, r), max(b.R, R)
	}
	return b
}

// bound is e' ≥ |c − s| for every pair of query q and block b, rounded
// outward (screen.md §7.2):
//
//	e = min(n_q r_g + r_q R_g, R_q r_g + r_q n_g) + γ_d(v)·R_q R_g + γ_3(v)·n_q n_g + τ + σ_q·2⁻¹⁴⁹
func (st *screen16State) bound(q int, b block16) float64 {
	nq, rq, Rq := st.qn[q], st.qr[q], st.qR[q]
	quant := min(nq*b.r+rq*b.R, Rq*b.r+rq*b.n)
	e := quant + st.gd*Rq*b.R + st.g3*nq*b.n + st.tau + float64(st.qs[q])*0x1p-149
	return math.Nextafter(e*(1+0x1p-40), math.Inf(1)) * screenBoundScale
}

// screen16Fits bounds the products whose float32 chains are screened:
// with R_q·R_g ≤ 2¹²⁰ no exact chain or cheap score can overflow, so every
// exact score of a screened pair is finite (screen.md §7.3).
const screen16Fits = 0x1p120

// screen16SubRows is the gallery rows of one sub-block: quantised, scored
// against a query block and verified while its float32 rows are near in
// the cache hierarchy (the verification reads them); shorter rows would
// make the per-row work of the decisions dominate (128 rows: +25 % CPU).
var screen16SubRows = 512 // a variable for tests; a multiple of kernel.Int16GalleryTile

// screened16Block scores gallery rows [g0, g1) against every query with the
// int16 screen.
func (s *scorer) screened16Block(w *workspace, g0, g1, qb int, checkCtx func() error) error {
	st := s.screen16
	if st.f64 {
		return s.screened16Block64(w, g0, g1, qb, checkCtx) // screen16_64.go
	}
	x := st.ws(w)
	d, gn := s.d, g1-g0
	g32 := s.g.block32(g0, g1, w.g32, w.tmp)
	if !st.allOK || st.maxQR*blockNormBound(s.o.Similarity, g32, d) > screen16Fits {
		// Products this screen does not bound: the block is scored
		// exhaustively, in the exhaustive order, so an error names the
		// same pair. Otherwise no pair of the block can fail.
		st.blocks.Add(1)
		return exactBlock(s, w, g0, g1, qb, s.q32, g32, &x.exact, kernel.Dot32, checkCtx)
	}
	qb = max(kernel.Int16QueryTile, qb/kernel.Int16QueryTile*kernel.Int16QueryTile)
	sub := screen16SubRows
	x.out = growTo(x.out, qb*sub)
	np := kernel.Int16Pairs(d)
	for j0 := 0; j0 < gn; j0 += sub {
		if err := checkCtx(); err != nil {
			return err
		}
		j1 := min(j0+sub, gn)
		sn := j1 - j0
		grows := g32[j0*d : j1*d]
		t0 := time.Now()
		b := st.quantiseBlock(x, grows, sn, d, nil)
		w.fold += time.Since(t0)
		for q0 := 0; q0 < s.nq; q0 += qb {
			q1 := min(q0+qb, s.nq)
			qn := q1 - q0
			if !b.ok { // not reached for finite rows (screen.md §7.1); exact, and cannot fail
				for q := q0; q < q1; q++ {
					if err := s.exact16Row(w, x, q, g0+j0, grows, sn); err != nil {
						return err
					}
				}
				continue
			}
			out := x.out[:qn*sn]
			t0 := time.Now()
			kernel.DotInt16(st.qp[q0*np:], qn, x.gp, sn, d, st.qs[q0:q1], x.gs[:sn], out)
			t1 := time.Now()
			w.kernel += t1.Sub(t0)
			x.need = x.need[:0]
			for i := range qn {
				q := q0 + i
				if !s.screened16Row(w, x, q, g0+j0, out[i*sn:(i+1)*sn], st.bound(q, b)) {
					// An overflowing cheap score: this row is scored exactly.
					if err := s.exact16Row(w, x, q, g0+j0, grows, sn); err != nil {
						return err
					}
				}
			}
			s.verify16(w, x, g0+j0, grows)
			w.fold += time.Since(t1)
		}
		st.pairs.Add(int64(s.nq * sn))
		s.meter.add(int64(s.nq) * int64(sn))
	}
	return nil
}

// blockNormBound is an upper bound of ‖x‖ over the float32 rows of a
// block: 2 for cosine (normalised rows: ‖x‖ ≤ (1 + 2⁻²⁴)(1 + O(d·2⁻⁵³))),
// else √d·max|x_i| (rounded up).
func blockNormBound(sim Similarity, g32 []float32, d int) float64 {
	if sim == Cosine {
		return 2
	}
	// Finite float32 magnitudes order as their bit patterns.
	var m0, m1 uint32
	i := 0
	for ; i+2 <= len(g32); i += 2 {
		m0 = max(m0, math.Float32bits(g32[i])&0x7fffffff)
		m1 = max(m1, math.Float32bits(g32[i+1])&0x7fffffff)
	}
	if i < len(g32) {
		m0 = max(m0, math.Float32bits(g32[i])&0x7fffffff)
	}
	mx := float64(math.Float32frombits(max(m0, m1)))
	return math.Sqrt(float64(d)) * mx * (1 + 0x1p-40)
}

// exact16Row is the exhaustive float32 path for one query row of a block.
func (s *scorer) exact16Row(w *workspace, x *ws16, q, g0 int, g32 []float32, gn int) error {
	d := s.d
	x.exact = growTo(x.exact, gn)
	kernel.Dot32(s.q32[q*d:(q+1)*d], 1, g32, gn, d, x.exact[:gn])
	s.screen16.exact.Add(int64(gn))
	return consume(s, w.part, q, g0, x.exact)
}

// screened16Row folds one query's cheap scores over gallery rows g0… into
// its partial result with the decision rules of screen.md §5 (as
// screenedRow), except that the pairs needing an exact score are only
// listed (x.need); verify16 scores them and applies their decisions. It
// reports false, and changes nothing, when a cheap score of the row is not
// finite: the caller then scores the row exactly.
func (s *scorer) screened16Row(w *workspace, x *ws16, q, g0 int, row []float32, e float64) bool {
	qi, part := &s.qs[q], w.part
	runs, maxC, finite := negativeRuns(qi, g0, row, w.runs[:0])
	w.runs = runs
	if !finite {
		return false
	}
	last := len(qi.ordScore) - 1
	beaten := part.beaten[qi.off : qi.off+len(qi.pos)+1]
	w.above, w.below = growTo(w.above, last+1), growTo(w.below, last+1)
	above, below := w.above, w.below
	for r, sr := range qi.ordScore {
		above[r], below[r] = up(sr+e), down(sr-e)
	}
	best, hasBest := part.best[q], part.hasBest[q] // updated by verify16
	nthr := down(float64(maxC) - 2*e)
	if hasBest {
		nthr = max(nthr, down(best-e))
	}
	nthr32 := down32(nthr)
	w.hits = growTo(w.hits, len(row))
	need := x.need
	if last < screenSlotScans {
		var hi, lo [screenSlotScans]float32
		var count [screenSlotScans]int
		for r := 0; r <= last; r++ {
			hi[r], lo[r] = up32(above[r]), down32(below[r])
		}
		inf := float32(math.Inf(1))
		for _, run := range runs {
			j := int(run[0])
			seg := row[j:run[1]]
			for r := 0; r <= last; r++ {
				high := inf
				if r == 0 {
					high = nthr32
				}
				n, hits := kernel.Scan32(seg, kernel.Cut{Above: hi[r], Lo: lo[r], Hi: hi[r], High: high}, w.hits)
				count[r] += n
				for _, k := range hits {
					c := seg[k]
					nd := need16{q: int32(q), j: int32(j) + k, cheap: -1}
					nd.nn = r == 0 && c >= nthr32 && float64(c) >= nthr
					if c >= lo[r] && c <= hi[r] {
						earlier := false
						for rr := range r {
							earlier = earlier || c >= lo[rr] && c <= hi[rr]
						}
						if !earlier {
							// The counts put the candidate in the first slot
							// whose threshold it exceeds (none: no slot).
							cheap := r + 1
							for cheap <= last && !(c > hi[cheap]) {
								cheap++
							}
							if cheap <= last {
								nd.cheap = int32(cheap)
							}
							nd.undec = true
						}
					}
					if nd.nn || nd.undec {
						need = append(need, nd)
					}
				}
			}
		}
		prev := 0
		for r := 0; r <= last; r++ {
			beaten[r] += count[r] - prev
			prev = count[r]
		}
	} else {
		skip, top := down32(below[last]), up32(above[0])
		for _, run := range runs {
			j := int(run[0])
			seg := row[j:run[1]]
			first, hits := kernel.Scan32(seg, kernel.Cut{Above: top, Lo: skip, Hi: top, High: nthr32}, w.hits)
			beaten[0] += first
			for _, k := range hits {
				c32 := seg[k]
				nd := need16{q: int32(q), j: int32(j) + k, cheap: -1}
				nd.nn = c32 >= nthr32 && float64(c32) >= nthr
				if c32 >= skip && c32 <= top {
					c := float64(c32)
					r := 0
					for n := last + 1; n > 0; {
						half := n >> 1
						if !(c > above[r+half]) {
							r += half + 1
							n -= half + 1
						} else {
							n = half
						}
					}
					switch {
					case r <= last && (r == 0 || c < below[r-1]):
						beaten[r]++
					case r == last+1 && c < below[last]:
					default:
						nd.undec = true
					}
				}
				if nd.nn || nd.undec {
					need = append(need, nd)
				}
			}
		}
	}
	x.need = need
	countPositives(qi, g0, len(row), beaten)
	return true
}

// verify16 scores the listed pairs (of a query block against the
// sub-block's gallery rows g32, offsets from g0) exactly and applies their
// decisions: each undecided pair leaves the slot the cheap counts gave it
// and takes the one of its exact score; a nearest-negative candidate
// raises the nearest negative. kernel.Dot32Pairs scores them all in one
// call (the exact float32 chain of each pair: the bits of the exhaustive
// path), 16 pairs per vector.
func (s *scorer) verify16(w *workspace, x *ws16, g0 int, g32 []float32) {
	d := s.d
	need := x.need
	if len(need) == 0 {
		return
	}
	s.screen16.exact.Add(int64(len(need)))
	x.off = growTo(x.off, 2*len(need))
	qoff, goff := x.off[:len(need)], x.off[len(need):]
	for i, nd := range need {
		qoff[i], goff[i] = nd.q*int32(d), nd.j*int32(d)
	}
	x.vals = growTo(x.vals, len(need))
	kernel.Dot32Pairs(s.q32, qoff, g32, goff, d, x.vals)
	apply16(s, w, x, g0, x.vals)
}

// apply16 applies the exact scores vals of the listed pairs x.need (of
// gallery rows from g0) and empties the list: each undecided pair leaves
// the slot the cheap counts gave it and takes the one of its exact score;
// a nearest-negative candidate raises the nearest negative.
func apply16[T float32 | float64](s *scorer, w *workspace, x *ws16, g0 int, vals []T) {
	part, need := w.part, x.need
	for i, nd := range need {
		q := int(nd.q)
		v := float64(vals[i]) + 0 // −0 → +0
		if nd.nn && (!part.hasBest[q] || v > part.best[q]) {
			part.best[q], part.hasBest[q] = v, true
		}
		if nd.undec {
			qi := &s.qs[q]
			beaten := part.beaten[qi.off : qi.off+len(qi.pos)+1]
			last := len(qi.ordScore) - 1
			if nd.cheap >= 0 {
				beaten[nd.cheap]--
			}
			if g := g0 + int(nd.j); precedes(v, g, qi.ordScore[last], qi.ordIndex[last]) {
				beaten[rankSlot(qi, v, g)]++
			}
		}
	}
	x.need = need[:0]
}

// screen16Stats records what the int16 screen did in the run's Stats.
func (s *scorer) screen16Stats() {
	if st := s.screen16; st != nil {
		s.stats.Screened = true
		s.stats.Screen = ScreenStats{Pairs: st.pairs.Load(), Exact: st.exact.Load(), ExactTiles: st.blocks.Load(), Kind: "int16"}
	}
}
