package rank

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Label-derived relevance held implicitly (SPEC §2.7): a query's positives
// are the gallery rows of its class, minus its exclusions. Counting works
// without any per-pair relevance list:
//
//  1. The positives' scores are computed class by class, as dense blocks of
//     the class's queries against its gallery members (the same kernels, so
//     the same bits, SPEC §4.2).
//  2. Each query's eligible positives are sorted once into rank order
//     (score descending, lower index first): the positives preceding a
//     positive are exactly those before it in that order, so positives
//     never need to be counted against each other (O(P log P)).
//  3. The gallery pass counts only negatives: a negative that precedes the
//     last positive is placed by binary search over the sorted thresholds.
//     Tiles in which every pair is a positive or excluded have no negative
//     and are not scored at all (one class: the pass vanishes).
//
// rank(p) = 1 + (positives before p in rank order) + (negatives preceding p),
// which is SPEC §4.3 term by term. Per-pair state is the rank-ordered score
// and gallery index of each eligible positive plus a shared counter (16
// bytes); a query without negatives holds only its positives' scores (8).
type classState struct {
	c *retrieval.Classes
	// Per query: scores of every member of its class (member order; an
	// excluded member's slot is unused; released once sorted) and the
	// eligible positives' scores and gallery indices in rank order, laid
	// out for the counting search.
	scores   [][]float64
	ordScore [][]float64
	ordIndex [][]int32
	buckets  []*slotBuckets
	// memberPos[g] is gallery row g's position in its class's member list.
	memberPos []int32
	excl      [][]int // the problem's exclusions
	// beaten[q][r]: negatives that precede the positive in rank slot r but
	// not the one in slot r−1; shared by all workers (atomic adds), unless
	// local: then each worker's partial counts them in cbeaten[off[q]+r].
	beaten [][]int32
	local  bool
	off    []int
	nLocal int
	// excluded[q][m] marks excluded member positions (nil: none).
	excluded [][]bool
	// pooled streams the pooled summary (nil: the results carry the
	// positives' scores).
	pooled *classPooled
	// Per-worker counter slices, reused by the chunks' passes.
	countersMu       sync.Mutex
	freeCnt, usedCnt [][]int32
	// Arenas of the chunk being scored (scoreClassChunk).
	arenaScores   []float64
	arenaOrdScore []float64
	arenaOrdIndex []int32
	arenaBeaten   []int32
	// ranks is 1..(largest class size), shared by the SortedRanks results
	// of queries without negatives.
	ranksOnce sync.Once
	ranks     []int
}

// scoreClasses is Score for a Problem with Classes, dense endpoints.
//
// The positives' state (their scores, rank order and counters, about 24
// bytes per pair) is held for one chunk of queries at a time, of at most
// maxChunkPairs pairs, each chunk with its own gallery pass: two classes of
// 10,000 rows under 2,000 queries are 20 million pairs, which would
// otherwise all be held at once. The chunks' passes produce the same
// gallery blocks again, which costs little beside scoring them. Results do
// not depend on the chunks: every query's counts come from its own row of
// scores. Neither do errors, as chunks are only cut where no score can be
// non-finite (scoresFinite): a chunked pass could otherwise name another
// failing pair than the whole pass.
func (s *scorer) scoreClasses(ctx context.Context) error {
	c := s.p.Classes
	st := &classState{c: c, scores: make([][]float64, s.nq), memberPos: make([]int32, s.ng), excl: s.p.Exclusions,
		ordScore: make([][]float64, s.nq), ordIndex: make([][]int32, s.nq), buckets: make([]*slotBuckets, s.nq),
		beaten: make([][]int32, s.nq), excluded: make([][]bool, s.nq), off: make([]int, s.nq)}
	s.cls = st
	s.out = make([]QueryResult, s.nq)
	for k := range c.NumClasses() {
		for m, g := range c.Members(k) {
			st.memberPos[g] = int32(m)
		}
	}
	chunks := s.classChunks()
	s.stats.Chunks = len(chunks)
	if s.streamsPooled() {
		cp, err := s.newClassPooled(ctx)
		if err != nil {
			return err
		}
		st.pooled, s.stats.PooledStreamed = cp, true
	}
	for _, ch := range chunks {
		s.qLo, s.qHi = ch[0], ch[1]
		if err := s.scoreClassChunk(ctx); err != nil {
			return err
		}
	}
	if st.pooled != nil {
		sum, err := st.pooled.summary(ctx)
		if err != nil {
			return err
		}
		s.o.Pooled.Summary = sum
	}
	return nil
}

// maxChunkPairs bounds the positive pairs of the queries scored together
// under label-derived relevance (a variable for tests).
var maxChunkPairs = 1 << 22

// classChunks splits the queries into consecutive ranges of at most
// maxChunkPairs positive pairs (at least one query each), or returns one
// range when the problem is small or a score might be non-finite.
func (s *scorer) classChunks() [][2]int {
	c := s.p.Classes
	var out [][2]int
	lo, pairs := 0, 0
	for q := range s.nq {
		n := len(c.Members(int(c.Query[q])))
		if q > lo && pairs+n > maxChunkPairs {
			out = append(out, [2]int{lo, q})
			lo, pairs = q, 0
		}
		pairs += n
	}
	out = append(out, [2]int{lo, s.nq})
	if len(out) > 1 && !s.scoresFinite() {
		return [][2]int{{0, s.nq}}
	}
	return out
}

// scoresFinite reports whether every score of the problem is finite, by a
// bound: cosine rows have unit norm, and otherwise |dot| ≤ d·max|q|·max|g|
// and a squared distance ≤ d·(max|q| + max|g|)², with room to spare for
// rounding below the working precision's overflow threshold.
func (s *scorer) scoresFinite() bool {
	if s.o.Similarity == Cosine {
		return true
	}
	var mq, mg float64
	const rows = 4096
	if s.o.Precision == Float64 {
		m, ok := kernel.MaxAbs64(s.q64)
		if !ok {
			return false
		}
		mq = m
		buf := make([]float64, min(rows, s.ng)*s.d)
		for g0 := 0; g0 < s.ng; g0 += rows {
			m, ok := kernel.MaxAbs64(s.g.block64(g0, min(g0+rows, s.ng), buf))
			if !ok {
				return false
			}
			mg = max(mg, m)
		}
	} else {
		m, ok := kernel.MaxAbs32(s.q32)
		if !ok {
			return false
		}
		mq = float64(m)
		buf, tmp := make([]float32, min(rows, s.ng)*s.d), make([]float64, s.d)
		for g0 := 0; g0 < s.ng; g0 += rows {
			m, ok := kernel.MaxAbs32(s.g.block32(g0, min(g0+rows, s.ng), buf, tmp))
			if !ok {
				return false
			}
			mg = max(mg, float64(m))
		}
	}
	d := float64(s.d)
	bound := d * mq * mg
	if s.o.Similarity == SquaredL2 {
		bound = d * (mq + mg) * (mq + mg)
	}
	limit := 1e300
	if s.o.Precision == Float32 {
		limit = 1e37
	}
	return bound <= limit // false for NaN
}

// scoreClassChunk scores queries [s.qLo, s.qHi): their positives, their
// rank order, then a gallery pass for them.
func (s *scorer) scoreClassChunk(ctx context.Context) error {
	c, st := s.p.Classes, s.cls
	// The state of queries with negatives lives in arenas reused by every
	// chunk (it never leaves the scorer: results copy it); the scores of a
	// query without negatives are its result's, allocated on their own.
	var nScores, nOrd int
	off := make([][2]int, s.qHi-s.qLo) // per query: offsets in the score and rank-order arenas
	for q := s.qLo; q < s.qHi; q++ {
		m := c.Members(int(c.Query[q]))
		var ex []int
		if s.p.Exclusions != nil {
			ex = s.p.Exclusions[q]
		}
		if st.negatives(q, len(m)) == 0 {
			st.scores[q] = make([]float64, len(m))
		} else {
			off[q-s.qLo] = [2]int{nScores, nOrd}
			nScores += len(m)
			nOrd += c.EligibleCount(q, ex) + 1
		}
		for _, g := range ex {
			if c.Gallery[g] == c.Query[q] {
				if st.excluded[q] == nil {
					st.excluded[q] = make([]bool, len(m))
				}
				i, _ := slices.BinarySearch(m, int32(g))
				st.excluded[q][i] = true
			}
		}
	}
	st.arenaScores = growTo(st.arenaScores, nScores)
	st.arenaOrdScore, st.arenaOrdIndex = growTo(st.arenaOrdScore, nOrd), growTo(st.arenaOrdIndex, nOrd)
	st.arenaBeaten = growTo(st.arenaBeaten, nOrd)
	clear(st.arenaBeaten[:nOrd])
	for q := s.qLo; q < s.qHi; q++ {
		if st.scores[q] == nil {
			o := off[q-s.qLo][0]
			st.scores[q] = st.arenaScores[o : o+len(c.Members(int(c.Query[q]))) : o+len(c.Members(int(c.Query[q])))]
		}
	}
	t1 := time.Now()
	if err := s.classPositives(ctx); err != nil {
		return err
	}
	if st.pooled != nil {
		st.pooled.fold(st, s.qLo, s.qHi)
	}
	// Rank order of every query's eligible positives.
	nq := s.qHi - s.qLo
	if err := s.parallel(ctx, (nq+63)/64, func(task int, w *workspace) error {
		rs := sorterPool.Get().(*radixSorter)
		defer sorterPool.Put(rs)
		for q := s.qLo + task*64; q < min(s.qLo+task*64+64, s.qHi); q++ {
			m := c.Members(int(c.Query[q]))
			if st.negatives(q, len(m)) == 0 {
				// Nothing is counted against these positives: they are put
				// in rank order when the result is built, and until then
				// only their scores are held.
				continue
			}
			ord := rs.rankOrder(st.scores[q], st.excluded[q])
			o := off[q-s.qLo][1]
			os, oi := st.arenaOrdScore[o:o+len(ord):o+len(ord)], st.arenaOrdIndex[o:o+len(ord):o+len(ord)]
			for r, i := range ord {
				os[r], oi[r] = st.scores[q][i], m[i]
			}
			// Only the rank-ordered copies stay: member order is recovered
			// from the gallery index (memberPos) when the result is built.
			st.scores[q], st.ordScore[q], st.ordIndex[q] = nil, os, oi
			if len(os) >= 32 {
				st.buckets[q] = newSlotBuckets(os)
			}
			st.beaten[q] = st.arenaBeaten[o : o+len(ord)+1 : o+len(ord)+1]
		}
		return nil
	}); err != nil {
		return err
	}
	// Counters per worker, added without atomics, when they are small
	// (the demo: 1,000 queries × 500 positives); otherwise one shared set
	// of atomic counters (memory independent of the thread count).
	st.nLocal, st.local = 0, false
	for q := s.qLo; q < s.qHi; q++ {
		st.off[q] = st.nLocal
		st.nLocal += len(st.beaten[q])
	}
	if st.nLocal*s.threads*4 <= maxLocalCounterBytes {
		st.local = true
		clear(st.beaten[s.qLo:s.qHi])
	}
	s.stats.Positives += time.Since(t1)
	err := s.run(ctx)
	st.freeCnt, st.usedCnt = append(st.freeCnt, st.usedCnt...), nil
	return err
}

// localCounters returns a worker's zeroed counters for the chunk's pass
// (nLocal of them), reusing those of an earlier pass.
func (st *classState) localCounters() []int32 {
	st.countersMu.Lock()
	defer st.countersMu.Unlock()
	var c []int32
	if n := len(st.freeCnt); n > 0 {
		c, st.freeCnt = st.freeCnt[n-1], st.freeCnt[:n-1]
	}
	c = growTo(c, st.nLocal)
	clear(c)
	st.usedCnt = append(st.usedCnt, c)
	return c
}

// maxLocalCounterBytes bounds the per-worker copies of the positives'
// counters (a variable for tests).
var maxLocalCounterBytes = 64 << 20

// beatenOf returns query q's counters, summed over the workers' partials
// when they are per worker.
func (st *classState) beatenOf(q int, parts []*partial) []int32 {
	if !st.local || st.ordScore[q] == nil {
		return st.beaten[q]
	}
	n := len(st.ordScore[q]) + 1
	out := make([]int32, n)
	for _, p := range parts {
		for r, c := range p.cbeaten[st.off[q] : st.off[q]+n] {
			out[r] += c
		}
	}
	return out
}

// negatives is the number of query q's eligible negatives (nm = the size of
// its class).
func (st *classState) negatives(q, nm int) int {
	n := len(st.c.Gallery) - nm
	if st.excl != nil {
		for _, g := range st.excl[q] {
			if st.c.Gallery[g] != st.c.Query[q] {
				n--
			}
		}
	}
	return n
}

// classPositives scores every (query, member of its class) pair. The
// reported failure is that of the classic path: the non-finite positive
// with the lowest gallery index, then the lowest query index.
func (s *scorer) classPositives(ctx context.Context) error {
	c, st := s.p.Classes, s.cls
	byClass := make([][]int32, c.NumClasses())
	lo, hi := s.activeQueries()
	for q := lo; q < hi; q++ {
		k := c.Query[q]
		byClass[k] = append(byClass[k], int32(q))
	}
	const gBlock, qBlock = 512, 256
	type task struct{ k, m0 int }
	var tasks []task
	for k, qs := range byClass {
		if len(qs) == 0 {
			continue
		}
		for m0 := 0; m0 < len(c.Members(k)); m0 += gBlock {
			tasks = append(tasks, task{k, m0})
		}
	}
	type bad struct{ g, q int }
	worst := make([]bad, len(tasks))
	d := s.d
	err := s.parallel(ctx, len(tasks), func(i int, w *workspace) error {
		t := tasks[i]
		worst[i] = bad{-1, -1}
		members := c.Members(t.k)[t.m0:min(t.m0+gBlock, len(c.Members(t.k)))]
		qs := byClass[t.k]
		gn := len(members)
		f64 := s.o.Precision == Float64
		if f64 {
			w.g64 = growTo(w.g64, gn*d)
			w.q64 = growTo(w.q64, min(qBlock, len(qs))*d)
			w.s64 = growTo(w.s64, min(qBlock, len(qs))*gn)
			for j, g := range members {
				copy(w.g64[j*d:(j+1)*d], s.g.block64(int(g), int(g)+1, w.g64[j*d:(j+1)*d]))
			}
		} else {
			w.tmp = growTo(w.tmp, d)
			w.g32 = growTo(w.g32, gn*d)
			w.q32 = growTo(w.q32, min(qBlock, len(qs))*d)
			w.s32 = growTo(w.s32, min(qBlock, len(qs))*gn)
			for j, g := range members {
				copy(w.g32[j*d:(j+1)*d], s.g.block32(int(g), int(g)+1, w.g32[j*d:(j+1)*d], w.tmp))
			}
		}
		for q0 := 0; q0 < len(qs); q0 += qBlock {
			if err := ctx.Err(); err != nil {
				return err
			}
			part := qs[q0:min(q0+qBlock, len(qs))]
			qn := len(part)
			for a, q := range part {
				if f64 {
					s.queryRow64(int(q), w.q64[a*d:(a+1)*d])
				} else {
					s.queryRow32(int(q), w.q32[a*d:(a+1)*d], w.tmp)
				}
			}
			switch {
			case f64 && s.o.Similarity == SquaredL2:
				kernel.SqDist64(w.q64[:qn*d], qn, w.g64[:gn*d], gn, d, w.s64)
			case f64:
				kernel.Dot64(w.q64[:qn*d], qn, w.g64[:gn*d], gn, d, w.s64)
			case s.o.Similarity == SquaredL2:
				kernel.SqDist32(w.q32[:qn*d], qn, w.g32[:gn*d], gn, d, w.s32)
			default:
				kernel.Dot32(w.q32[:qn*d], qn, w.g32[:gn*d], gn, d, w.s32)
			}
			for a, q := range part {
				sc := st.scores[q][t.m0 : t.m0+gn]
				for j := range sc {
					var v float64
					if f64 {
						v = w.s64[a*gn+j]
					} else {
						v = float64(w.s32[a*gn+j])
					}
					if s.o.Similarity == SquaredL2 {
						v = -v
					}
					v += 0 // −0 → +0 (SPEC §1.3)
					if v-v != 0 {
						if b := worst[i]; b.g < 0 || int(members[j]) < b.g || (int(members[j]) == b.g && int(q) < b.q) {
							worst[i] = bad{int(members[j]), int(q)}
						}
					}
					sc[j] = v
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	first := bad{-1, -1}
	for _, b := range worst {
		if b.g >= 0 && (first.g < 0 || b.g < first.g || (b.g == first.g && b.q < first.q)) {
			first = b
		}
	}
	if first.g >= 0 {
		return s.checkFinite(nanScore, first.q, first.g)
	}
	return nil
}

var nanScore = func() float64 { var z float64; return z / z }()

// tileHasNegative reports whether some pair of the tile (queries [q0, q1),
// gallery rows [g0, g1)) is a negative: otherwise the pass need not score it
// (unless candidates are kept for the run export).
func (s *scorer) tileHasNegative(q0, q1, g0, g1 int) bool {
	c := s.p.Classes
	k := c.Query[q0]
	for _, x := range c.Query[q0:q1] {
		if x != k {
			return true
		}
	}
	for _, x := range c.Gallery[g0:g1] {
		if x != k {
			return true
		}
	}
	return false
}

// skippedTileExclusions checks the finiteness of the excluded pairs of a tile
// that is not scored: the classic pass scores excluded pairs too and fails
// on a non-finite one, so the implicit path must fail identically.
func (s *scorer) skippedTileExclusions(q0, q1, g0, g1 int, w *workspace) error {
	if s.p.Exclusions == nil {
		return nil
	}
	d := s.d
	for q := q0; q < q1; q++ {
		ex := s.p.Exclusions[q]
		for i, _ := slices.BinarySearch(ex, g0); i < len(ex) && ex[i] < g1; i++ {
			g := ex[i]
			var v float64
			if s.o.Precision == Float64 {
				w.q64 = growTo(w.q64, 2*d)
				a, b := w.q64[:d], w.q64[d:2*d]
				s.queryRow64(q, a)
				copy(b, s.g.block64(g, g+1, b))
				if s.o.Similarity == SquaredL2 {
					v = -kernel.SqDistRow64(a, b)
				} else {
					v = kernel.DotRow64(a, b)
				}
			} else {
				w.q32 = growTo(w.q32, 2*d)
				w.tmp = growTo(w.tmp, d)
				a, b := w.q32[:d], w.q32[d:2*d]
				s.queryRow32(q, a, w.tmp)
				copy(b, s.g.block32(g, g+1, b, w.tmp))
				if s.o.Similarity == SquaredL2 {
					v = -float64(kernel.SqDistRow32(a, b))
				} else {
					v = float64(kernel.DotRow32(a, b))
				}
			}
			if err := s.checkFinite(v, q, g); err != nil {
				return err
			}
		}
	}
	return nil
}

// consumeClasses folds one query's row of block scores into the partial
// result under implicit relevance: negatives are counted against the
// sorted positives, positives only feed the kept candidates.
func consumeClasses[T float32 | float64](s *scorer, part *partial, q, g0 int, row []T) error {
	if s.bucketedRow(part, q, g0, len(row)) {
		return consumeClassesBucketed(s, part, q, g0, row)
	}
	st, c := s.cls, s.p.Classes
	k := c.Query[q]
	os, oi, beaten := st.ordScore[q], st.ordIndex[q], st.beaten[q]
	last := len(os) - 1
	lastScore, lastIndex := math.Inf(1), -1 // a query without negatives counts nothing
	if last >= 0 {
		lastScore, lastIndex = os[last], int(oi[last])
	}
	neg := s.o.Similarity == SquaredL2
	keep := part.all != nil || part.top != nil
	var excl []int
	if s.p.Exclusions != nil {
		excl = s.p.Exclusions[q]
	}
	exPtr, _ := slices.BinarySearch(excl, g0)
	best, hasBest := part.best[q], part.hasBest[q]
	gal := c.Gallery[g0 : g0+len(row)]
	for j, x := range row {
		v := float64(x)
		if neg {
			v = -v
		}
		g := g0 + j
		if exPtr < len(excl) && excl[exPtr] == g {
			exPtr++
			if v-v != 0 {
				return s.checkFinite(v, q, g)
			}
			continue // excluded: never counts
		}
		if gal[j] == k { // an eligible positive: already placed by the sort
			if keep {
				keepCandidate(part, q, v, g)
			}
			continue
		}
		if v-v != 0 {
			return s.checkFinite(v, q, g)
		}
		if !hasBest || v > best {
			best, hasBest = v+0, true
		}
		if v > lastScore || (v == lastScore && g < lastIndex) {
			lo := firstPreceded(os, oi, st.buckets[q], v, g)
			if part.cbeaten != nil {
				part.cbeaten[st.off[q]+lo]++
			} else {
				atomic.AddInt32(&beaten[lo], 1)
			}
		}
		if keep {
			keepCandidate(part, q, v, g)
		}
	}
	part.best[q], part.hasBest[q] = best, hasBest
	return nil
}

func keepCandidate(part *partial, q int, v float64, g int) {
	c := Candidate{Index: g, Score: v + 0} // +0 turns −0 into +0
	if part.all != nil {
		part.all[q] = append(part.all[q], c)
	} else {
		part.top[q].offer(c)
	}
}

// classResult assembles query q's result; it releases the per-query state.
func (s *scorer) classResult(q int, parts []*partial) QueryResult {
	if s.o.SortedRanks {
		return s.classResultSorted(q, parts)
	}
	st, c := s.cls, s.p.Classes
	members := c.Members(int(c.Query[q]))
	os, oi, beaten, ex := st.ordScore[q], st.ordIndex[q], st.beatenOf(q, parts), st.excluded[q]
	rankOf := make([]int, len(members))
	var n int
	var sc []float64 // member order
	if os == nil {
		// No negatives: the rank order of the positives is all there is.
		rs := sorterPool.Get().(*radixSorter)
		ord := rs.rankOrder(st.scores[q], ex)
		for r, i := range ord {
			rankOf[i] = 1 + r
		}
		n, sc = len(ord), st.scores[q]
		sorterPool.Put(rs)
	} else {
		sc = make([]float64, len(members))
		count := 0
		for r, g := range oi {
			count += int(beaten[r])
			m := st.memberPos[g]
			rankOf[m], sc[m] = 1+r+count, os[r]
		}
		n = len(oi)
	}
	res := QueryResult{Positives: make([]retrieval.Positive, 0, n), Ranks: make([]int, 0, n), Scores: make([]float64, 0, n)}
	for m, g := range members {
		if ex != nil && ex[m] {
			continue
		}
		res.Positives = append(res.Positives, retrieval.Positive{Index: int(g), Grade: 1})
		res.Ranks = append(res.Ranks, rankOf[m])
		res.Scores = append(res.Scores, sc[m])
	}
	st.beaten[q], st.excluded[q], st.scores[q] = nil, nil, nil
	st.ordScore[q], st.ordIndex[q], st.buckets[q] = nil, nil, nil
	return res
}

// oneToN returns the ranks 1..n of a query without negatives, as a view of
// one slice shared by all such queries (results are read-only): thousands
// of queries with 20,000 positives each allocate nothing for their ranks.
func (st *classState) oneToN(n int) []int {
	st.ranksOnce.Do(func() {
		most := 0
		for k := range st.c.NumClasses() {
			most = max(most, len(st.c.Members(k)))
		}
		st.ranks = make([]int, most)
		for i := range st.ranks {
			st.ranks[i] = 1 + i
		}
	})
	return st.ranks[:n:n]
}

// classResultSorted is classResult under Options.SortedRanks: the ranks come
// out of the rank-ordered positives already ascending, and a query without
// negatives needs no order at all (its positives rank 1..P).
func (s *scorer) classResultSorted(q int, parts []*partial) QueryResult {
	st, c := s.cls, s.p.Classes
	members := c.Members(int(c.Query[q]))
	os, oi, beaten, ex := st.ordScore[q], st.ordIndex[q], st.beatenOf(q, parts), st.excluded[q]
	var ranks []int
	var sc []float64 // member order, excluded slots included
	if os == nil {
		sc = st.scores[q]
		n := len(sc)
		if ex != nil {
			n = 0
			for _, e := range ex {
				if !e {
					n++
				}
			}
		}
		ranks = s.cls.oneToN(n)
	} else if st.pooled != nil {
		// Streamed pooled summary: the scores were folded already, the
		// result carries only the best one.
		ranks = make([]int, len(oi))
		count := 0
		for r := range oi {
			count += int(beaten[r])
			ranks[r] = 1 + r + count
		}
	} else {
		sc = make([]float64, len(members))
		ranks = make([]int, len(oi))
		count := 0
		for r, g := range oi {
			count += int(beaten[r])
			ranks[r] = 1 + r + count
			sc[st.memberPos[g]] = os[r]
		}
	}
	st.beaten[q], st.excluded[q] = nil, nil
	st.ordScore[q], st.ordIndex[q], st.buckets[q] = nil, nil, nil
	if st.pooled != nil {
		st.scores[q] = nil
		return QueryResult{Ranks: ranks, MaxPositive: st.pooled.maxPos[q]}
	}
	if ex != nil { // drop the excluded members' slots, in place
		n := 0
		for m, v := range sc {
			if !ex[m] {
				sc[n] = v
				n++
			}
		}
		sc = sc[:n]
	}
	st.scores[q] = nil
	return QueryResult{Ranks: ranks, Scores: sc}
}

var sorterPool = sync.Pool{New: func() any { return new(radixSorter) }}

// radixSorter puts member positions into rank order: score descending, then
// lower gallery index first. Member positions ascend with the gallery index,
// so a stable sort on the score alone gives the tie rule; an LSD radix sort
// over an order-preserving bit pattern is stable and linear, which matters
// at 20,000 positives per query (rankOrder sorts on the float32 rounding
// and then orders equal roundings exactly).
type radixSorter struct {
	keys32, keys32b []uint32
	pos, pos2       []int32
}

func (r *radixSorter) rankOrder(scores []float64, excluded []bool) []int32 {
	// Pass 1: an LSD radix sort on a 32-bit key, the score rounded to
	// float32: rounding is monotone, so the order is right except inside
	// runs of equal coarse keys (nearly always single elements), which pass
	// 2 puts in exact order (full score descending, lower position first).
	// Three digit passes instead of six for the full 64-bit key.
	r.keys32, r.pos = r.keys32[:0], r.pos[:0]
	for i, v := range scores {
		if excluded != nil && excluded[i] {
			continue
		}
		r.keys32 = append(r.keys32, descKey32(float32(v)))
		r.pos = append(r.pos, int32(i))
	}
	n := len(r.keys32)
	if n == 0 {
		return r.pos
	}
	r.keys32b, r.pos2 = growTo(r.keys32b, n), growTo(r.pos2, n)
	const bits = 11
	var count [1 << bits]int32
	for shift := uint(0); shift < 32; shift += bits {
		count = [1 << bits]int32{}
		for _, k := range r.keys32 {
			count[(k>>shift)&(1<<bits-1)]++
		}
		if int(count[(r.keys32[0]>>shift)&(1<<bits-1)]) == n {
			continue // every key has this digit: the pass changes nothing
		}
		sum := int32(0)
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for i, k := range r.keys32 {
			d := (k >> shift) & (1<<bits - 1)
			r.keys32b[count[d]], r.pos2[count[d]] = k, r.pos[i]
			count[d]++
		}
		r.keys32, r.keys32b = r.keys32b, r.keys32
		r.pos, r.pos2 = r.pos2, r.pos
	}
	// Pass 2: insertion sort inside each run of equal coarse keys.
	before := func(a, b int32) bool { // a ranks before b
		sa, sb := scores[a], scores[b]
		return sa > sb || (sa == sb && a < b)
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && r.keys32[hi] == r.keys32[lo] {
			hi++
		}
		if hi-lo > 16 { // long runs (scores within a float32 rounding)
			slices.SortFunc(r.pos[lo:hi], func(a, b int32) int {
				if before(a, b) {
					return -1
				}
				if before(b, a) {
					return 1
				}
				return 0
			})
			lo = hi
			continue
		}
		for i := lo + 1; i < hi; i++ {
			p := r.pos[i]
			j := i
			for j > lo && before(p, r.pos[j-1]) {
				r.pos[j] = r.pos[j-1]
				j--
			}
			r.pos[j] = p
		}
		lo = hi
	}
	return r.pos // scratch: valid until the next call
}

// descKey32 maps a float32 (not NaN; −0 compared as +0) to a uint32 that
// ascends as the value descends.
func descKey32(f float32) uint32 {
	b := math.Float32bits(f + 0)
	if b>>31 != 0 {
		b = ^b
	} else {
		b |= 1 << 31
	}
	return ^b
}

// EligibleCounts is the number of eligible positives of every query of a
// problem that passed Score's checks.
func (p Problem) EligibleCounts() []int {
	out := make([]int, p.Queries.Rows())
	for q := range out {
		var ex []int
		if p.Exclusions != nil {
			ex = p.Exclusions[q]
		}
		if p.Classes != nil {
			out[q] = p.Classes.EligibleCount(q, ex)
		} else {
			out[q] = len(retrieval.EligiblePositives(p.Relevance[q], ex))
		}
	}
	return out
}

// slotBuckets narrows the counting search: the rank-ordered positive scores
// (descending) are cut into equal-width buckets of score, and a negative is
// compared only with the thresholds in its own bucket. bucket() is a
// monotone non-decreasing function of the score (subtraction, positive
// scaling and truncation all preserve order), so a threshold in a lower
// bucket is strictly below the negative (it precedes that positive) and one
// in a higher bucket strictly above (it does not): only equal buckets need
// the exact comparison with the tie rule.
type slotBuckets struct {
	lo, scale float64
	nb        int
	// first[k]: first rank slot whose bucket is ≤ k (len(desc) when none),
	// held in first16 when every slot fits 16 bits (a table a quarter the
	// size stays in cache while the query's row is counted), else in first.
	first   []int32
	first16 []uint16
}

func newSlotBuckets(desc []float64) *slotBuckets {
	nb := min(maxSlotBuckets, slotBucketsPerThreshold*len(desc))
	lo, hi := desc[len(desc)-1], desc[0]
	b := &slotBuckets{lo: lo, nb: nb}
	if len(desc) <= math.MaxUint16 {
		b.first16 = make([]uint16, nb)
	} else {
		b.first = make([]int32, nb)
	}
	if hi > lo && !math.IsInf(hi-lo, 0) {
		b.scale = float64(nb) / (hi - lo)
	}
	// Slots descend in score, so their buckets do not increase: walking
	// them from the last, slot r is the last one above every bucket below
	// its own.
	k := 0
	for r := len(desc) - 1; r >= 0 && k < nb; r-- {
		for bk := b.bucket(desc[r]); k < bk; k++ {
			b.set(k, r+1)
		}
	}
	for ; k < nb; k++ {
		b.set(k, 0)
	}
	return b
}

func (b *slotBuckets) set(k, r int) {
	if b.first16 != nil {
		b.first16[k] = uint16(r)
	} else {
		b.first[k] = int32(r)
	}
}

func (b *slotBuckets) at(k int) int {
	if b.first16 != nil {
		return int(b.first16[k])
	}
	return int(b.first[k])
}

func (b *slotBuckets) bucket(v float64) int {
	nb := b.nb
	x := (v - b.lo) * b.scale
	switch {
	case !(x >= 0): // below every threshold (or a zero range)
		return 0
	case x >= float64(nb-1):
		return nb - 1
	}
	return int(x)
}

// window returns the slot range [lo, lo+n) that holds the first slot a
// candidate of score v precedes: slots before lo have higher buckets (it
// precedes none of them), slots from first[k−1] on have lower buckets (it
// precedes all of them).
func (b *slotBuckets) window(v float64) (lo, n int) {
	k := b.bucket(v)
	lo = b.at(k)
	hi := math.MaxInt32 // no lower bucket: the caller caps at the last slot
	if k > 0 {
		hi = b.at(k - 1)
	}
	return lo, hi - lo + 1
}

// firstPreceded is the first rank slot (scores os descending, gallery
// indices oi) that candidate (v, g) precedes, given that it precedes the
// last one: a branch-free lower bound inside the bucket window.
func firstPreceded(os []float64, oi []int32, b *slotBuckets, v float64, g int) int {
	last := len(os) - 1
	lo, n := 0, last+1
	if b != nil {
		lo, n = b.window(v)
		n = min(n, last+1-lo)
	}
	for n > 1 {
		half := n >> 1
		mid := lo + half
		if !(v > os[mid-1] || (v == os[mid-1] && g < int(oi[mid-1]))) {
			lo = mid
		}
		n -= half
	}
	return lo
}
