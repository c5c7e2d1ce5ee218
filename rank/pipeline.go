package rank

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// scorer runs the pipeline of one direction (the package doc) in the
// working precision T, over the queries [qlo, qhi) and the gallery rows of
// its plan.
type scorer[T working] struct {
	pr         *prepared
	pl         plan
	ex         exact[T]
	rel        *relevance
	d          int
	qlo, qhi   int
	q          []T     // the queries' working rows from qlo (nil: a sparse endpoint)
	g          *source // the gallery's rows (its working rows, when cached)
	stats      *Stats
	meter      *meter
	sink       *sink[T]  // pooled positive summary (nil: results carry Scores)
	screen     screen[T] // chosen at the first pass (nil: exhaustive tiles)
	chosen     bool      // the screen has been chosen
	sorted     bool      // results list sorted ranks (label relevance)
	emit       func(q int, r QueryResult) error
	out        *shardOut[T] // gallery-shard output instead of results (shard.go)
	ranks1     []int        // 1..n, shared by sorted results without negatives
	arenas     [2]*arena[T]
	workers    []*worker[T]    // the pass workers, reused by every chunk
	posWorkers []*posWorker[T] // the positives stage's
	sum        sync.WaitGroup  // the ordered sums of the chunks (sink)
	lastSum    chan struct{}   // closed when the last chunk's sum is taken
	ranksMu    sync.Mutex
}

// errNonFinite stops a stage at a non-finite exact score; the run then
// names the failing pair by the one rule of failure.go.
var errNonFinite = errors.New("non-finite score")

// run scores a prepared problem and hands every query's result to fn.
func scoreRun(ctx context.Context, pr *prepared, t0 time.Time, fn func(q int, r QueryResult) error) error {
	if pr.o.Precision == Float32 {
		return runAs[float32](ctx, pr, t0, fn)
	}
	return runAs[float64](ctx, pr, t0, fn)
}

func runAs[T working](ctx context.Context, pr *prepared, t0 time.Time, fn func(q int, r QueryResult) error) error {
	s := newScorer[T](ctx, pr, allRows(pr.ng), 0, pr.nq)
	s.emit = fn
	s.sorted = pr.o.SortedRanks && pr.rel.classes != nil
	s.stats.Prepare = time.Since(t0)
	s.cacheGallery(ctx, len(s.chunks()))
	if pr.o.Pooled != nil {
		s.sink = newSink[T](s)
		s.stats.PooledStreamed = true
		if err := s.sink.place(ctx); err != nil {
			if errors.Is(err, errNonFinite) {
				return s.failure(ctx)
			}
			return err
		}
	}
	if err := s.scoreAll(ctx); err != nil {
		return err
	}
	if s.sink != nil {
		sum, err := s.sink.summary(ctx)
		if err != nil {
			return err
		}
		pr.o.Pooled.Summary = sum
	}
	return nil
}

func newScorer[T working](ctx context.Context, pr *prepared, rows rowSet, qlo, qhi int) *scorer[T] {
	s := &scorer[T]{pr: pr, pl: newPlan(pr, rows), rel: pr.rel, d: pr.d, qlo: qlo, qhi: qhi, g: pr.g,
		ex: exact[T]{sqDist: pr.o.Similarity == SquaredL2, d: pr.d}, stats: pr.o.Stats}
	if s.stats == nil {
		s.stats = &Stats{}
	}
	// A dense query endpoint is held in working precision (it is the
	// small side); gallery blocks are produced as they are scored.
	if pr.q.csr == nil {
		s.q = produce[T](pr.q, qlo, qhi, make([]T, (qhi-qlo)*pr.d), make([]float64, pr.d))
	}
	s.meter = newMeter(ctx, int64(qhi-qlo)*int64(rows.len()))
	return s
}

// qrow is query q's working row (dense query endpoints).
func (s *scorer[T]) qrow(q int) []T { return s.q[(q-s.qlo)*s.d : (q-s.qlo+1)*s.d] }

// chunk is a range of queries scored together: their positives, their
// thresholds, one gallery pass and the merge.
type chunk[T working] struct {
	q0, q1 int
	scores [][]T           // per query: positive scores by list position
	th     []thresholds[T] // per query with negatives in the pass rows
	neg    []bool          // the query has eligible negatives in the pass rows
	off    []int           // counter offset of each query with thresholds
	slots  int
	most   int        // most thresholds of a query
	tab    [][]uint16 // per query: room for its bucket table (nil: none, or allocated)
	a      *arena[T]
	maxPos []atomic.Uint64 // per query: the bits of its best positive (pooled summary)
}

// arena holds a chunk's per-pair state; two alternate, so that the ordered
// sum of one chunk runs while the next is scored.
type arena[T working] struct {
	tab     []uint16 // bucket tables
	scores  []T
	thr     []T
	idx     []int32
	pos     []int32
	sumDone chan struct{} // closed when the chunk's ordered sum is taken (nil: none pending)
}

// chunks splits [qlo, qhi) into ranges whose per-pair state (chunkBytes)
// fits the plan's chunk budget, at least one query each.
func (s *scorer[T]) chunks() [][2]int {
	var out [][2]int
	limit := s.pl.chunk
	if !s.pl.chunkPairs {
		limit /= s.arenaCount() // the budget covers every arena
	}
	lo, bytes := s.qlo, 0
	for q := s.qlo; q < s.qhi; q++ {
		n := s.chunkBytes(q)
		if q > lo && bytes+n > limit {
			out = append(out, [2]int{lo, q})
			lo, bytes = q, 0
		}
		bytes += n
	}
	return append(out, [2]int{lo, s.qhi})
}

// chunkBytes is what query q holds while its chunk is scored: its positive
// scores and, with negatives in the pass, its thresholds, bucket table and
// every worker's counters (pairs only, under tuning.chunkPairs).
func (s *scorer[T]) chunkBytes(q int) int {
	m := len(s.rel.list(q))
	if s.pl.chunkPairs {
		return m
	}
	size := int(unsafe.Sizeof(T(0)))
	n := m * size
	if s.rel.negatives(q, s.pl.rows) > 0 {
		p := s.rel.count(q)
		n += p * (size + 4 + 4 + 4*s.pr.threads)
		if p >= minBucketedThresholds {
			n += 2 * slotBucketsPerThreshold * p
		}
	}
	return n
}

// scoreAll runs every chunk: positives, thresholds, pass, merge.
func (s *scorer[T]) scoreAll(ctx context.Context) error {
	chunks := s.chunks()
	s.stats.Chunks = len(chunks)
	arenas := s.arenaCount()
	defer s.sum.Wait()
	for i, ch := range chunks {
		c, err := s.newChunk(ch[0], ch[1], i%arenas)
		if err != nil {
			return err
		}
		if err := s.scoreChunk(ctx, c); err != nil {
			s.sum.Wait()
			if errors.Is(err, errNonFinite) {
				return s.failure(ctx)
			}
			return err
		}
	}
	s.sum.Wait()
	return nil
}

// cacheGallery holds the gallery's working rows for the run when they are
// produced more than once otherwise (label positives gather class members
// from every chunk; each chunk's pass produces every block) and the
// budget has room; a gallery stored as its working values needs nothing.
func (s *scorer[T]) cacheGallery(ctx context.Context, chunks int) {
	g := s.pr.g
	if ctx.Err() != nil || g.csr != nil || direct[T](g, s.pl.rows.block(0, 1)) != nil || s.pl.rows != allRows(s.pr.ng) ||
		chunks < 2 && s.rel.classes == nil {
		return
	}
	n, d := s.pr.ng, s.d
	if memory.Check(ctx, "Gallery working rows", memory.Bytes(int64(n), int64(d), int64(unsafe.Sizeof(T(0))))) != nil {
		return
	}
	rows := make([]T, n*d)
	parallelChunks(n, normChunk, s.pr.threads, func(_, lo, hi int) {
		copy(rows[lo*d:hi*d], produce(g, lo, hi, rows[lo*d:hi*d], make([]float64, d)))
	})
	c := &source{m: g.m, rows: g.rows, cols: d, prec: g.prec}
	switch r := any(rows).(type) {
	case []float64:
		c.direct64 = r
	case []float32:
		c.direct32 = r
	}
	s.g = c
}

// arenaCount is the chunk arenas of a run: two when no query has a
// negative among the pass rows (no pass: the ordered sum of a chunk then
// overlaps the next chunk's positives), else one (a chunk's sum ends while
// its pass runs).
func (s *scorer[T]) arenaCount() int {
	if s.sink == nil || s.pl.keep {
		return 1
	}
	for q := s.qlo; q < s.qhi; q++ {
		if s.rel.negatives(q, s.pl.rows) > 0 {
			return 1
		}
	}
	return 2
}

// newChunk lays out the state of queries [q0, q1) in arena slot a.
func (s *scorer[T]) newChunk(q0, q1, a int) (*chunk[T], error) {
	if s.arenas[a] == nil {
		s.arenas[a] = &arena[T]{}
	}
	ar := s.arenas[a]
	if ar.sumDone != nil {
		<-ar.sumDone // the ordered sum of the chunk that used it last
		ar.sumDone = nil
	}
	n := q1 - q0
	c := &chunk[T]{q0: q0, q1: q1, scores: make([][]T, n), th: make([]thresholds[T], n), neg: make([]bool, n), off: make([]int, n), a: ar, tab: make([][]uint16, n)}
	if s.sink != nil {
		c.maxPos = make([]atomic.Uint64, n)
		for i := range c.maxPos {
			c.maxPos[i].Store(math.Float64bits(math.Inf(-1)))
		}
	}
	var np, nt, nb int
	for i := range n {
		q := q0 + i
		m := len(s.rel.list(q))
		np += m
		if s.rel.negatives(q, s.pl.rows) > 0 {
			c.neg[i] = true
			p := s.rel.count(q)
			nt += p + 1 // one slot of room for countBucketed
			nb += tableLen(p)
		}
	}
	ar.scores, ar.thr, ar.idx, ar.pos, ar.tab = growRoom(ar.scores, np), growRoom(ar.thr, nt), growRoom(ar.idx, nt), growRoom(ar.pos, nt), growRoom(ar.tab, nb)
	np, nt, nb = 0, 0, 0
	for i := range n {
		q := q0 + i
		m := len(s.rel.list(q))
		c.scores[i] = ar.scores[np : np+m : np+m]
		np += m
		c.off[i] = -1
		if c.neg[i] {
			p := s.rel.count(q)
			c.th[i] = thresholds[T]{score: ar.thr[nt : nt+p : nt+p+1], index: ar.idx[nt : nt+p : nt+p+1], pos: ar.pos[nt : nt+p : nt+p]}
			c.off[i] = c.slots
			c.slots += p + 1 // slot p: precedes no positive
			c.most = max(c.most, p)
			nt += p + 1
			if t := tableLen(p); t > 0 {
				c.tab[i] = ar.tab[nb : nb+t : nb+t]
				nb += t
			}
		}
	}
	return c, nil
}

// scoreChunk is the pipeline for one chunk.
// A gallery shard's chunk takes its positive scores from the partial
// (shard.go) instead of scoring them.
func (s *scorer[T]) scoreChunk(ctx context.Context, c *chunk[T]) error {
	t1 := time.Now()
	if s.out != nil {
		s.out.fill(s, c)
	} else if err := s.positives(ctx, c, true); err != nil {
		return err
	}
	if err := s.orderPositives(ctx, c); err != nil {
		return err
	}
	s.stats.Positives += time.Since(t1)
	if s.sink != nil {
		s.sumChunk(c)
	}
	pass := s.pl.keep
	for _, n := range c.neg {
		pass = pass || n
	}
	var ws []*worker[T]
	if pass {
		var err error
		if ws, err = s.pass(ctx, c); err != nil {
			return err
		}
	} else {
		s.meter.add(int64(c.q1-c.q0) * int64(s.pl.rows.len())) // every pair is a positive
	}
	t2 := time.Now()
	err := s.merge(ctx, c, ws)
	s.stats.Merge += time.Since(t2)
	return err
}

// posTask is one task of the positives stage: the query rows qs against
// the gallery rows gs (global indices); each score goes to its query's
// list position at (position of its gallery row) + shift... described by
// the task's kind.
type posTask struct {
	qs []int32 // queries
	gs []int32 // gallery rows
	// labels: the gallery rows are members m0… of the queries' class;
	// explicit: one gallery row, and each query's list position in pos.
	m0  int
	pos []int32
}

// positives scores every positive of the chunk's queries (every member of
// a query's class for labels) by the one formula, grouped into dense tiles
// so that each gallery row is produced once per group: by class for
// labels, by gallery row for explicit pairs.
//
// With fold set, the scores also go to the pooled summary's extremes and
// median window (sink.rowStats) while they are in cache.
func (s *scorer[T]) positives(ctx context.Context, c *chunk[T], fold bool) error {
	tasks := s.positiveTasks(c)
	var bad atomic.Bool
	k := 0
	newWorker := func() *posWorker[T] { // the chunks reuse the workers' buffers
		if k == len(s.posWorkers) {
			w := &posWorker[T]{}
			if s.sink != nil {
				w.part = s.sink.part(k)
			}
			s.posWorkers = append(s.posWorkers, w)
		}
		k++
		return s.posWorkers[k-1]
	}
	fold = fold && s.sink != nil
	err := parallel(ctx, s.pr.threads, len(tasks), newWorker, func(i int, w *posWorker[T]) error {
		t := tasks[i]
		out := w.score(s, t.qs, t.gs)
		gn := len(t.gs)
		if !allFinite(out[:len(t.qs)*gn]) {
			bad.Store(true)
			return errNonFinite
		}
		// Scores are held as computed: a −0 is made +0 where it is
		// reported (SPEC §1.3); it compares equal to +0 everywhere else.
		for a, q := range t.qs {
			dst := c.scores[int(q)-c.q0]
			if t.pos != nil {
				dst[t.pos[a]] = out[a]
				continue
			}
			copy(dst[t.m0:t.m0+gn], out[a*gn:(a+1)*gn])
		}
		if !fold {
			return ctx.Err()
		}
		if t.pos != nil { // explicit positives: every one is eligible
			w.part.rowStats(out[:len(t.qs)])
			for a, q := range t.qs {
				c.raiseMax(int(q)-c.q0, out[a])
			}
			return ctx.Err()
		}
		for a, q := range t.qs {
			// The eligible members of rows [m0, m0+gn) of q's class.
			row, j := out[a*gn:(a+1)*gn], 0
			ex := s.rel.excludedPos(int(q))
			e, _ := slices.BinarySearch(ex, int32(t.m0))
			hi := T(math.Inf(-1))
			for ; e < len(ex) && int(ex[e]) < t.m0+gn; e++ {
				hi = max(hi, w.part.rowStats(row[j:int(ex[e])-t.m0]))
				j = int(ex[e]) - t.m0 + 1
			}
			c.raiseMax(int(q)-c.q0, max(hi, w.part.rowStats(row[j:])))
		}
		return ctx.Err()
	})
	if err == nil && bad.Load() {
		err = errNonFinite
	}
	return err
}

// positiveTasks groups the chunk's positive pairs into dense tiles.
func (s *scorer[T]) positiveTasks(c *chunk[T]) []posTask {
	var tasks []posTask
	if cl := s.rel.classes; cl != nil {
		const gBlock, qBlock = 512, 256
		byClass := map[int32][]int32{}
		var order []int32
		for q := c.q0; q < c.q1; q++ {
			k := cl.Query[q]
			if _, ok := byClass[k]; !ok {
				order = append(order, k)
			}
			byClass[k] = append(byClass[k], int32(q))
		}
		for _, k := range order {
			qs, m := byClass[k], cl.Members(int(k))
			for m0 := 0; m0 < len(m); m0 += gBlock {
				for q0 := 0; q0 < len(qs); q0 += qBlock {
					tasks = append(tasks, posTask{qs: qs[q0:min(q0+qBlock, len(qs))], gs: m[m0:min(m0+gBlock, len(m))], m0: m0})
				}
			}
		}
		return tasks
	}
	// Explicit pairs, by gallery row (a counting sort of the chunk's pairs).
	type ref struct{ q, k int32 }
	ng := s.pr.ng
	start := make([]int32, ng+1)
	for q := c.q0; q < c.q1; q++ {
		for _, g := range s.rel.list(q) {
			start[g+1]++
		}
	}
	for g := range ng {
		start[g+1] += start[g]
	}
	refs := make([]ref, start[ng])
	fill := slices.Clone(start[:ng])
	for q := c.q0; q < c.q1; q++ {
		for k, g := range s.rel.list(q) {
			refs[fill[g]] = ref{int32(q), int32(k)}
			fill[g]++
		}
	}
	const maxGather = 256
	for g := range ng {
		rs := refs[start[g]:start[g+1]]
		for lo := 0; lo < len(rs); lo += maxGather {
			part := rs[lo:min(lo+maxGather, len(rs))]
			t := posTask{qs: make([]int32, len(part)), gs: []int32{int32(g)}, pos: make([]int32, len(part))}
			for i, r := range part {
				t.qs[i], t.pos[i] = r.q, r.k
			}
			tasks = append(tasks, t)
		}
	}
	return tasks
}

// posWorker is one worker's buffers of the positives stage.
type posWorker[T working] struct {
	part        *sinkPart[T]
	qb, gb, out []T
	tmp         []float64
	qv, gv      []float64
}

// score returns the scores of the query rows qs against the gallery rows
// gs (len(qs) × len(gs), row-major) by the one formula.
func (w *posWorker[T]) score(s *scorer[T], qs, gs []int32) []T {
	d := s.d
	qn, gn := len(qs), len(gs)
	w.out = growTo(w.out, qn*gn)
	if s.pl.sparse {
		for a, q := range qs {
			var qi, gi []int32
			qi, w.qv = s.pr.q.sparseRow(int(q), w.qv)
			for j, g := range gs {
				gi, w.gv = s.g.sparseRow(int(g), w.gv)
				w.out[a*gn+j] = T(sparsePair(qi, w.qv, gi, w.gv, s.ex.sqDist, s.pl.prec))
			}
			if s.ex.sqDist {
				negate(w.out[a*gn : (a+1)*gn])
			}
		}
		return w.out
	}
	w.tmp = growTo(w.tmp, d)
	w.qb, w.gb = growTo(w.qb, qn*d), growTo(w.gb, gn*d)
	for a, q := range qs {
		if s.q != nil {
			copy(w.qb[a*d:(a+1)*d], s.qrow(int(q)))
		} else {
			copy(w.qb[a*d:(a+1)*d], produce(s.pr.q, int(q), int(q)+1, w.qb[a*d:(a+1)*d], w.tmp))
		}
	}
	grows := w.gb[:gn*d]
	if v := direct[T](s.g, block{n: gn, g0: int(gs[0]), stride: 1}); v != nil && int(gs[gn-1])-int(gs[0]) == gn-1 {
		grows = v // consecutive rows held as working values (a class of consecutive rows)
	} else {
		for j, g := range gs {
			copy(w.gb[j*d:(j+1)*d], produce(s.g, int(g), int(g)+1, w.gb[j*d:(j+1)*d], w.tmp))
		}
	}
	if gn == 1 {
		// One gallery row: it is the kernel's packed operand. Scores are
		// symmetric bit for bit (fma(a,b,c) = fma(b,a,c), (q−g)² = (g−q)²).
		s.ex.block(grows, 1, w.qb[:qn*d], qn, w.out[:qn])
	} else {
		s.ex.block(w.qb[:qn*d], qn, grows, gn, w.out[:qn*gn])
	}
	return w.out
}

// orderPositives feeds each query's eligible positive scores to the pooled
// summary and puts the positives of every query with negatives in rank
// order (its thresholds).
func (s *scorer[T]) orderPositives(ctx context.Context, c *chunk[T]) error {
	n := c.q1 - c.q0
	const group = 16
	return parallel(ctx, s.pr.threads, (n+group-1)/group, func() struct{} { return struct{}{} }, func(task int, _ struct{}) error {
		for i := task * group; i < min(n, (task+1)*group); i++ {
			q := c.q0 + i
			ex := s.rel.excludedPos(q)
			if !c.neg[i] {
				continue
			}
			rs := sorterPool.Get().(*radixSorter)
			ord := rankOrder(rs, c.scores[i], ex)
			th, list := &c.th[i], s.rel.list(q)
			for r, p := range ord {
				th.score[r], th.index[r], th.pos[r] = c.scores[i][p], list[p], p
			}
			sorterPool.Put(rs)
			if s.pl.buckets && len(ord) >= minBucketedThresholds {
				th.b = newSlotBuckets(th.score, c.tab[i])
			}
		}
		return nil
	})
}

// raiseMax raises chunk query i's best positive to v (the positives
// stage's tasks of one query may run at once).
func (c *chunk[T]) raiseMax(i int, v T) {
	m := &c.maxPos[i]
	for {
		old := m.Load()
		if !(float64(v) > math.Float64frombits(old)) || m.CompareAndSwap(old, math.Float64bits(float64(v)+0)) {
			return
		}
	}
}

// sumChunk takes the ordered sum of the chunk's eligible positive scores
// (SPEC §4.7: query order, then gallery order) while the run goes on.
func (s *scorer[T]) sumChunk(c *chunk[T]) {
	done, prev := make(chan struct{}), s.lastSum
	c.a.sumDone, s.lastSum = done, done
	s.sum.Add(1)
	go func() {
		defer s.sum.Done()
		defer close(done)
		if prev != nil {
			<-prev // the chunks' sums follow query order
		}
		for i := range c.scores {
			s.sink.sum(s.rel, c.q0+i, c.scores[i])
		}
	}()
}

// merge turns the workers' counts into each query's result.
func (s *scorer[T]) merge(ctx context.Context, c *chunk[T], ws []*worker[T]) error {
	n := c.q1 - c.q0
	const group = 16
	return parallel(ctx, s.pr.threads, (n+group-1)/group, func() *mergeWorker { return &mergeWorker{} }, func(task int, mw *mergeWorker) error {
		for i := task * group; i < min(n, (task+1)*group); i++ {
			if err := s.mergeQuery(c, ws, i, mw); err != nil {
				return err
			}
		}
		return nil
	})
}

type mergeWorker struct {
	cnt   []int32
	all   []Candidate
	ranks []int // sorted ranks of the query being handed out (ScoreEach: reused)
}

// mergeQuery assembles query c.q0+i's result from the workers' state.
func (s *scorer[T]) mergeQuery(c *chunk[T], ws []*worker[T], i int, mw *mergeWorker) error {
	q := c.q0 + i
	var cum []int32 // negatives preceding each rank slot, cumulated
	if c.neg[i] {
		p := s.rel.count(q)
		mw.cnt = growTo(mw.cnt, p+1)
		clear(mw.cnt)
		for _, w := range ws {
			src := w.cnt[c.off[i] : c.off[i]+p+1]
			if s.pl.mergeMax {
				for r, v := range src {
					mw.cnt[r] = max(mw.cnt[r], v)
				}
				continue
			}
			for r, v := range src {
				mw.cnt[r] += v
			}
		}
		var run int32
		for r := range p {
			run += mw.cnt[r]
			mw.cnt[r] = run
		}
		cum = mw.cnt[:p]
	}
	var best float64
	has := false
	for _, w := range ws {
		if w.hasBest[i] && (!has || w.best[i] > best) {
			best, has = w.best[i], true
		}
	}
	if !has {
		best = 0
	}
	var top []Candidate
	if s.pl.keep {
		mw.all = mw.all[:0]
		for _, w := range ws {
			if w.all != nil {
				mw.all = append(mw.all, w.all[i]...)
				w.all[i] = nil
			} else {
				mw.all = append(mw.all, w.top[i].c...)
				w.top[i].c = nil
			}
		}
		sortCandidates(mw.all)
		if !s.pr.o.FullRanking {
			mw.all = mw.all[:min(len(mw.all), s.pr.o.TopN)]
		}
		top = slices.Clone(mw.all)
	}
	if s.out != nil {
		s.out.query(s, c, i, cum, best, has, top)
		return nil
	}
	return s.emit(q, s.result(c, i, cum, best, has, top, mw))
}

// result builds query c.q0+i's result: rank(p_r) = 1 + r + cum[r].
func (s *scorer[T]) result(c *chunk[T], i int, cum []int32, best float64, has bool, top []Candidate, mw *mergeWorker) QueryResult {
	q := c.q0 + i
	r := QueryResult{NearestNegative: best + 0, HasNegative: has, Top: top}
	p := s.rel.count(q)
	if s.sink != nil {
		r.MaxPositive = math.Float64frombits(c.maxPos[i].Load()) + 0
	} else {
		r.Scores = make([]float64, 0, p)
		for _, v := range eligibleScores(s.rel, q, c.scores[i], nil) {
			r.Scores = append(r.Scores, float64(v)+0) // −0 → +0 (SPEC §1.3)
		}
	}
	if s.sorted {
		if cum == nil {
			r.Ranks = s.oneTo(p)
		} else {
			mw.ranks = growTo(mw.ranks, p)
			r.Ranks = mw.ranks
			for k, v := range cum {
				r.Ranks[k] = 1 + k + int(v)
			}
		}
		return r
	}
	// Ranks by positive (list order of the eligible positives).
	list, ex := s.rel.list(q), s.rel.excludedPos(q)
	rankAt := make([]int, len(list)) // by list position
	if cum != nil {
		for k, pos := range c.th[i].pos {
			rankAt[pos] = 1 + k + int(cum[k])
		}
	} else {
		rs := sorterPool.Get().(*radixSorter)
		for k, pos := range rankOrder(rs, c.scores[i], ex) {
			rankAt[pos] = 1 + k
		}
		sorterPool.Put(rs)
	}
	r.Ranks = eligibleScores(s.rel, q, rankAt, nil)
	if s.rel.classes != nil {
		r.Positives = make([]retrieval.Positive, 0, p)
		x := ex
		for m, g := range list {
			if len(x) > 0 && int(x[0]) == m {
				x = x[1:]
				continue
			}
			r.Positives = append(r.Positives, retrieval.Positive{Index: int(g), Grade: 1})
		}
	} else {
		r.Positives = s.rel.eligible[q]
	}
	return r
}

// oneTo returns 1..n as a view of one shared slice (results are read-only).
func (s *scorer[T]) oneTo(n int) []int {
	s.ranksMu.Lock()
	defer s.ranksMu.Unlock()
	if len(s.ranks1) < n {
		most := n
		if cl := s.rel.classes; cl != nil {
			for k := range cl.NumClasses() {
				most = max(most, len(cl.Members(k)))
			}
		}
		s.ranks1 = make([]int, most)
		for i := range s.ranks1 {
			s.ranks1[i] = 1 + i
		}
	}
	return s.ranks1[:n:n]
}

func sortCandidates(c []Candidate) {
	slices.SortFunc(c, func(a, b Candidate) int {
		if precedes(a.Score, a.Index, b.Score, b.Index) {
			return -1
		}
		if precedes(b.Score, b.Index, a.Score, a.Index) {
			return 1
		}
		return 0
	})
}

// growRoom is growTo with room to spare, so that chunks of slightly
// different sizes reuse one allocation.
func growRoom[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n, n+n/4)
	}
	return s[:n]
}

// scoresOnly is a chunk of queries [q0, q1) that holds their positive
// scores only (the positives stage of a shard run, the pooled rescans).
func (s *scorer[T]) scoresOnly(q0, q1 int) *chunk[T] {
	c := &chunk[T]{q0: q0, q1: q1, scores: make([][]T, q1-q0)}
	n := 0
	for q := q0; q < q1; q++ {
		n += len(s.rel.list(q))
	}
	all := make([]T, n)
	for i := range c.scores {
		m := len(s.rel.list(q0 + i))
		c.scores[i], all = all[:m:m], all[m:]
	}
	return c
}
