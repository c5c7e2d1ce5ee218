package rank

import (
	"context"
	"math"
	"time"

	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/memory"
)

// The int16 screen of the float64 protocol (SPEC §4.2 "Screened
// evaluation"; the bound and its proof are screen.md §8). The float32
// roundings x = fl32(y) of the float64 working rows y, which the float32
// screen forms anyway (screen.go, screenrows.go), are quantised as in the
// float32 protocol (quantise16), c is the scaled exact integer dot product
// (kernel.DotInt16), and the bound adds the distance ‖y − x‖ to the
// quantisation residual and takes the float64 chain's own error. The
// decision rules are those of screen.md §5 (screened16Row); the undecided
// pairs get their exact float64 score by the one formula
// (kernel.Dot64PairsQuery: the bits of DotRow64, so of the exhaustive path).
//
// It replaces the float32 screen of a run only where it pays: the CPU runs
// the VNNI tile, the run has at least screen16MinPairs pairs, and a
// measured sample leaves at most screen16x64MaxUndecided of its pairs
// undecided. Otherwise, and whenever it does not apply, the float32
// screen runs as before. The choice never changes a result.

// screen16x64MaxUndecided is the largest undecided share of the sampled
// pairs for which a float64-protocol run takes the int16 screen instead of
// the float32 one (screen.md §8.4): at d = 768 on this machine class the
// integer tile costs about 0.51 of the blocked float32 screen per pair and
// each undecided pair 23–36 float32-screened pairs (kernel.Dot64PairsQuery,
// in cache and in a run), so the int16 screen breaks even near 1.5 %
// undecided; at 1 % it is expected to cost at most about 0.85 of the
// float32 screen.
const screen16x64MaxUndecided = 0.01

// newScreen16x64 prepares the int16 screen of the float64 protocol over
// the float32 screen's state, or returns nil (the float32 screen runs).
func (s *scorer) newScreen16x64(ctx context.Context) *screen16State {
	fs := s.screen // nil when screening does not apply to the run at all
	if fs == nil || fs.q32 == nil || !(kernel.Int16Fast() && int64(s.nq)*int64(s.ng) >= screen16MinPairs || screen16Force) {
		return nil
	}
	d := s.d
	qlen := kernel.Int16QueryLen(s.nq, d)
	// What this screen holds beyond the float32 screen's state: the packed
	// queries and their bounds, the sample, and per worker a packed
	// sub-block, its cheap scores, the list of pairs to verify (with their
	// grouping by query) and, unless stored so, the block's float64 working
	// rows (SPEC §7.5). Without the room the float32 screen runs, which
	// needs none of it.
	sn := int64(min(s.ng, 4096))
	qb := int64(max(kernel.Int16QueryTile, min(s.o.QueryBatch, s.nq)))
	var block int64
	if s.g.direct64 == nil {
		block = memory.Bytes(int64(s.threads), int64(s.galleryBlock()), int64(d), 8)
	}
	need := memory.Sum(block,
		memory.Bytes(int64(qlen), 4), memory.Bytes(int64(s.nq), 4*8+4+1),
		memory.Bytes(sn, int64(d), 4+2), memory.Bytes(sn, 2*kernel.Int16QueryTile, 4),
		memory.Bytes(int64(s.threads), memory.Sum(memory.Bytes(int64(screen16SubRows), int64(d)+1, 2), memory.Bytes(qb, int64(screen16SubRows), 4),
			memory.Bytes(int64(verify16x64Pairs)+qb*int64(screen16SubRows), 16+8+8+4+4), memory.Bytes(int64(s.nq)+1, 4))))
	if memory.Check(ctx, "Int16 screen (packed queries and sub-blocks)", need) != nil {
		return nil
	}
	st := &screen16State{
		qp:  make([]int32, qlen),
		qs:  make([]float32, s.nq),
		qn:  make([]float64, s.nq),
		qr:  make([]float64, s.nq),
		qR:  make([]float64, s.nq),
		qok: make([]bool, s.nq),
		f64: true,
		gd:  gamma(d, u64),
		g3:  gamma(3, u32),
		tau: float64(d+2) * 0x1p-149,
		sdv: math.Sqrt(float64(d)) * 0x1p-150 * (1 + 0x1p-40),
	}
	row := make([]int16, d)
	st.allOK = true
	quantise := func(q0, q1 int) bool {
		for q := q0; q < q1; q++ {
			// fs.q32 is fl32 of the float64 working query row, fs.rq ≥ its norm.
			sg, n, r, _, ok := quantise16(fs.q32[q*d:(q+1)*d], row)
			if !ok { // a value beyond float32: the float32 screen handles its rows
				return false
			}
			kernel.PackInt16Query(row, q, st.qp)
			st.qs[q], st.qn[q], st.qR[q], st.qok[q] = float32(sg), n, fs.rq[q], true
			st.qr[q] = st.rho(r, fs.rq[q])
			st.maxQR = max(st.maxQR, fs.rq[q])
		}
		return true
	}
	// The sample's queries first: a run the sample rejects quantises no more.
	ns := min(s.nq, 2*kernel.Int16QueryTile)
	if !quantise(0, ns) || !screen16Force && !st.samplePays(s, screen16x64MaxUndecided) || !quantise(ns, s.nq) {
		return nil
	}
	fs.q32 = nil // the float32 screen does not run; s.screen stays set for the workspaces
	return st
}

// rho is the residual bound of a float64 working row y with float32
// rounding x (screen.md §8.1): ‖y − σQ‖ ≤ ‖x − σQ‖ + ‖y − x‖ ≤ r + v·R + √d·2⁻¹⁵⁰,
// with r ≥ ‖x − σQ‖ and R ≥ ‖y‖. Its two roundings are covered by the
// outward rounding of the bound.
func (st *screen16State) rho(r, R float64) float64 { return r + u32*R + st.sdv }

// screened16Block64 scores gallery rows [g0, g1) against every query with
// the int16 screen of the float64 protocol.
func (s *scorer) screened16Block64(w *workspace, g0, g1, qb int, checkCtx func() error) error {
	st := s.screen16
	x := st.ws(w)
	d, gn := s.d, g1-g0
	w.g32 = growTo(w.g32, gn*d)
	g32 := w.g32[:gn*d]
	rows := &w.rows64
	rows.reset(s.g, g0, gn)
	// The float64 working rows of the block, produced once (block64, as the
	// exhaustive path does): unlike the float32 screen's few, the int16
	// screen's undecided pairs touch most rows of a block. Then one pass:
	// the float32 rounding of each row, whether it fits float32, and its
	// norm bound.
	y := rows.span(0, gn)
	x.r64 = growTo(x.r64, gn)
	fits := true
	for j := range gn {
		var f bool
		x.r64[j], f = convertNormBound(y[j*d:(j+1)*d], g32[j*d:(j+1)*d])
		fits = fits && f
	}
	if !fits {
		// Values beyond float32, which this screen does not bound: the
		// block is scored exhaustively, in the exhaustive order, so an
		// error names the same pair. Otherwise no exact score of the
		// block can overflow (screen.md §8.2).
		st.blocks.Add(1)
		return exactBlock(s, w, g0, g1, qb, s.q64, y, &w.s64, kernel.Dot64, checkCtx)
	}
	qb = max(kernel.Int16QueryTile, qb/kernel.Int16QueryTile*kernel.Int16QueryTile)
	sub := screen16SubRows
	x.out = growTo(x.out, qb*sub)
	np := kernel.Int16Pairs(d)
	// The pairs to verify are collected over the whole block (offsets from
	// g0), so that each query's are scored together (verify16x64), and
	// verified at the end or when the list is long. Decisions commute and
	// a stale nearest negative only lists more candidates (screen.md §8.3).
	x.need = x.need[:0]
	for j0 := 0; j0 < gn; j0 += sub {
		if err := checkCtx(); err != nil {
			return err
		}
		j1 := min(j0+sub, gn)
		sn := j1 - j0
		t0 := time.Now()
		b := st.quantiseBlock(x, g32[j0*d:j1*d], sn, d, x.r64[j0:j1])
		w.fold += time.Since(t0)
		for q0 := 0; q0 < s.nq; q0 += qb {
			q1 := min(q0+qb, s.nq)
			qn := q1 - q0
			if !b.ok { // not reached for rows that fit float32 (screen.md §7.1); exact, and cannot fail
				for q := q0; q < q1; q++ {
					if err := s.exact16Row64(w, q, g0+j0, rows, j0, sn); err != nil {
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
			first := len(x.need)
			for i := range qn {
				q := q0 + i
				if !s.screened16Row(w, x, q, g0+j0, out[i*sn:(i+1)*sn], st.bound(q, b)) {
					// An overflowing cheap score: this row is scored exactly.
					if err := s.exact16Row64(w, q, g0+j0, rows, j0, sn); err != nil {
						return err
					}
				}
			}
			for k := first; k < len(x.need); k++ {
				x.need[k].j += int32(j0) // offsets from g0
			}
			if len(x.need) >= verify16x64Pairs {
				s.verify16x64(w, x, g0, rows)
			}
			w.fold += time.Since(t1)
		}
		st.pairs.Add(int64(s.nq * sn))
		s.meter.add(int64(s.nq) * int64(sn))
	}
	t0 := time.Now()
	s.verify16x64(w, x, g0, rows)
	w.fold += time.Since(t0)
	return nil
}

// verify16x64Pairs is the list length at which verify16x64 runs before the
// end of a block: long enough that a query has many pairs to score
// together, short enough to bound the list's memory (2 MiB per worker).
var verify16x64Pairs = 1 << 17 // a variable for tests

// exact16Row64 is the exhaustive float64 path for query q against the sn
// block rows from j0 (gallery rows from g0).
func (s *scorer) exact16Row64(w *workspace, q, g0 int, rows *blockRows64, j0, sn int) error {
	d := s.d
	w.s64 = growTo(w.s64, sn)
	exact := w.s64[:sn]
	kernel.Dot64(s.q64[q*d:(q+1)*d], 1, rows.span(j0, j0+sn), sn, d, exact)
	s.screen16.exact.Add(int64(sn))
	return consume(s, w.part, q, g0, exact)
}

// verify16x64 scores the listed pairs (x.need, offsets from the block's
// first row g0) exactly in float64 and applies their decisions (apply16).
// The pairs are grouped by query (a counting sort) and each query's are
// scored by one kernel.Dot64PairsQuery call: the bits of kernel.DotRow64,
// so of the exhaustive path.
func (s *scorer) verify16x64(w *workspace, x *ws16, g0 int, rows *blockRows64) {
	need := x.need
	if len(need) == 0 {
		return
	}
	d, n := s.d, len(need)
	s.screen16.exact.Add(int64(n))
	x.vals64 = growTo(x.vals64, n)
	for _, nd := range need { // produced already (the whole block); the cache may move while it grows
		rows.row(int(nd.j))
	}
	base := rows.pairBase()
	if len(base) > math.MaxInt32 { // offsets are int32
		for i, nd := range need {
			x.vals64[i] = kernel.DotRow64(s.q64[int(nd.q)*d:(int(nd.q)+1)*d], rows.row(int(nd.j)))
		}
		apply16(s, w, x, g0, x.vals64)
		return
	}
	// start[q]…start[q+1]: the positions of query q's pairs in order.
	x.start = growTo(x.start, s.nq+1)
	start := x.start
	clear(start)
	for _, nd := range need {
		start[nd.q+1]++
	}
	for q := range s.nq {
		start[q+1] += start[q]
	}
	x.order = growTo(x.order, n)
	x.off = growTo(x.off, n)
	x.tmp64 = growTo(x.tmp64, n)
	order, goff := x.order, x.off[:n]
	for i, nd := range need {
		k := start[nd.q]
		order[k], goff[k] = int32(i), int32(rows.pairOffset(int(nd.j)))
		start[nd.q]++
	}
	// start[q] is now the end of query q's pairs.
	lo := int32(0)
	for q := range s.nq {
		hi := start[q]
		if hi > lo {
			kernel.Dot64PairsQuery(s.q64[q*d:(q+1)*d], base, goff[lo:hi], d, x.tmp64[lo:hi])
		}
		lo = hi
	}
	for k, i := range order {
		x.vals64[i] = x.tmp64[k]
	}
	apply16(s, w, x, g0, x.vals64)
}

// pairBase is the slice holding every produced row of the block, and
// pairOffset(j) the element offset of row j in it (after row(j)).
func (r *blockRows64) pairBase() []float64 {
	switch {
	case r.direct != nil:
		return r.direct
	case len(r.full) > 0:
		return r.full
	}
	return r.cache
}

func (r *blockRows64) pairOffset(j int) int {
	d := r.src.cols
	if r.direct != nil || len(r.full) > 0 {
		return j * d
	}
	return (int(r.slot[j]) - 1) * d
}
