package rank

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
)

// Screened exact scoring (SPEC §4.2 "Screened evaluation"; the bounds and
// their proofs are in screen.md next to this file). Every pair of a tile is
// first given a cheap score c by one of the cheap-score types (the float32
// blocked chain of the float64 protocol, or the exact int8 or int16 dot
// product of either protocol, screenint.go) with a proven bound |c − s| ≤ e; a
// comparison is decided from c only where the bound makes it certain
// (decide rules below, screen.md §5), and every undecided pair gets its
// exact score s by the one formula (exact.pairs). Every reported number is
// therefore that of exhaustive exact evaluation.

// screen is a cheap-score type as the driver uses it.
type screen[T working] interface {
	stats() ScreenStats
	// block prepares gallery block b in w.cheap (its working rows in
	// w.cheap.rows); false when the block holds values beyond the
	// screen's range: it is then scored exhaustively, which cannot differ.
	block(s *scorer[T], w *worker[T], b block) bool
	// subRows is the rows of one cheap tile of a block of n rows.
	subRows(n, qb int) int
	// queryTile is the query rows of one cheap tile.
	queryTile(qb int) int
	// sub prepares block rows [j0, j1); false: they are scored exactly.
	sub(w *worker[T], j0, j1 int) bool
	// tile writes the cheap scores of queries [q0, q1) against the prepared
	// rows [j0, j1) to out.
	tile(s *scorer[T], w *worker[T], q0, q1, j0, j1 int, out []float32)
	// bound is e' ≥ |c − s| for query q and the prepared rows, rounded up.
	bound(w *worker[T], q int) float64
	// chunk readies the screen for a chunk's pass.
	chunk(c *chunk[T])
	counters() *screenCounters
}

// screenCounters are what a screen did in one run.
type screenCounters struct {
	kind                string
	pairs, exact, tiles atomic.Int64
}

func (c *screenCounters) stats() ScreenStats {
	return ScreenStats{Pairs: c.pairs.Load(), Exact: c.exact.Load(), ExactTiles: c.tiles.Load(), Kind: c.kind}
}

// cheapState is one worker's screening buffers.
type cheapState[T working] struct {
	rows   rowCache[T] // the block's working rows, for verification
	g32    []float32   // float32 rows of the block (float32 cheap scores; the integer screens quantise them)
	out    []float32   // cheap scores of one tile
	need   []need      // pairs that need their exact score
	vals   []T
	qoff   []int32
	goff   []int32
	order  []int32
	start  []int32
	tmp    []T
	rg     float64    // float32 screen: the block's largest row norm bound
	sInt   wsInt      // integer screen buffers (screenint.go)
	post   postings   // sparse tiles: the block's postings (sparse.go)
	sparse sparseTile // sparse tiles: the block
}

// need is a pair that needs its exact score: chunk query i, block offset j,
// whether it may be the nearest negative and whether it is undecided for
// the counts.
type need struct {
	i, j  int32
	nn    bool
	undec bool
}

// chooseScreen picks the run's screen from the plan and, where screening
// costs something when it fails, from a measured sample of the chunk
// (samplePays). nil: exhaustive tiles.
func (s *scorer[T]) chooseScreen(ctx context.Context, c *chunk[T]) screen[T] {
	force := s.pl.screens.force
	if !s.pl.screens.allowed || force == "" && c.most > manyThresholds {
		// With many positives per query (label relevance) their scores are
		// dense: placing a cheap score costs what placing an exact one does,
		// and many stay undecided.
		return nil
	}
	pairs := int64(s.qhi-s.qlo) * int64(s.pl.rows.len())
	var f32 *screen32[T]
	if s.pl.prec == Float64 {
		f32 = newScreen32(s)
	}
	// The int8 screen first (the cheaper tile, the wider bound), then the
	// int16 one, each where the plan admits it and its sample pays; both
	// samples reuse one sample worker's buffers.
	smp := &screenSample[T]{}
	for _, f := range []intFormat{int8Format, int16Format} {
		if s.pl.intFits(f, pairs) {
			if st := newScreenInt[T](ctx, s, c, f32, f, smp); st != nil {
				return st
			}
		}
	}
	if f32 == nil {
		return nil
	}
	return f32
}

// screenedBlock scores block b against the chunk's queries through the
// screen: cheap tiles, decisions, and the exact scores of the undecided
// pairs.
func (s *scorer[T]) screenedBlock(ctx context.Context, w *worker[T], c *chunk[T], b block, qb int) error {
	st, cs := s.screen, &w.cheap
	cnt := st.counters()
	if !st.block(s, w, b) {
		cnt.tiles.Add(1)
		g := cs.rows.span(0, b.n)
		for q0 := c.q0; q0 < c.q1; q0 += qb {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.exactTile(w, c, b, g, q0, min(q0+qb, c.q1), -1); err != nil {
				return err
			}
		}
		return nil
	}
	qb = st.queryTile(qb)
	sub := st.subRows(b.n, qb)
	cs.need = cs.need[:0]
	for j0 := 0; j0 < b.n; j0 += sub {
		if err := ctx.Err(); err != nil {
			return err
		}
		j1 := min(j0+sub, b.n)
		sb := b.sub(j0, j1)
		sn := j1 - j0
		t0 := time.Now()
		ok := st.sub(w, j0, j1)
		w.fold += time.Since(t0)
		cls := s.blockClass(sb)
		for q0 := c.q0; q0 < c.q1; q0 += qb {
			q1 := min(q0+qb, c.q1)
			qn := q1 - q0
			s.meter.add(int64(qn) * int64(sn))
			if cls >= 0 && s.tileWithoutNegatives(q0, q1, cls) {
				if err := s.checkExcluded(w, sb, cs.rows.span(j0, j1), q0, q1); err != nil {
					return err
				}
				continue
			}
			cnt.pairs.Add(int64(qn * sn))
			if !ok { // the rows could not be prepared: exact, in the exhaustive order
				for q := q0; q < q1; q++ {
					if err := s.exactRow(w, c, q, sb, j0); err != nil {
						return err
					}
				}
				continue
			}
			out := growTo(cs.out, qn*sn)
			cs.out = out
			t0 := time.Now()
			st.tile(s, w, q0, q1, j0, j1, out)
			t1 := time.Now()
			w.kernel += t1.Sub(t0)
			for a := range qn {
				q := q0 + a
				if !s.screenRow(w, c, q-c.q0, sb, j0, out[a*sn:(a+1)*sn], st.bound(w, q)) {
					// A non-finite cheap score: the row is scored exactly.
					if err := s.exactRow(w, c, q, sb, j0); err != nil {
						return err
					}
				}
			}
			if len(cs.need) >= s.verifyBatch() {
				if err := s.verify(w, c, b); err != nil {
					return err
				}
			}
			w.fold += time.Since(t1)
		}
	}
	t0 := time.Now()
	err := s.verify(w, c, b)
	w.fold += time.Since(t0)
	return err
}

// finite32 reports whether every value of a few is finite.
func finite32(v []float32) bool {
	for _, x := range v {
		if x-x != 0 {
			return false
		}
	}
	return true
}

// verifyBatch is the list length at which a block's listed pairs are
// verified before its end: float32 rows are verified tile by tile (the
// nearest negatives stay fresh), float64 rows in long lists grouped by
// query (kernel.Dot64PairsQuery scores a query's pairs together).
func (s *scorer[T]) verifyBatch() int {
	if s.pl.prec == Float32 {
		return 1
	}
	return s.pl.verify
}

// exactRow scores query q against the sub-block sb (block offset j0) by the
// exact kernels and folds the row.
func (s *scorer[T]) exactRow(w *worker[T], c *chunk[T], q int, sb block, j0 int) error {
	cs := &w.cheap
	cs.tmp = growTo(cs.tmp, sb.n)
	s.ex.block(s.qrow(q), 1, cs.rows.span(j0, j0+sb.n), sb.n, cs.tmp)
	s.screen.counters().exact.Add(int64(sb.n))
	if !allFinite(cs.tmp) {
		return errNonFinite
	}
	s.foldRow(w, c, q-c.q0, sb, cs.tmp)
	return nil
}

// screenRow applies the decision rules of screen.md §5 to query c.q0+i's
// cheap scores over sub-block sb (block offset j0), bound e: decided
// negatives are counted, the others listed in w.cheap.need. It reports
// false, and changes nothing, when a cheap score of the row is not finite.
func (s *scorer[T]) screenRow(w *worker[T], c *chunk[T], i int, sb block, j0 int, row []float32, e float64) bool {
	w.runs = s.rel.runs(c.q0+i, sb, w.runs[:0], nil)
	// Every cheap score of the row must be finite: the runs' by their
	// maximum pass, the special entries between them one by one.
	maxC, prev := float32(math.Inf(-1)), 0
	for _, r := range w.runs {
		m, finite := kernel.MaxFinite32(row[r[0]:r[1]])
		if !finite || !finite32(row[prev:r[0]]) {
			return false
		}
		if m > maxC {
			maxC = m
		}
		prev = int(r[1])
	}
	if !finite32(row[prev:]) {
		return false
	}
	if len(w.runs) == 0 {
		return true // positives and excluded pairs only: exact scores known or not needed
	}
	cs := &w.cheap
	th := &c.th[i]
	p := len(th.score)
	last := p - 1
	cnt := w.cnt[c.off[i] : c.off[i]+p+1]
	// Nearest-negative candidates: the exact maximiser has c ≥ max c − 2e,
	// and only a negative with s > best (the nearest negative so far)
	// changes it, which needs c > best − e.
	nthr := down(float64(maxC) - 2*e)
	if w.hasBest[i] {
		nthr = max(nthr, down(w.best[i]-e))
	}
	nthr32 := down32(nthr)
	w.hits = growTo(w.hits, len(row))
	list := cs.need
	// One vector scan counts the candidates certainly above every positive
	// (slot 0) and lists those between the lowest and the highest positive
	// and the nearest-negative candidates; each listed one is placed by a
	// search when no positive's score lies within its bound, else it is
	// undecided.
	skip := down32(down(float64(th.score[last]) - e))
	top := up32(up(float64(th.score[0]) + e))
	for _, run := range w.runs {
		j := int(run[0])
		seg := row[j:run[1]]
		first, hits := kernel.Scan32(seg, kernel.Cut{Above: top, Lo: skip, Hi: top, High: nthr32}, w.hits)
		cnt[0] += int32(first)
		for _, k := range hits {
			x := seg[k]
			nd := need{i: int32(i), j: int32(j0+j) + k}
			nd.nn = x >= nthr32 && float64(x) >= nthr
			if x >= skip && x <= top {
				cf := float64(x)
				if slot, ok := th.decideSlot(down(cf-e), up(cf+e)); ok {
					cnt[slot]++ // slot p: precedes no positive
				} else {
					nd.undec = true
				}
			}
			if nd.nn || nd.undec {
				list = append(list, nd)
			}
		}
	}
	cs.need = list
	return true
}

// verify scores the listed pairs of block b exactly and applies their
// decisions: an undecided pair takes the slot of its exact score; a
// nearest-negative candidate raises the nearest negative.
func (s *scorer[T]) verify(w *worker[T], c *chunk[T], b block) error {
	cs := &w.cheap
	need := cs.need
	if len(need) == 0 {
		return nil
	}
	s.screen.counters().exact.Add(int64(len(need)))
	cs.vals = growTo(cs.vals, len(need))
	d := s.d
	if s.pl.prec == Float32 {
		// Pairs of many queries in one call.
		cs.qoff, cs.goff = growTo(cs.qoff, len(need)), growTo(cs.goff, len(need))
		for k, nd := range need {
			cs.qoff[k] = int32(c.q0+int(nd.i)-s.qlo) * int32(d)
			cs.goff[k] = nd.j * int32(d)
		}
		s.ex.pairs(s.q, cs.qoff, cs.rows.span(0, b.n), cs.goff, cs.vals)
	} else {
		s.verifyByQuery(w, c)
	}
	for k, nd := range need {
		i := int(nd.i)
		v := cs.vals[k] + 0 // −0 → +0
		if nd.nn && (!w.hasBest[i] || float64(v) > w.best[i]) {
			w.best[i], w.hasBest[i] = float64(v), true
		}
		if nd.undec {
			th := &c.th[i]
			w.cnt[c.off[i]+th.firstPreceded(v, b.global(int(nd.j)))]++
		}
	}
	cs.need = need[:0]
	return nil
}

// verifyByQuery scores the listed pairs of a float64 block grouped by query
// (a counting sort), each query's by one kernel.Dot64PairsQuery call: the
// bits of kernel.DotRow64, so of the exhaustive path.
func (s *scorer[T]) verifyByQuery(w *worker[T], c *chunk[T]) {
	cs := &w.cheap
	need, d := cs.need, s.d
	for _, nd := range need { // produce the rows first: the cache may move while it grows
		cs.rows.row(int(nd.j))
	}
	base := cs.rows.pairBase()
	nq := c.q1 - c.q0
	cs.start = growTo(cs.start, nq+1)
	start := cs.start
	clear(start)
	for _, nd := range need {
		start[nd.i+1]++
	}
	for i := range nq {
		start[i+1] += start[i]
	}
	cs.order, cs.goff, cs.tmp = growTo(cs.order, len(need)), growTo(cs.goff, len(need)), growTo(cs.tmp, len(need))
	for k, nd := range need {
		at := start[nd.i]
		cs.order[at], cs.goff[at] = int32(k), int32(cs.rows.pairOffset(int(nd.j)))
		start[nd.i]++
	}
	lo := int32(0)
	qoff := []int32{0}
	for i := range nq {
		hi := start[i]
		if hi > lo {
			qoff[0] = int32(c.q0+i-s.qlo) * int32(d)
			s.ex.pairs(s.q, qoff, base, cs.goff[lo:hi], cs.tmp[lo:hi])
		}
		lo = hi
	}
	for at, k := range cs.order[:len(need)] {
		cs.vals[k] = cs.tmp[at]
	}
}

// The float32 screen of the float64 protocol: c = the blocked float32 chain
// (kernel.DotBlocked32) over the float32 roundings of the working rows.

// manyThresholds is the most positives per query of a run the plan
// screens (unless a screen is forced).
const manyThresholds = 8

type screen32[T working] struct {
	screenCounters
	q32      []float32 // float32 rounding of the float64 working query rows
	rq       []float64 // per query: an upper bound of the working row's 2-norm
	k, sd    float64   // K(d) and 2⁻¹⁴⁸·√d of the bound
	tau      float64   // (4d+16)·2⁻¹⁴⁹
	scale    float64
	qlo      int
	rowBytes int
}

// newScreen32 prepares the float32 screen of a float64-protocol run.
func newScreen32[T working](s *scorer[T]) *screen32[T] {
	d := s.d
	n := s.qhi - s.qlo
	st := &screen32[T]{q32: make([]float32, n*d), rq: make([]float64, n), scale: s.pl.scale, qlo: s.qlo, rowBytes: 16 << 20}
	st.kind = "float32"
	st.k = gamma(blockedRoundings(d), u32)*(1+u32)*(1+u32) + 2*u32 + u32*u32 + gamma(d, u64)
	st.sd = 0x1p-148 * math.Sqrt(float64(d)) * (1 + 0x1p-40)
	st.tau = float64(4*d+16) * 0x1p-149
	q := any(s.q).([]float64)
	// A query value beyond float32 makes its cheap scores non-finite, and
	// its rows take the exact path (screenRow).
	for i := range n {
		st.rq[i], _ = convertNormBound(q[i*d:(i+1)*d], st.q32[i*d:(i+1)*d])
	}
	return st
}

func (st *screen32[T]) counters() *screenCounters { return &st.screenCounters }

func (st *screen32[T]) stats() ScreenStats { return st.screenCounters.stats() }

func (st *screen32[T]) queryTile(qb int) int { return qb }

// subRows: one pass of cheap scores is at most rowBytes; the scans stream
// it, so it need not fit a cache, and larger sub-blocks pack the queries
// less often.
func (st *screen32[T]) subRows(n, qb int) int { return max(64, min(n, st.rowBytes/(4*qb))) }

// block rounds the block's float64 working rows to float32, bounding their
// norms on the way; the float64 rows themselves are produced again only
// for the few verified pairs (rowCache).
func (st *screen32[T]) block(s *scorer[T], w *worker[T], b block) bool {
	cs, d := &w.cheap, s.d
	cs.rows.reset(s.g, b, true)
	cs.g32 = growTo(cs.g32, b.n*d)
	w.tmp = growTo(w.tmp, d)
	fits, rg := true, 0.0
	for j := range b.n {
		var r float64
		var f bool
		if y := cs.rows.stored(j); y != nil {
			r, f = convertNormBound(any(y).([]float64), cs.g32[j*d:(j+1)*d])
		} else {
			s.g.row64(b.global(j), w.tmp)
			r, f = convertNormBound(w.tmp, cs.g32[j*d:(j+1)*d])
		}
		rg, fits = max(rg, r), fits && f
	}
	cs.rg = rg
	return fits
}

func (st *screen32[T]) sub(w *worker[T], j0, j1 int) bool { return true }

func (st *screen32[T]) chunk(c *chunk[T]) {}

func (st *screen32[T]) tile(s *scorer[T], w *worker[T], q0, q1, j0, j1 int, out []float32) {
	d := s.d
	kernel.DotBlocked32(st.q32[(q0-st.qlo)*d:(q1-st.qlo)*d], q1-q0, w.cheap.g32[j0*d:j1*d], j1-j0, d, out)
}

// bound is e' ≥ |c − s| for query q and the block (screen.md §4).
func (st *screen32[T]) bound(w *worker[T], q int) float64 {
	rq, rg := st.rq[q-st.qlo], w.cheap.rg
	e := st.k*rq*rg + st.sd*(rq+rg) + st.tau
	return math.Nextafter(e*(1+0x1p-40), math.Inf(1)) * st.scale
}

const (
	u32 = 0x1p-24 // float32 unit roundoff
	u64 = 0x1p-53 // float64 unit roundoff
)

func gamma(n int, u float64) float64 { return float64(n) * u / (1 - float64(n)*u) }

// blockedRoundings is the most float32 roundings one product meets in
// kernel.DotBlocked32 of width d ≥ 1: the rest of its chunk's chain and
// the additions of chunk totals, of which the first (to +0) is exact
// (screen.md §6).
func blockedRoundings(d int) int {
	b := kernel.ScreenChunk
	return min(d, b) + (d+b-1)/b - 1
}

// convertNormBound writes the float32 rounding of y to y32, reports
// whether every rounded value is finite, and returns an upper bound
// R ≥ ‖y‖₂ of the float64 row (screen.md §2): the sum of squares of
// kernel.ConvertNorm64 gives every term at most d + 32 roundings, so
// ‖y‖² ≤ acc·(1 + γ_{2d+66}(u)) + 2⁻¹⁰⁰⁰; evaluating that and its square
// root rounds at most six times, which the factor 1 + 2⁻⁵⁰ covers.
func convertNormBound(y []float64, y32 []float32) (float64, bool) {
	acc, fits := kernel.ConvertNorm64(y, y32)
	return math.Sqrt(acc*(1+gamma(2*len(y)+66, u64))+0x1p-1000) * (1 + 0x1p-50), fits
}

// down and up are the neighbours of x below and above it (math.Nextafter
// toward ∓Inf, without its general cases: x is not NaN).
func down(x float64) float64 {
	switch {
	case x == 0:
		return -0x1p-1074
	case math.IsInf(x, -1):
		return x
	case x > 0: // +Inf included: its bits less one are math.MaxFloat64
		return math.Float64frombits(math.Float64bits(x) - 1)
	}
	return math.Float64frombits(math.Float64bits(x) + 1)
}

func up(x float64) float64 { return -down(-x) }

// down32 and up32 round a float64 to a float32 below / above it.
func down32(x float64) float32 {
	f := float32(x)
	if float64(f) > x {
		f = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	return f
}

func up32(x float64) float32 {
	f := float32(x)
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// screenSample is the sample of a run's screen choice: up to 4096 gallery
// rows spread over the pass, and a worker whose buffers every integer
// screen sampled reuses.
type screenSample[T working] struct {
	w *worker[T]
	b block
}

// samplePays scores the chunk's first queries (at most 24) cheaply against
// up to 4096 gallery rows spread over the pass and reports whether the
// share of their negatives the rules leave undecided is at most limit.
// The sample is prepared one sub-block at a time, so its buffers stay
// small (fresh memory costs a page fault per 4 KiB, which on some virtual
// machines took longer than the sample itself). smp carries them across
// the screens tried (nil: a fresh one).
func samplePays[T working](s *scorer[T], st screen[T], c *chunk[T], limit float64, smp *screenSample[T]) bool {
	if smp == nil {
		smp = &screenSample[T]{}
	}
	if smp.w == nil {
		n := s.pl.rows.len()
		step := max(1, (n+4095)/4096)
		smp.b = block{p0: 0, n: (n + step - 1) / step, g0: s.pl.rows.lo, stride: s.pl.rows.stride * step}
		smp.w = &worker[T]{tmp: make([]float64, s.d)}
	}
	w, sb := smp.w, smp.b
	q0, q1 := c.q0, min(c.q1, c.q0+2*kernel.Int16QueryTile)
	sub := st.subRows(sb.n, q1-q0)
	var und, total int64
	for j0 := 0; j0 < sb.n; j0 += sub {
		j1 := min(j0+sub, sb.n)
		piece := sb.sub(j0, j1)
		if !st.block(s, w, piece) {
			return false // values beyond the screen's range: its blocks would be scored exhaustively
		}
		sn := j1 - j0
		if !st.sub(w, 0, sn) {
			return false
		}
		out := make([]float32, (q1-q0)*sn)
		st.tile(s, w, q0, q1, 0, sn, out)
		for q := q0; q < q1; q++ {
			if !c.neg[q-c.q0] {
				continue
			}
			e := st.bound(w, q)
			th := &c.th[q-c.q0]
			row := out[(q-q0)*sn : (q-q0+1)*sn]
			for _, r := range s.rel.runs(q, piece, nil, nil) {
				for _, x := range row[r[0]:r[1]] {
					total++
					cf := float64(x)
					if _, ok := th.decideSlot(down(cf-e), up(cf+e)); !ok {
						und++
					}
				}
			}
		}
	}
	return float64(und) <= limit*float64(max(1, total))
}
