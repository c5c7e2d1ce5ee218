package rank

import (
	"math"
	"slices"
	"sync/atomic"

	"github.com/vertebrae-eval/vertebrae/metrics"
)

// pooledPart is one worker's share of the streaming pooled summary.
type pooledPart struct {
	lo, hi float64
	seen   bool
	below  int      // values under the median window
	window []uint64 // keys of the values inside it
	bad    struct{ g, q int }
}

// pooledWindow is the median window [lo, hi] as values: the rows hold no
// NaN (a row with one fails the run) and no −0 (scores are +0-normalised),
// so comparing values is comparing their metrics.OrderKey keys.
type pooledWindow struct{ lo, hi float64 }

// rowStats folds query q's eligible positive scores into p: extremes,
// the counts below and inside the window, the query's best positive. A
// non-finite score records its (gallery, query) position instead, the run
// fails with the first one.
func (ps *pooledScan) rowStats(p *pooledPart, q int, vals []float64, win pooledWindow, kept *atomic.Int64, overflow *atomic.Bool, maxPos []float64) {
	lo, hi := vals[0], vals[0]
	below := 0
	n0 := len(p.window)
	full := overflow.Load()
	for _, v := range vals {
		if v-v != 0 {
			g := ps.galleryIndex(q, vals)
			if p.bad.g < 0 || g < p.bad.g || (g == p.bad.g && q < p.bad.q) {
				p.bad.g, p.bad.q = g, q
			}
			return
		}
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
		// v < win.lo exactly when v − win.lo is negative (finite values:
		// the difference is zero only for equal values), counted without
		// a branch: about half the values are below.
		below += int(math.Float64bits(v-win.lo) >> 63)
		if v >= win.lo && v <= win.hi && !full {
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
	maxPos[q] = hi
}

// nthKey returns the k-th smallest of keys (0-based), reordering keys: a
// quickselect, with a sort as the fallback when the pivots keep failing.
func nthKey(keys []uint64, k int) uint64 {
	lo, hi := 0, len(keys)-1
	for round := 0; hi > lo; round++ {
		if round == 64 {
			slices.Sort(keys[lo : hi+1])
			break
		}
		a, b, c := keys[lo], keys[lo+(hi-lo)/2], keys[hi]
		pivot := max(min(a, b), min(max(a, b), c)) // median of three
		i, j := lo, hi
		for i <= j {
			for keys[i] < pivot {
				i++
			}
			for keys[j] > pivot {
				j--
			}
			if i <= j {
				keys[i], keys[j] = keys[j], keys[i]
				i++
				j--
			}
		}
		// keys[lo..j] ≤ pivot, keys[i..hi] ≥ pivot, keys(j..i) = pivot.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return keys[k]
		}
	}
	return keys[k]
}
