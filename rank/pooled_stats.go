package rank

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/vertebrae-eval/vertebrae/metrics"
)

// pooledPart is one worker's share of the streaming pooled summary.
type pooledPart struct {
	lo, hi float64
	seen   bool
	below  int      // values under the median window
	window []uint64 // keys of the values inside it
}

// pooledWindow is the median window [lo, hi] as values: rows are used only
// when they hold no NaN or infinity (see rowStats), and a zero lo is −0, so
// comparing values is comparing their metrics.OrderKey keys (which take −0
// as +0).
type pooledWindow struct{ lo, hi float64 }

// rowStats folds query q's eligible positive scores into p: extremes, the
// counts below and inside the window, the query's best positive. It does
// not look for non-finite scores: those make the ordered sum non-finite,
// and the caller then finds the first one (firstNonFinite) before using
// anything folded here.
func (ps *pooledScan) rowStats(p *pooledPart, q int, vals []float64, win pooledWindow, kept *atomic.Int64, overflow *atomic.Bool, maxPos []float64) {
	lo, hi := vals[0], vals[0]
	below := 0
	n0 := len(p.window)
	full := overflow.Load()
	for _, v := range vals {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
		// v < win.lo exactly when v − win.lo is negative, and v > win.hi
		// when win.hi − v is (finite values: a difference is zero, +0,
		// only for equal values). Sign bits instead of comparisons: half
		// the values are below the window, so a branch on v < win.lo
		// would be mispredicted half the time; the one branch left is
		// taken for the 2 % inside.
		dl, dh := math.Float64bits(v-win.lo), math.Float64bits(win.hi-v)
		below += int(dl >> 63)
		if (dl|dh)>>63 == 0 && !full {
			p.window = append(p.window, metrics.OrderKey(v))
		}
	}
	if !p.seen {
		p.lo, p.hi, p.seen = lo, hi, true
	}
	p.lo, p.hi = min(p.lo, lo), max(p.hi, hi)
	p.below += below
	if added := len(p.window) - n0; added > 0 && kept.Add(int64(added)) > int64(pooledWindowCap) {
		overflow.Store(true) // the window is of no use any more
		p.window = nil
	}
	maxPos[q] = hi + 0 // −0 → +0 (SPEC §1.3)
}

// firstNonFinite scores every query's eligible positives again and finds
// the first non-finite one in the order the stored path reports it: lowest
// gallery index, then query (ok false: all are finite, the sum overflowed).
func (ps *pooledScan) firstNonFinite(ctx context.Context) (g, q int, ok bool, err error) {
	s := ps.s
	type pos struct{ g, q int }
	firsts := make([]pos, max(1, s.threads))
	for i := range firsts {
		firsts[i] = pos{-1, -1}
	}
	blocks := (s.nq + ps.qBlock - 1) / ps.qBlock
	next := 0
	err = s.parallelWith(ctx, blocks, func() *workspace { // one after the other
		next++
		return &workspace{id: next - 1}
	}, func(b int, w *workspace) error {
		q0, q1 := b*ps.qBlock, min((b+1)*ps.qBlock, s.nq)
		qs := make([]int32, 0, q1-q0)
		for q := q0; q < q1; q++ {
			qs = append(qs, int32(q))
		}
		f := &firsts[w.id]
		return ps.scoreQueries(ctx, qs, w, func(q int, vals []float64) {
			for _, v := range vals {
				if v-v != 0 {
					g := ps.galleryIndex(q, vals)
					if f.g < 0 || g < f.g || (g == f.g && q < f.q) {
						*f = pos{g, q}
					}
					return
				}
			}
		})
	})
	if err != nil {
		return 0, 0, false, err
	}
	first := pos{-1, -1}
	for _, f := range firsts {
		if f.g >= 0 && (first.g < 0 || f.g < first.g || (f.g == first.g && f.q < first.q)) {
			first = f
		}
	}
	return first.g, first.q, first.g >= 0, nil
}
