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
	st.k = gamma(d, u32)*(1+u32)*(1+u32) + 2*u32 + u32*u32 + gamma(d, u64)
	st.sd = 0x1p-148 * math.Sqrt(float64(d)) * (1 + 0x1p-40)
	st.tau = float64(4*d+16) * 0x1p-149
	for i, v := range s.q64 {
		st.q32[i] = float32(v)
	}
	for q := range s.nq {
		st.rq[q] = normBound(s.q64[q*d : (q+1)*d])
	}
	return st
}

// normBound is an upper bound R ≥ ‖y‖₂ of a float64 row (screen.md §2):
// the FMA chain of y² has relative error ≤ γ_d(u) plus underflow, so
// ‖y‖² ≤ acc·(1 + γ_{2d+2}(u)) + 2⁻¹⁰⁰⁰; the final sqrt, sum and product
// round at most four times, which the factor 1 + 2⁻⁵⁰ covers.
func normBound(y []float64) float64 {
	var acc float64
	for _, v := range y {
		acc = math.FMA(v, v, acc)
	}
	return math.Sqrt(acc*(1+gamma(2*len(y)+2, u64))+0x1p-1000) * (1 + 0x1p-50)
}

// bound is e' ≥ |c − s| for every pair of query q and a gallery block whose
// row bounds are at most rg, rounded outward (screen.md §3).
func (st *screenState) bound(rq, rg float64) float64 {
	e := st.k*rq*rg + st.sd*(rq+rg) + st.tau
	return math.Nextafter(e*(1+0x1p-40), math.Inf(1)) * screenBoundScale
}

func down(x float64) float64 { return math.Nextafter(x, math.Inf(-1)) }
func up(x float64) float64   { return math.Nextafter(x, math.Inf(1)) }

// ScreenStats is what screening did in one run.
type ScreenStats struct {
	Pairs      int64 // pairs screened in float32
	Exact      int64 // undecided pairs scored exactly in float64
	ExactTiles int64 // gallery blocks rescored exactly (values beyond float32)
}

// screenedBlock is denseBlock for screened float64 scoring.
func (s *scorer) screenedBlock(w *workspace, g0, g1, qb int, checkCtx func() error) error {
	st := s.screen
	d, gn := s.d, g1-g0
	g64 := s.g.block64(g0, g1, w.g64)
	w.g32 = growTo(w.g32, gn*d)
	g32 := w.g32[:gn*d]
	fits := true
	for i, v := range g64 {
		g32[i] = float32(v)
		if math.IsInf(float64(g32[i]), 0) {
			fits = false
		}
	}
	if !fits { // values beyond float32: this block is scored exactly
		st.blocks.Add(1)
		return s.exactBlock64(w, g0, g1, qb, g64, checkCtx)
	}
	rg := 0.0
	for j := range gn {
		rg = max(rg, normBound(g64[j*d:(j+1)*d]))
	}
	w.s32 = growTo(w.s32, qb*gn)
	for q0 := 0; q0 < s.nq; q0 += qb {
		if err := checkCtx(); err != nil {
			return err
		}
		q1 := min(q0+qb, s.nq)
		qn := q1 - q0
		out := w.s32[:qn*gn]
		t0 := time.Now()
		kernel.Dot32(st.q32[q0*d:q1*d], qn, g32, gn, d, out)
		t1 := time.Now()
		w.kernel += t1.Sub(t0)
		for i := range qn {
			q := q0 + i
			if err := s.screenedRow(w, q, g0, out[i*gn:(i+1)*gn], g64, st.bound(st.rq[q], rg)); err != nil {
				return err
			}
		}
		w.fold += time.Since(t1)
		st.pairs.Add(int64(qn * gn))
		s.meter.add(int64(qn) * int64(gn))
	}
	return nil
}

// exactBlock64 is the exhaustive float64 path for one gallery block.
func (s *scorer) exactBlock64(w *workspace, g0, g1, qb int, g64 []float64, checkCtx func() error) error {
	gn := g1 - g0
	w.s64 = growTo(w.s64, qb*gn)
	for q0 := 0; q0 < s.nq; q0 += qb {
		if err := checkCtx(); err != nil {
			return err
		}
		q1 := min(q0+qb, s.nq)
		qn := q1 - q0
		out := w.s64[:qn*gn]
		t0 := time.Now()
		kernel.Dot64(s.q64[q0*s.d:q1*s.d], qn, g64, gn, s.d, out)
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
// partial result with the decision rules of screen.md §4; e is the padded
// bound of every pair of the row.
func (s *scorer) screenedRow(w *workspace, q, g0 int, row []float32, g64 []float64, e float64) error {
	st, qi, part, d := s.screen, &s.qs[q], w.part, s.d
	for _, x := range row {
		if x-x != 0 { // an overflowing cheap score: this row is scored exactly
			w.s64 = growTo(w.s64, len(row))
			exact := w.s64[:len(row)]
			kernel.Dot64(s.q64[q*d:(q+1)*d], 1, g64, len(row), d, exact)
			st.exact.Add(int64(len(row)))
			return consume(s, part, q, g0, exact)
		}
	}
	qrow := s.q64[q*d : (q+1)*d]
	exactAt := func(j int) float64 {
		st.exact.Add(1)
		return kernel.DotRow64(qrow, g64[j*d:(j+1)*d]) + 0 // −0 → +0
	}
	last := len(qi.ordScore) - 1
	lastScore, lastIndex := qi.ordScore[last], qi.ordIndex[last]
	beaten := part.beaten[qi.off : qi.off+len(qi.pos)+1]
	// Per positive r (rank order): c > above[r] ⇒ s > s_r (the candidate
	// precedes it); c < below[r] ⇒ s < s_r (it does not). Both are rounded
	// outward, so each implication holds for the real numbers (screen.md §4).
	w.above, w.below = growTo(w.above, last+1), growTo(w.below, last+1)
	above, below := w.above, w.below
	for r, sr := range qi.ordScore {
		above[r], below[r] = up(sr+e), down(sr-e)
	}
	skipBelow := below[last] // precedes no positive
	exPtr := sort.SearchInts(qi.excl, g0)
	posPtr := sort.Search(len(qi.pos), func(k int) bool { return qi.pos[k].Index >= g0 })
	// The run scan compares float32 values with float32 thresholds rounded
	// outward, which only moves borderline values into the undecided band.
	sc := screenCut{skip: down32(skipBelow), top: up32(above[0]), thr: float32(math.Inf(-1)), maxC: float32(math.Inf(-1)), e2: 2 * e}
	near := w.near[:0] // negatives that may be the nearest one
	w.hits = growTo(w.hits, len(row)+1)
	for j := 0; j < len(row); {
		// The run of ordinary negatives ends at the next special entry.
		end := len(row)
		if exPtr < len(qi.excl) {
			end = min(end, qi.excl[exPtr]-g0)
		}
		if posPtr < len(qi.pos) {
			end = min(end, qi.pos[posPtr].Index-g0)
		}
		if j < end {
			seg := row[j:end]
			var first int
			var hits []int32
			first, hits, near = sc.run(seg, int32(j), w.hits, near)
			beaten[0] += first
			for _, k := range hits {
				c := float64(seg[k])
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
				jj := j + int(k)
				v := exactAt(jj)
				if g := g0 + jj; precedes(v, g, lastScore, lastIndex) {
					beaten[rankSlot(qi, v, g)]++
				}
			}
		}
		if end == len(row) {
			break
		}
		g := g0 + end
		switch {
		case exPtr < len(qi.excl) && qi.excl[exPtr] == g:
			// Excluded: never counts; its exact score is finite (|s| ≤ |c| + e).
			exPtr++
			if posPtr < len(qi.pos) && qi.pos[posPtr].Index == g {
				posPtr++
			}
		default:
			// A positive's exact score is known: it counts like any candidate.
			v := qi.scores[posPtr]
			posPtr++
			if precedes(v, g, lastScore, lastIndex) {
				beaten[rankSlot(qi, v, g)]++
			}
		}
		j = end + 1
	}
	w.near = near
	if len(near) == 0 {
		return nil
	}
	// Nearest negative: the exact maximiser's cheap score is at least
	// (max c) − 2e; the running max only grew, so stale entries drop here.
	thr := down(float64(sc.maxC) - 2*e)
	best, hasBest := part.best[q], part.hasBest[q]
	for _, j := range near {
		if float64(row[j]) < thr {
			continue
		}
		if v := exactAt(int(j)); !hasBest || v > best {
			best, hasBest = v, true
		}
	}
	part.best[q], part.hasBest[q] = best, hasBest
	return nil
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

// screenCut holds one query row's float32 cut points: values below skip
// precede no positive, values above top certainly precede the first one,
// and values at or above thr may be the nearest negative (thr follows the
// running maximum maxC down by 2e, rounded down).
type screenCut struct {
	skip, top, thr, maxC float32
	e2                   float64
}

// run scans a run of ordinary negatives at row offset j0: it returns how
// many certainly precede the first positive, the offsets of those in
// [skip, top] (the only others that may precede a positive; written
// without branches into hits, which has room for len(seg)+1 entries), and
// near extended by the nearest-negative candidates.
func (c *screenCut) run(seg []float32, j0 int32, hits, near []int32) (int, []int32, []int32) {
	n, first := 0, 0
	skip, top, thr := c.skip, c.top, c.thr
	for k, x := range seg {
		first += b2i(x > top)
		hits[n] = int32(k)
		n += b2i(x >= skip && x <= top)
		if x >= thr { // rare once the running maximum is known
			if x > c.maxC {
				c.maxC = x
				thr = down32(down(float64(x) - c.e2))
			}
			near = append(near, j0+int32(k))
		}
	}
	c.thr = thr
	return first, hits[:n], near
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
