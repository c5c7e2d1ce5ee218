package rank

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
	"github.com/vertebrae-eval/vertebrae/metrics"
)

// sink is the positive-summary stage (SPEC §4.7 positive_similarity): every
// eligible positive score, pooled in query order then ascending gallery
// index, summarised as metrics.Summarise would summarise the stored list,
// bit for bit, without storing it. The ordered sum takes each chunk's
// scores in order on its own goroutine while the run goes on; the
// extremes and the median are folded by the workers that order the
// positives. The median comes from the values inside a window: every value
// when they are at most plan.window, else a window around the median
// placed from an exact sample; when the sample misplaced it (or the window
// overflowed) the positives are scored again, as many times as a radix
// selection over the keys needs.
type sink[T working] struct {
	s     *scorer[T]
	n     int // eligible positives
	win   [2]float64
	all   bool // the window holds every value
	mu    sync.Mutex
	parts []*sinkPart[T]
	// kept is the window's values, written by the parts at ranges they
	// reserve by adding to nKept (any order: only the median is taken
	// from them); one allocation of the window's cap, no part's copy of
	// its own nor a final concatenation.
	kept     []T
	nKept    atomic.Int64
	overflow atomic.Bool
	total    float64 // the ordered sum so far
}

// sinkPart is one worker's share of the summary.
type sinkPart[T working] struct {
	sk     *sink[T]
	lo, hi T
	seen   bool
	below  int     // values under the window
	inside []T     // scratch: a row's values inside it
	idx    []int32 // scratch of the window scan
}

func newSink[T working](s *scorer[T]) *sink[T] {
	sk := &sink[T]{s: s, all: true}
	for q := s.qlo; q < s.qhi; q++ {
		sk.n += s.rel.count(q)
	}
	return sk
}

// place sets the median window before the first chunk: everything when it
// fits the cap, else the quantiles 0.5 ± δ of a sample, δ as wide as the
// cap allows.
func (sk *sink[T]) place(ctx context.Context) error {
	s := sk.s
	if sk.n <= s.pl.window {
		sk.kept = make([]T, sk.n)
		return nil
	}
	delta := min(0.1, max(0.005, 0.25*float64(s.pl.window)/float64(sk.n)))
	// The sample: about 2^19 values, whole queries from 4 places spread
	// over the queries, scored as the positives stage scores them.
	nq := s.qhi - s.qlo
	const places, budget = 4, 1 << 19
	per := max(1, budget/(places*max(1, sk.n/nq)))
	var sample []T
	for k := range min(places, nq) {
		q0 := s.qlo + k*nq/min(places, nq)
		c := s.scoresOnly(q0, min(q0+per, s.qlo+(k+1)*nq/min(places, nq)))
		if err := s.positives(ctx, c, false); err != nil {
			return err
		}
		for i := range c.scores {
			sample = append(sample, eligibleScores(s.rel, c.q0+i, c.scores[i], nil)...)
		}
	}
	if !allFinite(sample) {
		return errNonFinite
	}
	lo := metrics.SelectKth(sample, int(math.Floor(float64(len(sample)-1)*(0.5-delta))))
	hi := metrics.SelectKth(sample, int(math.Ceil(float64(len(sample)-1)*(0.5+delta))))
	sk.win, sk.all = [2]float64{float64(lo), float64(hi)}, false
	sk.kept = make([]T, s.pl.window)
	if sk.win[0] == 0 {
		// v − (−0) is +0 for v = ±0, so a zero is not counted below a
		// zero bound.
		sk.win[0] = math.Copysign(0, -1)
	}
	return nil
}

// part is the k-th worker's part (the same for every chunk).
func (sk *sink[T]) part(k int) *sinkPart[T] {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	for len(sk.parts) <= k {
		sk.parts = append(sk.parts, &sinkPart[T]{sk: sk})
	}
	return sk.parts[k]
}

// rowStats folds eligible positive scores (finite; any subset, once each)
// into the part: extremes, the counts below and inside the window. It
// returns their largest.
func (p *sinkPart[T]) rowStats(vals []T) (hi T) {
	sk := p.sk
	if len(vals) == 0 {
		return T(math.Inf(-1))
	}
	if !p.seen {
		p.lo, p.hi, p.seen = vals[0], vals[0], true
	}
	lo, hi := p.minMax(vals)
	if lo < p.lo {
		p.lo = lo
	}
	if hi > p.hi {
		p.hi = hi
	}
	if sk.all {
		sk.keep(vals)
		return hi
	}
	if sk.overflow.Load() {
		return hi
	}
	p.inside = p.inside[:0]
	wl, wh := T(sk.win[0]), T(sk.win[1])
	if v32, ok := any(vals).([]float32); ok {
		// One vector scan: the values at or above the window's low end
		// are counted, those inside it listed.
		p.idx = growTo(p.idx, len(v32))
		above, in := kernel.Scan32(v32, kernel.Cut{Above: math.Nextafter32(float32(wl), float32(math.Inf(-1))), Lo: float32(wl), Hi: float32(wh), High: float32(math.Inf(1))}, p.idx)
		p.below += len(vals) - above
		for _, j := range in {
			p.inside = append(p.inside, vals[j])
		}
	} else {
		below := 0
		for _, v := range vals {
			b := b2i(v < wl)
			below += b
			if b|b2i(v > wh) == 0 { // inside (a branch taken for the few inside)
				p.inside = append(p.inside, v)
			}
		}
		p.below += below
	}
	sk.keep(p.inside)
	return hi
}

// keep writes vals into the window at a range it reserves; past the
// window's cap the window is of no use any more (overflow).
func (sk *sink[T]) keep(vals []T) {
	if len(vals) == 0 {
		return
	}
	end := sk.nKept.Add(int64(len(vals)))
	if end > int64(len(sk.kept)) {
		sk.overflow.Store(true)
		return
	}
	copy(sk.kept[end-int64(len(vals)):end], vals)
}

// minMax is the smallest of vals and the part's smallest so far, and the
// largest of vals (finite; −0 and +0 are equal here, the caller adds +0).
// Float32 values take two vector scans: the maximum, and the few values
// below the smallest so far.
func (p *sinkPart[T]) minMax(vals []T) (lo, hi T) {
	v32, ok := any(vals).([]float32)
	if !ok {
		return minMax(vals)
	}
	m, _ := kernel.MaxFinite32(v32)
	l := float32(p.lo)
	p.idx = growTo(p.idx, len(v32))
	inf := float32(math.Inf(1))
	_, below := kernel.Scan32(v32, kernel.Cut{Above: inf, Lo: float32(math.Inf(-1)), Hi: math.Nextafter32(l, -inf), High: inf}, p.idx)
	for _, j := range below {
		l = min(l, v32[j])
	}
	return T(l), T(m)
}

// minMax is the smallest and the largest of vals (finite; −0 and +0 are
// equal here, the caller adds +0). Comparisons, not the min and max
// builtins, which order −0 and NaN at a cost; the branches are almost
// never taken.
func minMax[T working](vals []T) (lo, hi T) {
	lo, hi = vals[0], vals[0]
	for _, v := range vals[1:] {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// sum adds query q's eligible positive scores (by list position) to the
// ordered sum.
func (sk *sink[T]) sum(rel *relevance, q int, vals []T) {
	acc := sk.total // in a local: a store and a reload per addition would double the chain's latency
	ex := rel.excludedPos(q)
	prev := 0
	for _, e := range ex {
		for _, v := range vals[prev:e] {
			acc += float64(v)
		}
		prev = int(e) + 1
	}
	for _, v := range vals[prev:] {
		acc += float64(v)
	}
	sk.total = acc
}

// summary completes the summary once every chunk is folded.
func (sk *sink[T]) summary(ctx context.Context) (metrics.Summary, error) {
	var lo, hi T
	seen, below := false, 0
	for _, p := range sk.parts {
		if p.seen {
			if !seen {
				lo, hi, seen = p.lo, p.hi, true
			}
			lo, hi = min(lo, p.lo), max(hi, p.hi)
		}
		below += p.below
	}
	if !seen {
		return metrics.Summary{}, nil
	}
	kept := sk.kept[:min(sk.nKept.Load(), int64(len(sk.kept)))]
	sk.kept = nil
	n := sk.n
	ks := []int{n / 2}
	if n%2 == 0 {
		ks = []int{n/2 - 1, n / 2}
	}
	vals := make([]float64, len(ks))
	if !sk.overflow.Load() && below <= ks[0] && ks[len(ks)-1] < below+len(kept) {
		for i, k := range ks {
			vals[i] = float64(metrics.SelectKth(kept, k-below))
		}
	} else {
		kept = nil
		var err error
		if vals, err = sk.rescanSelect(ctx, ks); err != nil {
			return metrics.Summary{}, err
		}
	}
	med := vals[0] + 0 // −0 → +0 (SPEC §1.3)
	if len(vals) == 2 {
		med = (vals[0]+vals[1])/2 + 0
	}
	mean := sk.total / float64(n)
	mn, mx := float64(lo)+0, float64(hi)+0 // −0 → +0 (SPEC §1.3)
	return metrics.Summary{Mean: &mean, Median: &med, Min: &mn, Max: &mx}, nil
}

// rescanSelect finds the ks-th smallest pooled scores by scoring the
// positives again (a fallback: the window missed the median or overflowed):
// each pass fixes 16 more bits of every target's key, until few enough
// values share a target's prefix to be collected and sorted.
func (sk *sink[T]) rescanSelect(ctx context.Context, ks []int) ([]float64, error) {
	type target struct {
		rank, count int
		prefix      uint64
		fixed       uint
		hist        []int
		keys        []uint64
	}
	ts := make([]target, len(ks))
	for i, k := range ks {
		ts[i] = target{rank: k, count: sk.n} // no bit fixed yet
	}
	open := func(t *target) bool { return t.fixed < 64 && t.count > sk.s.pl.window }
	for {
		more := false
		for i := range ts {
			if t := &ts[i]; open(t) {
				t.hist, more = make([]int, 1<<16), true
			}
		}
		if !more {
			break
		}
		if err := sk.s.eachPositives(ctx, func(vals []T) {
			for _, v := range vals {
				k := metrics.OrderKey(float64(v))
				for i := range ts {
					if t := &ts[i]; open(t) && k>>(64-t.fixed) == t.prefix {
						wd := min(16, 64-t.fixed)
						t.hist[(k>>(64-t.fixed-wd))&(1<<wd-1)]++
					}
				}
			}
		}); err != nil {
			return nil, err
		}
		for i := range ts {
			if t := &ts[i]; open(t) {
				d := 0
				for ; t.rank >= t.hist[d]; d++ {
					t.rank -= t.hist[d]
				}
				wd := min(16, 64-t.fixed)
				t.prefix, t.fixed, t.count = t.prefix<<wd|uint64(d), t.fixed+wd, t.hist[d]
			}
		}
	}
	if slices.ContainsFunc(ts, func(t target) bool { return t.fixed < 64 }) {
		if err := sk.s.eachPositives(ctx, func(vals []T) {
			for _, v := range vals {
				k := metrics.OrderKey(float64(v))
				for i := range ts {
					if t := &ts[i]; t.fixed < 64 && k>>(64-t.fixed) == t.prefix {
						t.keys = append(t.keys, k)
					}
				}
			}
		}); err != nil {
			return nil, err
		}
	}
	out := make([]float64, len(ts))
	for i, t := range ts {
		if t.fixed >= 64 {
			out[i] = metrics.KeyValue(t.prefix)
			continue
		}
		slices.Sort(t.keys)
		out[i] = metrics.KeyValue(t.keys[t.rank])
	}
	return out, nil
}

// eachPositives scores every query's eligible positives again, chunk by
// chunk, and hands each query's values to visit, one call at a time.
func (s *scorer[T]) eachPositives(ctx context.Context, visit func(vals []T)) error {
	for _, ch := range s.chunks() {
		c := s.scoresOnly(ch[0], ch[1])
		if err := s.positives(ctx, c, false); err != nil {
			return err
		}
		for i := range c.scores {
			visit(eligibleScores(s.rel, c.q0+i, c.scores[i], nil))
		}
	}
	return nil
}
