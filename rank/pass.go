package rank

import (
	"container/heap"
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
)

// worker is one worker's state in a chunk's gallery pass: its counts, best
// negatives and kept candidates (merged after the pass, merge.go), and its
// buffers.
type worker[T working] struct {
	cnt     []int32   // per rank slot of the chunk's queries (chunk.off)
	best    []float64 // per chunk query: best negative seen
	hasBest []bool
	top     []topHeap     // TopN
	all     [][]Candidate // FullRanking
	// buffers
	g, qb, out []T
	tmp        []float64
	runs       []negRun
	pos, hits  []int32
	ex         []int32
	cheap      cheapState[T] // the screen's buffers (screen.go)
	fs         foldScratch[T]
	// worker time in the pass
	kernel, fold time.Duration
}

// pass scores the chunk's queries against the plan's gallery rows, block by
// block in parallel, folding every row of scores into its worker's state.
func (s *scorer[T]) pass(ctx context.Context, c *chunk[T]) ([]*worker[T], error) {
	if !s.chosen {
		s.screen, s.chosen = s.chooseScreen(ctx, c), true
	}
	if s.screen != nil {
		s.screen.chunk(c)
	}
	n := c.q1 - c.q0
	var mu sync.Mutex
	var ws []*worker[T]
	free := s.workers
	newWorker := func() *worker[T] { // the chunks' passes reuse the workers' buffers
		var w *worker[T]
		if k := len(ws); k < len(free) {
			w = free[k]
		} else {
			w = &worker[T]{tmp: make([]float64, s.d)}
			s.workers = append(s.workers, w)
		}
		w.cnt, w.best, w.hasBest = growTo(w.cnt, c.slots), growTo(w.best, n), growTo(w.hasBest, n)
		clear(w.cnt)
		clear(w.best)
		clear(w.hasBest)
		w.top, w.all = nil, nil
		w.kernel, w.fold = 0, 0
		switch {
		case s.pr.o.FullRanking:
			w.all = make([][]Candidate, n)
		case s.pr.o.TopN > 0:
			w.top = make([]topHeap, n)
			for i := range w.top {
				w.top[i].limit = s.pr.o.TopN
			}
		}
		mu.Lock()
		ws = append(ws, w)
		mu.Unlock()
		return w
	}
	blocks := passBlocks(s.pl.rows.len(), s.pl.gb)
	qb := s.pl.queryTile(min(s.pr.o.QueryBatch, n), c.most)
	if s.q == nil && !s.pl.sparse {
		qb = s.pl.blockRows(qb, s.d)
	}
	t0 := time.Now()
	task := func(i int, w *worker[T]) error {
		b := s.pl.rows.block(blocks[i][0], blocks[i][1])
		switch {
		case s.pl.sparse:
			return s.sparseBlock(ctx, w, c, b)
		case s.screen != nil:
			return s.screenedBlock(ctx, w, c, b, qb)
		}
		return s.exhaustiveBlock(ctx, w, c, b, c.q0, c.q1, qb)
	}
	tasks := len(blocks)
	if mqb, long := s.queryMajor(c, qb); long > 0 {
		// Query-major: a task is a tile of queries over long blocks of
		// the rows, so a query's counting state is read into the cache
		// once per long block instead of once per block.
		// Tiles of at most mqb queries, as many as a multiple of the
		// threads, so that no worker is left with the last one alone.
		qb = mqb
		per := s.pr.threads * ((n + qb*s.pr.threads - 1) / (qb * s.pr.threads))
		qb = (n + per - 1) / per
		blocks, tasks = passBlocks(s.pl.rows.len(), long), (n+qb-1)/qb
		task = func(i int, w *worker[T]) error {
			q0 := c.q0 + i*qb
			for _, r := range blocks {
				if err := s.exhaustiveBlock(ctx, w, c, s.pl.rows.block(r[0], r[1]), q0, min(q0+qb, c.q1), qb); err != nil {
					return err
				}
			}
			return nil
		}
	}
	err := parallelIn(ctx, s.pr.threads, tasks, s.pl.static, newWorker, task)
	s.stats.Pass += time.Since(t0)
	for _, w := range ws {
		s.stats.Kernel += w.kernel
		s.stats.Fold += w.fold
	}
	if s.screen != nil {
		s.stats.Screened, s.stats.Screen = true, s.screen.stats()
	}
	return ws, err
}

// queryMajor returns the query tile and the gallery rows of a long block
// when the chunk's pass runs query-major (long 0: block-major). That pays
// when a query's counting state (its thresholds, bucket table and counters:
// about 20 bytes per positive) is larger than a core's cache can keep for a
// tile of queries: block-major, a worker reads it back for every block
// (warmState) and places each score against it, while query-major folds a
// query's row over a long block at once. Its tiles are wider than the
// block-major ones (only one query's state is in use at a time), so that
// the long blocks' rows, read once per tile, cost little next to the
// products. The exhaustive exact pass only (a screen decides pairs by the
// block), with enough tiles for every thread. Measured on 2,000 × 100,000
// float32 rows in 10 classes, one thread (BenchmarkLabelClasses): at D = 64
// 1.83 s block-major, 1.62 s in tiles of 16 queries, 1.63 s of 32; at
// D = 384 3.65 s, 3.64 s and 3.07 s.
func (s *scorer[T]) queryMajor(c *chunk[T], qb int) (tile, long int) {
	if s.screen != nil || s.pl.sparse {
		return 0, 0
	}
	if s.pl.longRows > 0 { // forced (tests)
		return qb, min(s.pl.longRows, s.pl.rows.len())
	}
	tile = min(queryMajorTile, c.q1-c.q0)
	if c.most < warmThresholds || (c.q1-c.q0+tile-1)/tile < 2*s.pr.threads {
		return 0, 0
	}
	long = queryMajorRows
	if direct[T](s.g, s.pl.rows.block(0, 1)) == nil {
		long = s.pl.blockRows(long, s.d) // produced rows, bounded
	}
	return tile, min(long, s.pl.rows.len())
}

// A query-major tile: 32 queries over long blocks of 65,536 gallery rows
// (8 MiB of float32 scores per worker).
const (
	queryMajorTile = 32
	queryMajorRows = 1 << 16
)

// queryRows are the working rows of queries [q0, q1).
func (s *scorer[T]) queryRows(w *worker[T], q0, q1 int) []T {
	if s.q != nil {
		return s.q[(q0-s.qlo)*s.d : (q1-s.qlo)*s.d]
	}
	w.qb = growTo(w.qb, (q1-q0)*s.d)
	return produce(s.pr.q, q0, q1, w.qb, w.tmp)
}

// exhaustiveBlock scores block b against the chunk's queries [q0, q1) by
// the exact kernels, a tile of qb queries at a time.
func (s *scorer[T]) exhaustiveBlock(ctx context.Context, w *worker[T], c *chunk[T], b block, qlo, qhi, qb int) error {
	g := direct[T](s.g, b) // the stored (or cached) rows: no buffer
	if g == nil {
		w.g = growTo(w.g, b.n*s.d)
		g = blockRows(s.g, b, w.g, w.tmp)
	}
	cls := s.blockClass(b)
	for q0 := qlo; q0 < qhi; q0 += qb {
		if err := ctx.Err(); err != nil {
			return err
		}
		q1 := min(q0+qb, qhi)
		if err := s.exactTile(w, c, b, g, q0, q1, cls); err != nil {
			return err
		}
	}
	return nil
}

// exactTile scores queries [q0, q1) against block b (working rows g)
// exactly and folds the rows; cls is the block's class (blockClass).
func (s *scorer[T]) exactTile(w *worker[T], c *chunk[T], b block, g []T, q0, q1, cls int) error {
	qn := q1 - q0
	defer s.meter.add(int64(qn) * int64(b.n))
	if cls >= 0 && !s.pl.keep && s.tileWithoutNegatives(q0, q1, cls) {
		return s.checkExcluded(w, b, g, q0, q1)
	}
	out := growTo(w.out, qn*b.n)
	w.out = out
	t0 := time.Now()
	s.ex.block(s.queryRows(w, q0, q1), qn, g, b.n, out)
	t1 := time.Now()
	w.kernel += t1.Sub(t0)
	if !allFinite(out) {
		return errNonFinite
	}
	for i := range qn {
		s.foldRow(w, c, q0-c.q0+i, b, out[i*b.n:(i+1)*b.n])
	}
	w.fold += time.Since(t1)
	return nil
}

// blockClass is the class of every row of block b under label relevance,
// or −1 (explicit relevance, or rows of several classes).
func (s *scorer[T]) blockClass(b block) int {
	cl := s.rel.classes
	if cl == nil {
		return -1
	}
	k := cl.Gallery[b.g0]
	for j := 1; j < b.n; j++ {
		if cl.Gallery[b.global(j)] != k {
			return -1
		}
	}
	return int(k)
}

// tileWithoutNegatives reports whether every query of [q0, q1) has class
// cls, the class of every row of the block: then the tile holds positives
// and excluded pairs only, and nothing in it needs a score (the positives
// have theirs).
func (s *scorer[T]) tileWithoutNegatives(q0, q1, cls int) bool {
	for _, k := range s.rel.classes.Query[q0:q1] {
		if int(k) != cls {
			return false
		}
	}
	return true
}

// checkExcluded checks that the excluded pairs of a tile that is not
// scored have finite scores: every pair of the problem is checked
// (failure.go), whatever the path.
func (s *scorer[T]) checkExcluded(w *worker[T], b block, g []T, q0, q1 int) error {
	if s.rel.excl == nil {
		return nil
	}
	for q := q0; q < q1; q++ {
		w.ex = s.rel.excludedIn(q, b, w.ex[:0])
		if len(w.ex) == 0 {
			continue
		}
		qr := s.queryRows(w, q, q+1)
		var v [1]T
		for _, j := range w.ex {
			if s.ex.block(qr, 1, g[int(j)*s.d:(int(j)+1)*s.d], 1, v[:]); v[0]-v[0] != 0 {
				return errNonFinite
			}
		}
	}
	return nil
}

// foldRow folds query c.q0+i's row of exact scores over block b into the
// worker's state: each eligible negative is counted in the rank slot of the
// first positive it precedes and may be the nearest negative; with a run
// export every eligible candidate is offered to the kept list.
func (s *scorer[T]) foldRow(w *worker[T], c *chunk[T], i int, b block, row []T) {
	q := c.q0 + i
	var pos *[]int32
	if s.pl.keep {
		w.pos = w.pos[:0]
		pos = &w.pos
	}
	if pos == nil && s.foldMembers(w, c, i, b, row) {
		return
	}
	w.runs = s.rel.runs(q, b, w.runs[:0], pos)
	if len(w.runs) > 0 {
		th := &c.th[i]
		cnt := w.cnt[c.off[i] : c.off[i]+len(th.score)+1]
		best, has := w.best[i], w.hasBest[i]
		if th.b != nil {
			if m := countBucketed(th, cnt, row, w.runs, b, &w.fs); !has || m > best {
				best, has = m, true
			}
		} else {
			for _, r := range w.runs {
				m := countRun(th, cnt, row[r[0]:r[1]], b.global(int(r[0])), b.stride, &w.hits)
				if !has || m > best {
					best, has = m, true
				}
			}
		}
		w.best[i], w.hasBest[i] = best, has
	}
	if pos != nil {
		for _, r := range w.runs {
			for j := r[0]; j < r[1]; j++ {
				w.offer(i, row[j], b.global(int(j)))
			}
		}
		for _, j := range w.pos {
			w.offer(i, row[j], b.global(int(j)))
		}
	}
}

// foldMembers folds the row the way countRow would, without its runs, when
// that is the way: float32 scores with a bucket table, a contiguous block
// holding no excluded row of the query and at least three quarters
// negatives. The query's positives in the block are a slice of its list
// (for label relevance, of its class's members). It reports whether it
// folded the row.
func (s *scorer[T]) foldMembers(w *worker[T], c *chunk[T], i int, b block, row []T) bool {
	q := c.q0 + i
	if b.stride != 1 || !c.neg[i] {
		return false
	}
	th := &c.th[i]
	if th.b == nil || th.b.k32 == nil {
		return false
	}
	end := int32(b.g0 + b.n)
	if ex := s.rel.exclusions(q); len(ex) > 0 {
		if e, _ := slices.BinarySearch(ex, b.g0); e < len(ex) && ex[e] < int(end) {
			return false
		}
	}
	list := s.rel.list(q)
	lo, _ := slices.BinarySearch(list, int32(b.g0))
	hi, _ := slices.BinarySearch(list[lo:], end)
	members := list[lo : lo+hi]
	neg := b.n - len(members)
	if neg == 0 || 4*neg < 3*b.n {
		return false
	}
	cnt := w.cnt[c.off[i] : c.off[i]+len(th.score)+1]
	if len(th.score) >= warmThresholds {
		warmState(th, cnt, &w.fs)
	}
	if m := countMembers(th, cnt, row, members, b, &w.fs); !w.hasBest[i] || m > w.best[i] {
		w.best[i], w.hasBest[i] = m, true
	}
	return true
}

func (w *worker[T]) offer(i int, v T, g int) {
	c := Candidate{Index: g, Score: float64(v) + 0} // +0 turns −0 into +0
	if w.all != nil {
		w.all[i] = append(w.all[i], c)
	} else {
		w.top[i].offer(c)
	}
}

// countRun counts a run of eligible negatives (scores seg, the first at
// global row g, the next stride rows on) into cnt, the slots of thresholds
// th without a bucket table (slot len: precedes no positive), and returns
// their largest score.
func countRun[T working](th *thresholds[T], cnt []int32, seg []T, g, stride int, hits *[]int32) float64 {
	p := len(th.score)

	// Few positives: a vector pass counts (or lists) the negatives that
	// precede the last positive; only those can precede any.
	last, lastIndex := th.score[p-1], int(th.index[p-1])
	tieBefore := 0 // offsets below this win a tie with the last positive
	if lastIndex > g {
		tieBefore = (lastIndex - g + stride - 1) / stride
	}
	m, n, listed := precedingLast(seg, last, tieBefore, p > 1, (*hits)[:0])
	*hits = listed
	if p == 1 {
		cnt[0] += int32(n)
		return m
	}
	for _, j := range listed {
		cnt[th.firstPreceded(seg[j], g+int(j)*stride)]++
	}
	return m
}

// countBucketed counts the runs of eligible negatives of one row (scores
// row over block b) against many positives, through the bucket table, and
// returns their largest score. Float32 scores in a block of at least three
// quarters negatives are placed as the whole row, where it lies, and only
// the negatives' slots are counted (countRow: the kernel places a score
// for less than it costs to gather one); otherwise the negatives are
// first gathered into batches of len(fs.k) (runs between positives can be
// short).
func countBucketed[T working](th *thresholds[T], cnt []int32, row []T, runs []negRun, b block, fs *foldScratch[T]) float64 {
	neg := 0
	for _, r := range runs {
		neg += int(r[1] - r[0])
	}
	if 4*neg >= 3*b.n && th.b.k32 != nil {
		if len(th.score) >= warmThresholds {
			warmState(th, cnt, fs)
		}
		return countRow(th, cnt, row, runs, b, fs)
	}
	m := T(math.Inf(-1))
	n := 0
	place := func() {
		v, g, ks := fs.v[:n], fs.g[:n], fs.k[:n]
		th.place(v, g, ks)
		for j, s := range ks {
			if s < 0 {
				s = int32(th.firstPreceded(v[j], int(g[j])))
			}
			cnt[s]++
		}
		n = 0
	}
	for _, r := range runs {
		for j := int(r[0]); j < int(r[1]); j++ {
			x := row[j]
			if x > m {
				m = x
			}
			fs.v[n], fs.g[n] = x, int32(b.global(j))
			if n++; n == len(fs.v) {
				place()
			}
		}
	}
	place()
	return float64(m)
}

// warmThresholds is the number of positives from which a query's counting
// state (about 20 bytes per positive) is read ahead of a row's placement.
const warmThresholds = 1024

// countRow places the scores of the row from its first negative to its
// last and counts those of the runs (countMasked), the positives and
// excluded rows between the runs masked.
func countRow[T working](th *thresholds[T], cnt []int32, row []T, runs []negRun, b block, fs *foldScratch[T]) float64 {
	if len(runs) == 0 {
		return math.Inf(-1)
	}
	fs.masked = fs.masked[:0]
	for k := 1; k < len(runs); k++ {
		for j := runs[k-1][1]; j < runs[k][0]; j++ {
			fs.masked = append(fs.masked, j)
		}
	}
	return countMasked(th, cnt, row, int(runs[0][0]), int(runs[len(runs)-1][1]), b, fs)
}

// countMembers counts every score of a contiguous block's row but those of
// the query's positives, members (ascending global rows, all in the block;
// no excluded row in it), masked (countMasked).
func countMembers[T working](th *thresholds[T], cnt []int32, row []T, members []int32, b block, fs *foldScratch[T]) float64 {
	fs.masked = growTo(fs.masked, len(members))
	for k, g := range members {
		fs.masked[k] = g - int32(b.g0)
	}
	return countMasked(th, cnt, row, 0, b.n, b, fs)
}

// countMasked places the scores of row offsets [lo, hi), len(fs.k) at a
// time, and counts them, but for the offsets fs.masked (positives and
// excluded rows): those are set to −Inf for the count and restored. −Inf
// precedes no positive, so each lands in slot p and is taken back from it,
// and it is never the largest: one branch-free loop counts every placed
// score, however short the runs between interleaved positives, and no
// placement ties with a positive's own score. It returns the largest
// counted score.
func countMasked[T working](th *thresholds[T], cnt []int32, row []T, lo, hi int, b block, fs *foldScratch[T]) float64 {
	if fs.rows != b {
		fs.rows = b
		fs.global = growTo(fs.global, b.n)
		for j := range fs.global {
			fs.global[j] = int32(b.global(j))
		}
	}
	fs.saved = growTo(fs.saved, len(fs.masked))
	inf := T(math.Inf(-1))
	for k, j := range fs.masked {
		fs.saved[k], row[j] = row[j], inf
	}
	m := inf
	seg := len(fs.k)
	for a := lo; a < hi; a += seg {
		e := min(a+seg, hi)
		v, g, ks := row[a:e], fs.global[a:e], fs.k[:e-a]
		th.place(v, g, ks)
		for j, s := range ks {
			x := v[j]
			if x > m {
				m = x
			}
			if s < 0 {
				s = int32(th.firstPreceded(x, int(g[j])))
			}
			cnt[s]++
		}
	}
	cnt[len(th.score)] -= int32(len(fs.masked))
	for k, j := range fs.masked {
		row[j] = fs.saved[k]
	}
	return float64(m)
}

// place sets ks[j] to the first slot that score v[j] (gallery row g[j])
// precedes. Float32 scores with a 16-bit table go through
// kernel.PlaceBuckets32 (16 at a time on AVX-512), which leaves −1 where a
// bucket holds more than kernel.PlaceWidth thresholds (the caller
// searches); the loop here places a score that meets at most one threshold
// without a branch on the data, so that consecutive placements overlap.
func (th *thresholds[T]) place(v []T, g, ks []int32) {
	bt := th.b
	if bt.k32 != nil && bt.first16 != nil {
		kernel.PlaceBuckets32(bt.k32, any(v).([]float32), g, any(th.score).([]float32), th.index, ks)
		return
	}
	// sc and ix have room for one more slot (newChunk), read but never
	// used when a bucket holds no threshold.
	sc, ix := th.score[:len(th.score)+1], th.index[:len(th.index)+1]
	f := bt.first16
	if f == nil { // more thresholds than 16-bit slots
		for j, x := range v {
			ks[j] = int32(th.firstPreceded(x, int(g[j])))
		}
		return
	}
	// Float64 thresholds (float32 ones took the kernel): the buckets
	// first (independent arithmetic), then the slots.
	lo, scale, top := bt.lo, bt.scale, float64(bt.nb-1)
	for j, x := range v {
		y := (float64(x) - lo) * scale
		if !(y >= 0) { // NaN: an overflowing difference times a zero scale
			y = 0
		}
		ks[j] = int32(min(y, top))
	}
	for j, k := range ks {
		x := v[j]
		// f[k+1] ≤ slot ≤ f[k]: the slots of k's thresholds lie between.
		r, h := int(f[k+1]), int(f[k])
		if h-r > 1 { // several thresholds in the bucket (rare)
			for ; r < h; r++ {
				if y := sc[r]; x > y || (x == y && g[j] < ix[r]) {
					break
				}
			}
			ks[j] = int32(r)
			continue
		}
		y, i := sc[r], ix[r]
		after := 1 - (b2i(x > y) | (b2i(x == y) & b2i(g[j] < i)))
		ks[j] = int32(r + (h-r)&-after)
	}
}

// foldScratch is a worker's batch of negatives for countBucketed.
type foldScratch[T working] struct {
	k, g [256]int32
	v    [256]T
	// global are the global rows of block rows (countRow32).
	global []int32
	rows   block
	masked []int32 // countMasked's offsets
	saved  []T     // and their scores
	warmed uint32  // keeps warmState's loads
}

// warmState reads a query's counting state — its bucket table, threshold
// scores and indices, and counters — one cache line at a time before a
// whole row is placed: independent sequential loads stream it in from the
// outer caches at their bandwidth, while the placement's gathers, which
// touch most of its lines in random order, would otherwise each wait for a
// miss (10 classes over 100,000 rows hold 200 KB per query, and a tile's
// queries together more than a core's L2). Measured on 2,000 × 100,000 ×
// 64 in 10 classes, one thread (BenchmarkLabelClasses): 4.0 s → 2.1–2.6 s.
// (PREFETCHT1 over the same lines was slower: most prefetches were
// dropped.)
func warmState[T working](th *thresholds[T], cnt []int32, fs *foldScratch[T]) {
	var s uint32
	tab := th.b.k32.Tab
	for k := 0; k < len(tab); k += 32 {
		s += uint32(tab[k])
	}
	for k := 0; k < len(th.score); k += 8 {
		if th.score[k] > 0 {
			s++
		}
	}
	for k := 0; k < len(th.index); k += 16 {
		s += uint32(th.index[k])
	}
	for k := 0; k < len(cnt); k += 16 {
		s += uint32(cnt[k])
	}
	fs.warmed += s
}

// precedingLast returns the largest value of seg, the number of values that
// precede the last positive (score last; offsets below tieBefore win a tie
// with it) and, when list is set, their offsets.
func precedingLast[T working](seg []T, last T, tieBefore int, list bool, hits []int32) (float64, int, []int32) {
	if f32, ok := any(seg).([]float32); ok {
		return precedingLast32(f32, float32(last), tieBefore, list, hits)
	}
	// Counts without a data-dependent branch; the tie branch is almost
	// never taken.
	m, n := T(math.Inf(-1)), 0
	for j, v := range seg {
		if v > m {
			m = v
		}
		n += b2i(v > last)
		if v == last && j < tieBefore {
			n++
		}
	}
	if list && n > 0 {
		for j, v := range seg {
			if v > last || (v == last && j < tieBefore) {
				hits = append(hits, int32(j))
			}
		}
	}
	return float64(m), n, hits
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// precedingLast32 is precedingLast for float32 scores, by the vector row
// scans of package kernel: one pass for the maximum, one that counts the
// values strictly above the last positive and lists the ties with it (or,
// when list is set, every value at or above it).
func precedingLast32(seg []float32, last float32, tieBefore int, list bool, hits []int32) (float64, int, []int32) {
	if len(seg) == 0 {
		return math.Inf(-1), 0, hits
	}
	m, _ := kernel.MaxFinite32(seg)
	inf := float32(math.Inf(1))
	cut := kernel.Cut{Above: last, Lo: last, Hi: last, High: inf} // ties only
	if list {
		cut.Hi = inf
	}
	hits = growTo(hits, len(seg))
	above, listed := kernel.Scan32(seg, cut, hits)
	n, k := above, 0
	for _, j := range listed {
		if seg[j] == last {
			if int(j) >= tieBefore {
				continue // a tie lost to the last positive: precedes none
			}
			n++
		}
		listed[k] = j
		k++
	}
	return float64(m), n, listed[:k]
}

// topHeap keeps the best `limit` candidates; its root is the worst kept one.
type topHeap struct {
	limit int
	c     []Candidate
}

func (h *topHeap) Len() int { return len(h.c) }
func (h *topHeap) Less(a, b int) bool {
	return precedes(h.c[b].Score, h.c[b].Index, h.c[a].Score, h.c[a].Index)
}
func (h *topHeap) Swap(a, b int) { h.c[a], h.c[b] = h.c[b], h.c[a] }
func (h *topHeap) Push(x any)    { h.c = append(h.c, x.(Candidate)) }
func (h *topHeap) Pop() any {
	x := h.c[len(h.c)-1]
	h.c = h.c[:len(h.c)-1]
	return x
}

func (h *topHeap) offer(c Candidate) {
	if len(h.c) < h.limit {
		heap.Push(h, c)
		return
	}
	if precedes(c.Score, c.Index, h.c[0].Score, h.c[0].Index) {
		h.c[0] = c
		heap.Fix(h, 0)
	}
}
