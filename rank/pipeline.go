package rank

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vertebrae-eval/vertebrae/memory"
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
	posRows    rowSet  // the gallery rows whose positives the positives stage scores
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
	s := &scorer[T]{pr: pr, pl: newPlan(pr, rows), rel: pr.rel, d: pr.d, qlo: qlo, qhi: qhi, g: pr.g, posRows: pr.p.window(),
		ex: exact[T]{sqDist: pr.o.Similarity == SquaredL2, d: pr.d}, stats: pr.o.Stats}
	if s.stats == nil {
		s.stats = &Stats{}
	}
	// A dense query endpoint is held in working precision (it is the
	// small side); gallery blocks are produced as they are scored.
	if pr.q.csr == nil {
		s.q = queryRows[T](ctx, pr, qlo, qhi)
	}
	s.meter = newMeter(ctx, int64(qhi-qlo)*int64(rows.len()))
	return s
}

// queryRows are the working rows of queries [qlo, qhi): a view of the
// stored rows when they are the working values, else produced in parallel
// chunks (each row independently, so the chunking changes no bit) that stop
// once ctx is done: the pass that follows sees ctx and returns its error.
func queryRows[T working](ctx context.Context, pr *prepared, qlo, qhi int) []T {
	if v := direct[T](pr.q, block{g0: qlo, n: qhi - qlo, stride: 1}); v != nil {
		return v
	}
	n, d := qhi-qlo, pr.d
	rows := make([]T, n*d)
	parallelChunks(n, normChunk, pr.threads, func(_, lo, hi int) {
		if ctx.Err() != nil {
			return
		}
		copy(rows[lo*d:hi*d], produce(pr.q, qlo+lo, qlo+hi, rows[lo*d:hi*d], make([]float64, d)))
	})
	return rows
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

// cacheGallery holds the gallery's working rows for the run when several
// chunks would produce them again (the positives stage of every chunk
// gathers class members; every chunk's pass produces every block) and the
// budget has room; a gallery stored as its working values needs nothing.
func (s *scorer[T]) cacheGallery(ctx context.Context, chunks int) {
	g := s.pr.g
	if ctx.Err() != nil || g.csr != nil || direct[T](g, s.pl.rows.block(0, 1)) != nil || s.pl.rows != allRows(s.pr.ng) || chunks < 2 {
		return
	}
	n, d := s.pr.ng, s.d
	if memory.Check(ctx, "Gallery working rows", memory.Bytes(int64(n), int64(d), int64(unsafe.Sizeof(T(0))))) != nil {
		return
	}
	rows := make([]T, n*d)
	parallelChunks(n, normChunk, s.pr.threads, func(_, lo, hi int) {
		if ctx.Err() != nil {
			return // the pass that follows sees ctx too and stops
		}
		copy(rows[lo*d:hi*d], produce(g, lo, hi, rows[lo*d:hi*d], make([]float64, d)))
	})
	if ctx.Err() != nil {
		return // some rows are missing: keep reading the source
	}
	c := &source{m: g.m, base: g.base, stride: g.stride, rows: g.rows, cols: d, prec: g.prec}
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
