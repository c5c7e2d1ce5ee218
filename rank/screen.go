package rank

import (
	"math"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/vertebrae-eval/vertebrae/kernel"
)

// Screened exact scoring (SPEC §4.2 "Screened evaluation"; the bound and
// its proof are in screen.md next to this file). Under the float64
// protocol with dot or cosine, every pair is first scored cheaply in
// float32 (c); a comparison is decided from c only where the proven bound
// |c − s| ≤ e makes it certain, and every undecided pair gets its exact
// score s by the one formula (kernel.DotRow64, bit-identical to the block
// kernels). Every reported number is therefore that of exhaustive exact
// evaluation; only the amount of float64 work changes.
//
// Not screened (exact path as before): squared_l2 (its bound is relative to
// ‖q‖² + ‖g‖², useless for near neighbours), the float32 protocol, sparse
// endpoints, label classes (their own pass), run exports (TopN or
// FullRanking need exact scores for every kept candidate), and widths of
// 2²² or more.

// screenBoundScale multiplies every bound; tests shrink it to show that the
// bit-identity tests catch an unsafe bound.
var screenBoundScale = 1.0

// ScreenDisabledByEnv reports whether VERTEBRAE_SCREEN=off asks for the
// exhaustive exact path.
func ScreenDisabledByEnv() bool { return os.Getenv("VERTEBRAE_SCREEN") == "off" }

const (
	u32 = 0x1p-24 // float32 unit roundoff
	u64 = 0x1p-53 // float64 unit roundoff
)

func gamma(n int, u float64) float64 { return float64(n) * u / (1 - float64(n)*u) }

// screenState is what screening needs beyond the exact path.
type screenState struct {
	q32     []float32 // float32 rounding of the float64 working query values
	rq      []float64 // per query: an upper bound of the working row's 2-norm
	k, sd   float64   // K(d) and 2⁻¹⁴⁸·√d of the bound
	tau     float64   // (4d+16)·2⁻¹⁴⁹
	pairs   atomic.Int64
	exact   atomic.Int64 // undecided pairs scored exactly
	blocks  atomic.Int64 // gallery blocks rescored exactly (values beyond float32)
	skipped atomic.Int64
}

// newScreen prepares screening, or returns nil when it does not apply.
func (s *scorer) newScreen() *screenState {
	o := s.o
	if o.Exhaustive || ScreenDisabledByEnv() || o.Precision != Float64 || o.Similarity == SquaredL2 || s.sparse ||
		s.p.Classes != nil || o.TopN > 0 || o.FullRanking || s.q64 == nil || s.d >= 1<<22 {
		return nil
	}
	d := s.d
	st := &screenState{q32: make([]float32, len(s.q64)), rq: make([]float64, s.nq)}
	st.setBound(d)
	// A query value beyond float32 makes its cheap scores non-finite, and
	// its rows take the exact path (screenedRow).
	for q := range s.nq {
		st.rq[q], _ = convertNormBound(s.q64[q*d:(q+1)*d], st.q32[q*d:(q+1)*d])
	}
	return st
}

// blockedRoundings is the most float32 roundings one product meets in
// kernel.DotBlocked32 of width d ≥ 1: the rest of its chunk's chain and
// the additions of chunk totals, of which the first (to +0) is exact
// (screen.md §6).
func blockedRoundings(d int) int {
	b := kernel.ScreenChunk
	return min(d, b) + (d+b-1)/b - 1
}

// setBound sets the constants of the bound for width d (screen.md §4). The
// cheap score is kernel.DotBlocked32: every product meets at most
// min(d, B) + ⌈d/B⌉ − 1 float32 roundings (screen.md §6).
func (st *screenState) setBound(d int) {
	st.k = gamma(blockedRoundings(d), u32)*(1+u32)*(1+u32) + 2*u32 + u32*u32 + gamma(d, u64)
	st.sd = 0x1p-148 * math.Sqrt(float64(d)) * (1 + 0x1p-40)
	st.tau = float64(4*d+16) * 0x1p-149
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

// bound is e' ≥ |c − s| for every pair of query q and a gallery block whose
// row bounds are at most rg, rounded outward (screen.md §4).
func (st *screenState) bound(rq, rg float64) float64 {
	e := st.k*rq*rg + st.sd*(rq+rg) + st.tau
	return math.Nextafter(e*(1+0x1p-40), math.Inf(1)) * screenBoundScale
}

func down(x float64) float64 { return math.Nextafter(x, math.Inf(-1)) }
func up(x float64) float64   { return math.Nextafter(x, math.Inf(1)) }

// ScreenStats is what screening did in one run.
type ScreenStats struct {
	Pairs      int64  // pairs screened in float32
	Exact      int64  // undecided pairs scored exactly in float64
	ExactTiles int64  // gallery blocks rescored exactly (values beyond float32)
	Kind       string // the screen that ran: "float32" (screen.go) or "int16" (screen16.go, screen16_64.go)
}

// screenRowBytes bounds one pass of cheap scores (query block × gallery
// sub-block); the scans stream it, so it need not fit a cache, and larger
// sub-blocks pack the queries less often.
var screenRowBytes = 16 << 20 // a variable for tests

// screenedBlock is denseBlock for screened float64 scoring.
func (s *scorer) screenedBlock(w *workspace, g0, g1, qb int, checkCtx func() error) error {
	st := s.screen
	d, gn := s.d, g1-g0
	w.g32 = growTo(w.g32, gn*d)
	g32 := w.g32[:gn*d]
	rows := &w.rows64
	rows.reset(s.g, g0, gn)
	// One pass over the block (often straight from memory): the float32
	// rounding, whether it fits float32, and the largest row norm bound.
	// The float64 working rows are not kept (screenrows.go).
	fits, rg := true, 0.0
	w.tmp = growTo(w.tmp, d)
	for j := range gn {
		var r float64
		var f bool
		if rows.direct != nil {
			r, f = convertNormBound(rows.direct[j*d:(j+1)*d], g32[j*d:(j+1)*d])
		} else {
			r, f = s.g.screenRow(g0+j, w.tmp, g32[j*d:(j+1)*d])
		}
		rg, fits = max(rg, r), fits && f
	}
	if !fits { // values beyond float32: this block is scored exactly
		st.blocks.Add(1)
		return exactBlock(s, w, g0, g1, qb, s.q64, rows.span(0, gn), &w.s64, kernel.Dot64, checkCtx)
	}
	sub := max(64, min(gn, screenRowBytes/(4*qb)))
	w.s32 = growTo(w.s32, qb*sub)
	for q0 := 0; q0 < s.nq; q0 += qb {
		if err := checkCtx(); err != nil {
			return err
		}
		q1 := min(q0+qb, s.nq)
		qn := q1 - q0
		for j0 := 0; j0 < gn; j0 += sub {
			j1 := min(j0+sub, gn)
			sn := j1 - j0
			out := w.s32[:qn*sn]
			t0 := time.Now()
			kernel.DotBlocked32(st.q32[q0*d:q1*d], qn, g32[j0*d:j1*d], sn, d, out)
			t1 := time.Now()
			w.kernel += t1.Sub(t0)
			for i := range qn {
				q := q0 + i
				if err := s.screenedRow(w, q, g0+j0, out[i*sn:(i+1)*sn], rows, j0, st.bound(st.rq[q], rg)); err != nil {
					return err
				}
			}
			w.fold += time.Since(t1)
		}
		st.pairs.Add(int64(qn * gn))
		s.meter.add(int64(qn) * int64(gn))
	}
	return nil
}

// exactBlock is the exhaustive path of a screened run for one gallery
// block (values beyond the screen's range): every query block is scored by
// dot (kernel.Dot64 or kernel.Dot32) into buf and folded as in denseBlock.
func exactBlock[T float32 | float64](s *scorer, w *workspace, g0, g1, qb int, q, g []T, buf *[]T,
	dot func(q []T, qn int, g []T, gn, d int, out []T), checkCtx func() error) error {
	gn := g1 - g0
	*buf = growTo(*buf, qb*gn)
	for q0 := 0; q0 < s.nq; q0 += qb {
		if err := checkCtx(); err != nil {
			return err
		}
		q1 := min(q0+qb, s.nq)
		qn := q1 - q0
		out := (*buf)[:qn*gn]
		t0 := time.Now()
		dot(q[q0*s.d:q1*s.d], qn, g, gn, s.d, out)
		t1 := time.Now()
		w.kernel += t1.Sub(t0)
		for i := range qn {
			if err := consume(s, w.part, q0+i, g0, out[i*gn:(i+1)*gn]); err != nil {
				return err
			}
		}
		w.fold += time.Since(t1)
		s.meter.add(int64(qn) * int64(gn))
	}
	return nil
}

// screenedRow folds one query's cheap scores over gallery rows g0… into its
// partial result with the decision rules of screen.md §5; e is the padded
// bound of every pair of the row. The float64 working rows come from rows,
// whose row j0 is gallery row g0. Two vector passes do the work: the
// maximum cheap score of the ordinary negatives (with the finiteness of
// every score), then one scan that counts the candidates certainly ahead of
// the first positive and lists the few that are undecided or may be the
// nearest negative.
func (s *scorer) screenedRow(w *workspace, q, g0 int, row []float32, rows *blockRows64, j0 int, e float64) error {
	st, qi, part, d := s.screen, &s.qs[q], w.part, s.d
	exactRow := func() error { // an overflowing cheap score: this row is scored exactly
		w.s64 = growTo(w.s64, len(row))
		exact := w.s64[:len(row)]
		kernel.Dot64(s.q64[q*d:(q+1)*d], 1, rows.span(j0, j0+len(row)), len(row), d, exact)
		st.exact.Add(int64(len(row)))
		return consume(s, part, q, g0, exact)
	}
	// The runs of ordinary negatives between the special entries of this row.
	runs, maxC, finite := negativeRuns(qi, g0, row, w.runs[:0])
	w.runs = runs
	if !finite {
		return exactRow()
	}
	qrow := s.q64[q*d : (q+1)*d]
	exactAt := func(j int) float64 {
		st.exact.Add(1)
		return kernel.DotRow64(qrow, rows.row(j0+j)) + 0 // −0 → +0
	}
	last := len(qi.ordScore) - 1
	lastScore, lastIndex := qi.ordScore[last], qi.ordIndex[last]
	beaten := part.beaten[qi.off : qi.off+len(qi.pos)+1]
	// Per positive r (rank order): c > above[r] ⇒ s > s_r (the candidate
	// precedes it); c < below[r] ⇒ s < s_r (it does not). Both are rounded
	// outward, so each implication holds for the real numbers (screen.md §5).
	w.above, w.below = growTo(w.above, last+1), growTo(w.below, last+1)
	above, below := w.above, w.below
	for r, sr := range qi.ordScore {
		above[r], below[r] = up(sr+e), down(sr-e)
	}
	// The scan compares float32 values with float32 cut points rounded
	// outward, which only moves borderline values into the listed ones.
	skip, top := down32(below[last]), up32(above[0]) // below skip: precedes no positive
	// Nearest-negative candidates: the exact maximiser has c ≥ max c − 2e,
	// and only a negative with s > best (the exact nearest negative so far)
	// changes it, which needs c > best − e.
	best, hasBest := part.best[q], part.hasBest[q]
	nthr := down(float64(maxC) - 2*e)
	if hasBest {
		nthr = max(nthr, down(best-e))
	}
	nthr32 := down32(nthr)
	w.hits = growTo(w.hits, len(row))
	if last < screenSlotScans {
		best, hasBest = s.screenedSlots(w, q, g0, row, e, nthr, nthr32, best, hasBest, exactAt)
	} else {
		for _, run := range runs {
			j := int(run[0])
			seg := row[j:run[1]]
			first, hits := kernel.Scan32(seg, kernel.Cut{Above: top, Lo: skip, Hi: top, High: nthr32}, w.hits)
			beaten[0] += first
			for _, k := range hits {
				x := seg[k]
				jj := j + int(k)
				if x >= nthr32 && float64(x) >= nthr {
					if v := exactAt(jj); !hasBest || v > best {
						best, hasBest = v, true
					}
				}
				if x < skip || x > top {
					continue
				}
				c := float64(x)
				// The first positive the candidate certainly precedes; it
				// is the exact slot when the candidate certainly does not
				// precede the one before it.
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
				if r <= last && (r == 0 || c < below[r-1]) {
					beaten[r]++
					continue
				}
				if r == last+1 && c < below[last] {
					continue // below every positive (in the float32 rounding margin of skip)
				}
				v := exactAt(jj)
				if g := g0 + jj; precedes(v, g, lastScore, lastIndex) {
					beaten[rankSlot(qi, v, g)]++
				}
			}
		}
	}
	part.best[q], part.hasBest[q] = best, hasBest
	// Excluded candidates never count (their exact score is finite:
	// |s| ≤ |c| + e).
	countPositives(qi, g0, len(row), beaten)
	return nil
}

// screenSlotScans is the most positives per query for which screenedSlots
// scans a run once per positive; beyond it one scan lists every candidate
// between the lowest and the highest positive and a binary search places
// each (screenedRow).
const screenSlotScans = 8

// screenedSlots counts the runs of ordinary negatives of one row (w.runs)
// for a query with few positives: one vector scan per positive r counts
// A_r = #{c > above_r} (certainly ahead of r) and lists the band
// [below_r, above_r] (undecided for r; the scan of r = 0 also lists the
// nearest-negative candidates, c ≥ nthr). A decided candidate is ahead of
// exactly the positives r with c > above_r, a suffix since above_r does not
// increase, so slot r holds A_r − A_{r−1} of them. Each undecided candidate
// (handled in the first band that lists it) is taken out of the slot the
// counts gave it and placed by its exact score (screen.md §5).
func (s *scorer) screenedSlots(w *workspace, q, g0 int, row []float32, e, nthr float64, nthr32 float32,
	best float64, hasBest bool, exactAt func(int) float64) (float64, bool) {
	qi, part := &s.qs[q], w.part
	last := len(qi.ordScore) - 1
	lastScore, lastIndex := qi.ordScore[last], qi.ordIndex[last]
	beaten := part.beaten[qi.off : qi.off+len(qi.pos)+1]
	var hi, lo [screenSlotScans]float32
	var count [screenSlotScans]int
	for r := 0; r <= last; r++ {
		hi[r], lo[r] = up32(w.above[r]), down32(w.below[r])
	}
	inf := float32(math.Inf(1))
	for _, run := range w.runs {
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
				x := seg[k]
				jj := j + int(k)
				if r == 0 && x >= nthr32 && float64(x) >= nthr {
					if v := exactAt(jj); !hasBest || v > best {
						best, hasBest = v, true
					}
				}
				if x < lo[r] || x > hi[r] {
					continue
				}
				earlier := false
				for rr := range r {
					earlier = earlier || x >= lo[rr] && x <= hi[rr]
				}
				if earlier {
					continue
				}
				// The counts put the candidate in the first slot whose
				// threshold it exceeds (none: it precedes no positive).
				cheap := r + 1
				for cheap <= last && !(x > hi[cheap]) {
					cheap++
				}
				if cheap <= last {
					beaten[cheap]--
				}
				v := exactAt(jj)
				if g := g0 + jj; precedes(v, g, lastScore, lastIndex) {
					beaten[rankSlot(qi, v, g)]++
				}
			}
		}
	}
	prev := 0
	for r := 0; r <= last; r++ {
		beaten[r] += count[r] - prev
		prev = count[r]
	}
	return best, hasBest
}

// rankSlot is the first rank slot of query qi's positives that (v, g)
// precedes (it precedes the last one).
func rankSlot(qi *queryInfo, v float64, g int) int {
	lo, hi := 0, len(qi.ordScore)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if precedes(v, g, qi.ordScore[mid], qi.ordIndex[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

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

// negativeRuns splits a query's row of cheap scores over gallery rows g0…
// into the runs [j, end) of ordinary negatives between its special entries
// (excluded candidates and positives), appending them to runs. It returns
// the largest cheap score of those runs and whether every score of the row,
// the special entries' included, is finite.
func negativeRuns(qi *queryInfo, g0 int, row []float32, runs [][2]int32) ([][2]int32, float32, bool) {
	exPtr := sort.SearchInts(qi.excl, g0)
	posPtr := sort.Search(len(qi.pos), func(k int) bool { return qi.pos[k].Index >= g0 })
	maxC, finite := float32(math.Inf(-1)), true
	for j, ex, po := 0, exPtr, posPtr; j < len(row); {
		end := len(row)
		if ex < len(qi.excl) {
			end = min(end, qi.excl[ex]-g0)
		}
		if po < len(qi.pos) {
			end = min(end, qi.pos[po].Index-g0)
		}
		if j < end {
			m, f := kernel.MaxFinite32(row[j:end])
			maxC, finite = max(maxC, m), finite && f
			runs = append(runs, [2]int32{int32(j), int32(end)})
		}
		if end == len(row) {
			break
		}
		x := row[end]
		finite = finite && x-x == 0
		g := g0 + end
		if ex < len(qi.excl) && qi.excl[ex] == g {
			ex++
		}
		if po < len(qi.pos) && qi.pos[po].Index == g {
			po++
		}
		j = end + 1
	}
	return runs, maxC, finite
}

// countPositives counts the query's positives among gallery rows
// [g0, g0+n) like any candidate, since their exact scores are known:
// each that precedes the last positive adds to the slot of its rank.
func countPositives(qi *queryInfo, g0, n int, beaten []int) {
	last := len(qi.ordScore) - 1
	lastScore, lastIndex := qi.ordScore[last], qi.ordIndex[last]
	po := sort.Search(len(qi.pos), func(k int) bool { return qi.pos[k].Index >= g0 })
	for ; po < len(qi.pos) && qi.pos[po].Index < g0+n; po++ {
		g := qi.pos[po].Index
		if ex := sort.SearchInts(qi.excl, g); ex < len(qi.excl) && qi.excl[ex] == g {
			continue
		}
		if v := qi.scores[po]; precedes(v, g, lastScore, lastIndex) {
			beaten[rankSlot(qi, v, g)]++
		}
	}
}
