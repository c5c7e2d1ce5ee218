package rank

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/metrics"
)

// Pooled receives, when Options.Pooled is set, the summary of every
// eligible positive score pooled in query order, then ascending gallery
// index (SPEC §4.7 positive_similarity); the results then carry no Scores
// but their MaxPositive.
//
// Under label-derived relevance where no query has a negative (one class:
// 20,000 positives per query) the scores are never held: they are computed
// query block by query block, the ordered sum is taken block after block,
// and the median comes from the values inside a narrow window around it,
// placed from an exact sample. Memory is then O(threads · block · P) plus
// the window and one working copy of the class members (at most the
// gallery) instead of O(Q · P). When the sample misplaced the window
// (or the window overflowed) the positives are scored again, as many times
// as a radix selection over the keys needs; every number is that of
// metrics.SummariseChunks over the stored scores, bit for bit. With
// negatives (several classes) the summary is folded in the same way chunk
// of queries by chunk (classPooled), as the positives are scored.
type Pooled struct {
	Summary metrics.Summary
}

// pooledStreamable reports whether the scorer can stream the positives of a
// Classes problem: no query has a negative and no candidates are kept.
func (s *scorer) pooledStreamable() bool {
	if s.o.Pooled == nil || !s.sortedRanks || s.o.TopN > 0 || s.o.FullRanking || forceStoredPooled {
		return false
	}
	c := s.p.Classes
	for q := range s.nq {
		st := classState{c: c, excl: s.p.Exclusions}
		if st.negatives(q, len(c.Members(int(c.Query[q])))) != 0 {
			return false
		}
	}
	return true
}

// forceStoredPooled is a test hook: it sends Pooled problems through the
// stored-scores path, the reference of the streaming one.
var forceStoredPooled = false

// pooledGalleryBlock is the number of class members scored per kernel call
// (a variable so that tests can make excluded members fall at block edges).
var pooledGalleryBlock = 512

// pooledWindowCap bounds the values kept inside the median window
// (a variable so that tests can force the re-scoring passes).
var pooledWindowCap = 1 << 21

// scorePooledClasses is Score for a Classes problem without negatives under
// Options.Pooled.
func (s *scorer) scorePooledClasses(ctx context.Context) error {
	t1 := time.Now()
	c := s.p.Classes
	// Per query, the member positions of its excluded members, ascending
	// (a few per query: leave-one-out excludes one), not a flag per pair.
	excluded := make([][]int32, s.nq)
	n, most := 0, 0
	for q := range s.nq {
		m := c.Members(int(c.Query[q]))
		most = max(most, len(m))
		var ex []int
		if s.p.Exclusions != nil {
			ex = s.p.Exclusions[q]
		}
		n += c.EligibleCount(q, ex)
		for _, g := range ex { // ascending gallery index, so ascending position
			if c.Gallery[g] == c.Query[q] {
				i, _ := slices.BinarySearch(m, int32(g))
				excluded[q] = append(excluded[q], int32(i))
			}
		}
	}
	// 16 MiB of scores per worker. The members' working values are shared
	// (cacheGallery), so smaller blocks cost only the kernel's packing of
	// the queries; without the cache every block converts its classes'
	// members again.
	qBlock := max(1, min(1024, (1<<21)/max(1, most)))
	ps := &pooledScan{s: s, excluded: excluded, qBlock: qBlock, slabs: make([][]float64, max(1, s.threads))}
	ps.cacheGallery(ctx)

	window, windowCap, err := ps.sampleWindow(ctx, n, max(1, s.nq/16), 0.01)
	if err != nil {
		return err
	}
	// The main pass: ordered sum, extremes, the counts of the values
	// below and inside the window, each query's best positive.
	maxPos := make([]float64, s.nq)
	parts := make([]*pooledPart, max(1, s.threads))
	for i := range parts {
		parts[i] = &pooledPart{window: make([]uint64, 0, windowCap)}
	}
	nextWorker := 0
	var kept atomic.Int64
	var overflow atomic.Bool
	var sum float64
	turn := 0
	cond := sync.NewCond(&sync.Mutex{})
	// A cancelled run wakes the workers waiting for their turn.
	defer context.AfterFunc(ctx, func() { cond.L.Lock(); cond.Broadcast(); cond.L.Unlock() })()
	blocks := (s.nq + qBlock - 1) / qBlock
	newWS := func() *workspace { // called once per worker, one after the other
		nextWorker++
		return &workspace{id: nextWorker - 1}
	}
	err = s.parallelBeside(ctx, blocks, newWS, func(b int, w *workspace) error {
		p := parts[w.id]
		q0, q1 := b*qBlock, min((b+1)*qBlock, s.nq)
		qs := make([]int32, 0, q1-q0)
		for q := q0; q < q1; q++ {
			qs = append(qs, int32(q))
		}
		rows := make([][]float64, q1-q0)
		err := ps.scoreQueries(ctx, qs, w, func(q int, vals []float64) { rows[q-q0] = vals })
		if err == nil {
			for i, vals := range rows {
				ps.rowStats(p, q0+i, vals, window, &kept, &overflow, maxPos)
			}
		}
		// The ordered sum takes block after block (SPEC §4.7: query
		// order, then gallery order), also after a failure so that no
		// worker waits for a block that is never summed.
		cond.L.Lock()
		for turn != b && ctx.Err() == nil {
			cond.Wait()
		}
		cond.L.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		if err == nil {
			// The same additions in the same order, in a local: the
			// closure's sum lives in memory, and a store and a reload
			// per addition more than double the latency of the
			// additions' dependency chain.
			acc := sum
			for _, vals := range rows {
				for _, v := range vals {
					acc += v
				}
			}
			sum = acc
		}
		cond.L.Lock()
		turn++
		cond.Broadcast()
		cond.L.Unlock()
		if err != nil {
			return err
		}
		s.meter.add(int64(q1-q0) * int64(s.ng)) // progress: every pair of these queries is decided
		return nil
	})
	if err != nil {
		return err
	}
	if sum-sum != 0 { // a non-finite score, or an overflowing sum
		g, q, bad, err := ps.firstNonFinite(ctx)
		if err != nil {
			return err
		}
		if bad {
			return s.checkFinite(nanScore, q, g)
		}
	}
	if err := s.pooledExclusionsFinite(); err != nil {
		return err
	}
	var min_, max_ float64
	seen := false
	below, inWindow := 0, 0
	for _, p := range parts {
		inWindow += len(p.window)
	}
	kept_ := make([]uint64, 0, inWindow)
	for _, p := range parts {
		if p.seen {
			if !seen {
				min_, max_, seen = p.lo, p.hi, true
			}
			min_, max_ = min(min_, p.lo), max(max_, p.hi)
		}
		below += p.below
		kept_ = append(kept_, p.window...)
		p.window = nil
	}
	min_, max_ = min_+0, max_+0 // −0 → +0 (SPEC §1.3)
	med, err := ps.median(ctx, n, below, kept_, overflow.Load())
	if err != nil {
		return err
	}
	mean := sum / float64(n)
	s.o.Pooled.Summary = metrics.Summary{Mean: &mean, Median: &med, Min: &min_, Max: &max_}
	s.stats.PooledStreamed = true
	s.stats.Positives = time.Since(t1)
	st := &classState{c: c}
	for q := range s.nq {
		cnt := len(c.Members(int(c.Query[q]))) - len(excluded[q])
		if err := s.emit(q, QueryResult{Ranks: st.oneToN(cnt), MaxPositive: maxPos[q]}); err != nil {
			return err
		}
	}
	return nil
}

// sampleWindow places the median window of the n pooled scores from the
// exact scores of a sample of whole queries (every step-th): the sample's
// quantiles 0.5 ± delta. It sizes a worker's window for the share of the
// values the sample puts inside.
func (ps *pooledScan) sampleWindow(ctx context.Context, n, step int, delta float64) (pooledWindow, int, error) {
	s := ps.s
	c := s.p.Classes
	var sampleQs []int32
	for q := 0; q < s.nq; q += step {
		sampleQs = append(sampleQs, int32(q))
	}
	inSample := 0
	for _, q := range sampleQs {
		inSample += len(c.Members(int(c.Query[q]))) - len(ps.excluded[q])
	}
	sample := make([]uint64, 0, inSample)
	if err := ps.scoreQueries(ctx, sampleQs, &workspace{}, func(_ int, vals []float64) {
		for _, v := range vals {
			sample = append(sample, metrics.OrderKey(v))
		}
	}); err != nil {
		return pooledWindow{}, 0, err
	}
	lo := metrics.SelectKth(sample, int(math.Floor(float64(len(sample)-1)*(0.5-delta))))
	hi := metrics.SelectKth(sample, int(math.Ceil(float64(len(sample)-1)*(0.5+delta))))
	window := pooledWindow{lo: metrics.KeyValue(lo), hi: metrics.KeyValue(hi)}
	if window.lo == 0 {
		// Rows may hold −0 (Dot64 rows are copied as they are): v − (−0)
		// is +0 for v = ±0, so a zero is not counted below a zero bound.
		window.lo = math.Copysign(0, -1)
	}
	// Each worker's window is allocated once for the share of the values
	// the sample puts inside (with room to spare: an untouched capacity
	// costs no memory), not grown by copying.
	inside := 0
	for _, k := range sample {
		if k >= lo && k <= hi {
			inside++
		}
	}
	windowCap := min(pooledWindowCap, int(float64(n)*1.25*float64(inside)/float64(max(1, len(sample))))+4096)
	return window, windowCap, nil
}

// median is the median of the n pooled scores (SPEC §4.7) from the count
// of those below the window and the keys of those inside it, or, when the
// window missed it or overflowed, by re-scoring (rescanSelect).
func (ps *pooledScan) median(ctx context.Context, n, below int, kept []uint64, overflow bool) (float64, error) {
	ks := []int{n / 2}
	if n%2 == 0 {
		ks = []int{n/2 - 1, n / 2}
	}
	vals := make([]float64, len(ks))
	if !overflow && below <= ks[0] && ks[len(ks)-1] < below+len(kept) {
		for i, k := range ks {
			vals[i] = metrics.KeyValue(metrics.SelectKth(kept, k-below))
		}
	} else {
		var err error
		if vals, err = ps.rescanSelect(ctx, ks, n); err != nil {
			return 0, err
		}
	}
	if len(vals) == 2 {
		return (vals[0] + vals[1]) / 2, nil
	}
	return vals[0], nil
}

// pooledExclusionsFinite fails as the gallery pass of the stored path
// would: that pass scores no tile of a problem without negatives but
// checks the excluded pairs of every tile, gallery block after gallery
// block (the first failing block's error wins), each by query, then
// gallery index.
func (s *scorer) pooledExclusionsFinite() error {
	if s.p.Exclusions == nil {
		return nil
	}
	gb := s.galleryBlock()
	w := &workspace{}
	for g0 := 0; g0 < s.ng; g0 += gb {
		if err := s.skippedTileExclusions(0, s.nq, g0, min(g0+gb, s.ng), w); err != nil {
			return err
		}
	}
	return nil
}

// pooledScan scores the eligible positives of queries (all of them: the
// problem has no negatives), as classPositives does, for the streaming
// pooled summary.
type pooledScan struct {
	s        *scorer
	excluded [][]int32 // per query: excluded member positions, ascending
	qBlock   int
	slabs    [][]float64 // per worker: the score rows of its current task
	// The members of each class in working values, member order, converted
	// once (nil: converted block by block in every task).
	gal64 [][]float64
	gal32 [][]float32
}

// galleryIndex finds the gallery index of the first non-finite value of a
// query's eligible row (only on the failure path).
func (ps *pooledScan) galleryIndex(q int, vals []float64) int {
	c := ps.s.p.Classes
	m := c.Members(int(c.Query[q]))
	ex := ps.excluded[q]
	j := 0
	for i, g := range m {
		if len(ex) > 0 && int(ex[0]) == i {
			ex = ex[1:]
			continue
		}
		if vals[j]-vals[j] != 0 {
			return int(g)
		}
		j++
	}
	return -1
}

// scoreQueries computes the eligible positive scores of queries qs (member
// order, excluded members left out) and hands each query's row to visit.
func (ps *pooledScan) scoreQueries(ctx context.Context, qs []int32, w *workspace, visit func(q int, vals []float64)) error {
	s := ps.s
	c := s.p.Classes
	d := s.d
	gBlock := pooledGalleryBlock
	byClass := map[int32][]int32{}
	var order []int32
	for _, q := range qs {
		k := c.Query[q]
		if _, ok := byClass[k]; !ok {
			order = append(order, k)
		}
		byClass[k] = append(byClass[k], q)
	}
	f64 := s.o.Precision == Float64
	neg := s.o.Similarity == SquaredL2
	// The rows of every query of the call live in the worker's slab (valid
	// until its next call).
	total := 0
	for _, q := range qs {
		total += len(c.Members(int(c.Query[q])))
	}
	if cap(ps.slabs[w.id]) < total {
		ps.slabs[w.id] = make([]float64, total)
	}
	slab := ps.slabs[w.id][:total]
	for _, k := range order {
		part := byClass[k]
		members := c.Members(int(k))
		qn := len(part)
		rows := make([][]float64, qn)
		for a := range rows {
			rows[a], slab = slab[:len(members):len(members)], slab[len(members):]
		}
		var cached64 []float64
		var cached32 []float32
		if ps.gal64 != nil {
			cached64 = ps.gal64[k]
		}
		if ps.gal32 != nil {
			cached32 = ps.gal32[k]
		}
		if f64 {
			w.q64 = growTo(w.q64, qn*d)
			for a, q := range part {
				s.queryRow64(int(q), w.q64[a*d:(a+1)*d])
			}
		} else {
			w.tmp = growTo(w.tmp, d)
			w.q32 = growTo(w.q32, qn*d)
			for a, q := range part {
				s.queryRow32(int(q), w.q32[a*d:(a+1)*d], w.tmp)
			}
		}
		for m0 := 0; m0 < len(members); m0 += gBlock {
			if err := ctx.Err(); err != nil {
				return err
			}
			// A gallery block is about a millisecond of work: yielding
			// here lets a goroutine the scheduler preempted (the identity
			// and relevance fingerprint hashes of the same run, SPEC §2.9
			// and §10.3, which chain 2 × 14 bytes per pair of SHA-256 and
			// end after the scores otherwise) take the processor back at
			// once instead of after a worker's 10 ms time slice.
			runtime.Gosched()
			blk := members[m0:min(m0+gBlock, len(members))]
			gn := len(blk)
			if f64 {
				w.s64 = growTo(w.s64, qn*gn)
				var gm []float64
				if cached64 != nil {
					gm = cached64[m0*d : (m0+gn)*d]
				} else {
					w.g64 = growTo(w.g64, gn*d)
					for j, g := range blk {
						copy(w.g64[j*d:(j+1)*d], s.g.block64(int(g), int(g)+1, w.g64[j*d:(j+1)*d]))
					}
					gm = w.g64[:gn*d]
				}
				if neg {
					kernel.SqDist64(w.q64[:qn*d], qn, gm, gn, d, w.s64)
				} else {
					kernel.Dot64(w.q64[:qn*d], qn, gm, gn, d, w.s64)
				}
				for a := range part {
					row, src := rows[a][m0:m0+gn], w.s64[a*gn:(a+1)*gn]
					if neg {
						for j, v := range src {
							row[j] = -v + 0 // −0 → +0 (SPEC §1.3)
						}
					} else {
						// Copied as they are: a −0 is normalised where it
						// would show (rowStats, metrics.OrderKey; the
						// ordered sum, from +0, never is −0).
						copy(row, src)
					}
				}
			} else {
				w.s32 = growTo(w.s32, qn*gn)
				var gm []float32
				if cached32 != nil {
					gm = cached32[m0*d : (m0+gn)*d]
				} else {
					w.tmp = growTo(w.tmp, d)
					w.g32 = growTo(w.g32, gn*d)
					for j, g := range blk {
						copy(w.g32[j*d:(j+1)*d], s.g.block32(int(g), int(g)+1, w.g32[j*d:(j+1)*d], w.tmp))
					}
					gm = w.g32[:gn*d]
				}
				if neg {
					kernel.SqDist32(w.q32[:qn*d], qn, gm, gn, d, w.s32)
				} else {
					kernel.Dot32(w.q32[:qn*d], qn, gm, gn, d, w.s32)
				}
				for a := range part {
					row, src := rows[a][m0:m0+gn], w.s32[a*gn:(a+1)*gn]
					if neg {
						for j, v := range src {
							row[j] = -float64(v) + 0
						}
					} else {
						for j, v := range src {
							row[j] = float64(v) + 0
						}
					}
				}
			}
		}
		for a, q := range part {
			row := rows[a]
			if ex := ps.excluded[q]; len(ex) > 0 {
				// Close the gaps of the excluded members, run by run.
				n := int(ex[0])
				for k, e := range ex {
					end := len(row)
					if k+1 < len(ex) {
						end = int(ex[k+1])
					}
					n += copy(row[n:], row[int(e)+1:end])
				}
				row = row[:n]
			}
			visit(int(q), row)
		}
	}
	return nil
}

// rescan scores every query's positives again, in parallel, handing each
// row to visit (on the worker's goroutine, worker index w).
func (ps *pooledScan) rescan(ctx context.Context, visit func(w int, vals []float64)) error {
	s := ps.s
	blocks := (s.nq + ps.qBlock - 1) / ps.qBlock
	next := 0
	return s.parallelBeside(ctx, blocks, func() *workspace { // one after the other
		next++
		return &workspace{id: next - 1}
	}, func(b int, w *workspace) error {
		q0, q1 := b*ps.qBlock, min((b+1)*ps.qBlock, s.nq)
		qs := make([]int32, 0, q1-q0)
		for q := q0; q < q1; q++ {
			qs = append(qs, int32(q))
		}
		return ps.scoreQueries(ctx, qs, w, func(_ int, vals []float64) { visit(w.id, vals) })
	})
}

// rescanSelect finds the ks-th smallest of the n pooled scores by
// re-scoring: each pass fixes 16 more bits of every target's key, until few
// enough values share a target's prefix to be collected.
func (ps *pooledScan) rescanSelect(ctx context.Context, ks []int, n int) ([]float64, error) {
	type target struct {
		rank   int
		prefix uint64
		fixed  uint
		count  int
	}
	ts := make([]target, len(ks))
	for i, k := range ks {
		ts[i] = target{rank: k, count: n} // no bit fixed yet (k>>64 is 0 in Go)
	}
	threads := ps.s.threads
	for {
		open := false
		for _, t := range ts {
			if t.fixed < 64 && t.count > pooledWindowCap {
				open = true
			}
		}
		if !open {
			break
		}
		hist := make([][][]int, threads)
		for w := range hist {
			hist[w] = make([][]int, len(ts))
			for i := range ts {
				hist[w][i] = make([]int, 1<<16)
			}
		}
		if err := ps.rescan(ctx, func(w int, vals []float64) {
			for _, v := range vals {
				k := metrics.OrderKey(v)
				for i, t := range ts {
					if t.fixed < 64 && t.count > pooledWindowCap && k>>(64-t.fixed) == t.prefix {
						wd := min(16, 64-t.fixed)
						hist[w][i][(k>>(64-t.fixed-wd))&(1<<wd-1)]++
					}
				}
			}
		}); err != nil {
			return nil, err
		}
		for i := range ts {
			t := &ts[i]
			if t.fixed >= 64 || t.count <= pooledWindowCap {
				continue
			}
			h := make([]int, 1<<16)
			for w := range hist {
				for d, c := range hist[w][i] {
					h[d] += c
				}
			}
			d := 0
			for ; t.rank >= h[d]; d++ {
				t.rank -= h[d]
			}
			wd := min(16, 64-t.fixed)
			t.prefix, t.fixed, t.count = t.prefix<<wd|uint64(d), t.fixed+wd, h[d]
		}
	}
	out := make([]float64, len(ts))
	keys := make([][][]uint64, threads)
	for w := range keys {
		keys[w] = make([][]uint64, len(ts))
	}
	need := false
	for i, t := range ts {
		if t.fixed >= 64 {
			out[i] = metrics.KeyValue(t.prefix)
		} else {
			need = true
		}
	}
	if need {
		if err := ps.rescan(ctx, func(w int, vals []float64) {
			for _, v := range vals {
				k := metrics.OrderKey(v)
				for i, t := range ts {
					if t.fixed < 64 && k>>(64-t.fixed) == t.prefix {
						keys[w][i] = append(keys[w][i], k)
					}
				}
			}
		}); err != nil {
			return nil, err
		}
		for i, t := range ts {
			if t.fixed >= 64 {
				continue
			}
			var all []uint64
			for w := range keys {
				all = append(all, keys[w][i]...)
			}
			slices.Sort(all)
			out[i] = metrics.KeyValue(all[t.rank])
		}
	}
	return out, nil
}
