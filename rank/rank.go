// Package rank is the exact scorer of SPEC §4: it scores every query against
// every eligible candidate in query × gallery blocks, in parallel, and turns
// the scores into the ranks of the positives (tie rule: descending score,
// then lower gallery index), the nearest negative and, on request, the top
// of each query's ranking. It never materialises the n_q × n_g matrix.
package rank

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Similarity selects the score formula.
type Similarity int

// Similarities of SPEC §4.2.
const (
	Cosine Similarity = iota
	Dot
	SquaredL2
)

// ParseSimilarity maps a config name to a Similarity.
func ParseSimilarity(s string) (Similarity, error) {
	switch s {
	case retrieval.Cosine:
		return Cosine, nil
	case retrieval.Dot:
		return Dot, nil
	case retrieval.SquaredL2:
		return SquaredL2, nil
	}
	return 0, fmt.Errorf("unknown similarity %q", s)
}

// Precision is the working precision.
type Precision int

// Working precisions of SPEC §3.1.
const (
	Float64 Precision = iota
	Float32
)

// Error is a scoring failure; its message holds the SPEC fragment verbatim.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errorf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Problem is one direction of exact retrieval, independent of any dataset.
type Problem struct {
	Queries, Gallery     matrix.Matrix
	QueryIDs, GalleryIDs []string
	// Relevance has one entry per query: positives (grade > 0) in ascending
	// gallery order.
	Relevance [][]retrieval.Positive
	// Exclusions has one (possibly empty) ascending list per query, or is nil.
	Exclusions [][]int
	// Classes, when set instead of Relevance, is label-derived relevance
	// held implicitly (SPEC §2.7): every result is as if Relevance held
	// the pairs Classes.Materialise() lists, without materialising them.
	Classes *retrieval.Classes
}

// Options are the protocol and performance settings of one scoring run.
type Options struct {
	Similarity   Similarity
	Precision    Precision
	QueryBatch   int    // ≥ 1
	GalleryBatch int    // ≥ 1
	Threads      int    // 0 = GOMAXPROCS
	MaxPairwise  *int64 // guard; nil = none
	// TopN > 0 keeps each query's first TopN candidates in rank order;
	// FullRanking keeps all of them (memory O(n_q · n_g): export only).
	TopN        int
	FullRanking bool
	// Exhaustive turns screened scoring off (as VERTEBRAE_SCREEN=off does):
	// every pair is scored by the exact rule. Results are identical.
	Exhaustive bool
	// Stats, when set, receives the phase timings and screening counts of
	// the run (for `vertebrae bench`).
	Stats *Stats
	// SortedRanks changes the results of a Classes problem (label-derived
	// relevance, every grade 1): Ranks lists the eligible positives' ranks
	// in ascending order instead of by positive, Positives is nil and
	// Scores holds the positives' scores in ascending gallery order. With
	// thousands of positives per query this saves the per-positive
	// permutation and lists; metrics.QueryUniformSorted takes it as it is.
	// The Ranks slices are read-only: queries may share one.
	// Problems with explicit Relevance are unaffected.
	SortedRanks bool
	// Pooled, when set, receives the summary of the pooled positive
	// scores (pooled.go); results then have MaxPositive instead of Scores.
	Pooled *Pooled
}

// Stats describes one scoring run.
type Stats struct {
	Prepare   time.Duration // checks, conversion, norms (SPEC §4.1, §4.9)
	Positives time.Duration // exact scores of the positives and their rank order
	Pass      time.Duration // the gallery pass: kernels, screening, verification, counting
	Merge     time.Duration // merging partials into per-query results (and the caller's fold)
	// Worker time inside the pass, summed over workers (dense endpoints):
	// the block kernels (the float32 screen when screened) and the folding
	// of score rows into counts, which includes the exact verification of
	// undecided pairs.
	Kernel, Fold time.Duration
	Screened     bool // a screen was used (ScreenStats.Kind: float32 or int16 for the float64 protocol, int16 for float32)
	Screen       ScreenStats
	// Chunks is the number of query chunks of a label-derived problem,
	// each with its own gallery pass (0: not label-derived).
	Chunks int
	// PooledStreamed: the Options.Pooled summary was taken while scoring,
	// with no positive score stored (label-derived relevance).
	PooledStreamed bool
}

// Candidate is a ranked gallery row.
type Candidate struct {
	Index int
	Score float64
}

// QueryResult is what scoring learns about one query.
type QueryResult struct {
	Positives       []retrieval.Positive // eligible positives, ascending gallery index
	Ranks           []int                // 1-based rank of each positive
	Scores          []float64            // score of each positive
	NearestNegative float64
	HasNegative     bool
	Top             []Candidate // rank order (TopN or FullRanking)
	// MaxPositive is the largest positive score (set under Options.Pooled,
	// which leaves Scores nil).
	MaxPositive float64
}

// Score runs exact retrieval after checking the preconditions of SPEC §4.9 in
// order. Results are bit-identical for every block size and thread count.
func Score(ctx context.Context, p Problem, o Options) ([]QueryResult, error) {
	var out []QueryResult
	if p.Queries != nil {
		out = make([]QueryResult, p.Queries.Rows())
	}
	err := ScoreEach(ctx, p, o, func(q int, r QueryResult) error {
		out[q] = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScoreEach is Score handing each query's result to fn as soon as it is
// final; nothing of a query is retained after its call, so a caller that
// keeps only what it needs (metrics, pooled scores) holds less than Score's
// full result list. fn is called exactly once per query, from several
// goroutines at once and in no particular order: it must be safe for
// concurrent use (writing to per-query slots is).
func ScoreEach(ctx context.Context, p Problem, o Options, fn func(q int, r QueryResult) error) error {
	t0 := time.Now()
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	scans, err := check(p, o, threads)
	if err != nil {
		return err
	}
	nq, ng := p.Queries.Rows(), p.Gallery.Rows()
	var eligible [][]retrieval.Positive
	var missing []string
	if p.Classes != nil {
		for q := range nq {
			var ex []int
			if p.Exclusions != nil {
				ex = p.Exclusions[q]
			}
			if p.Classes.EligibleCount(q, ex) == 0 {
				missing = append(missing, p.QueryIDs[q])
			}
		}
	} else {
		eligible, missing = eligibleOf(p)
	}
	if err := checkEligible(missing, o, nq, ng); err != nil {
		return err
	}
	qs, err := newSource(p.Queries, p.QueryIDs, "Query", o.Similarity, o.Precision, threads, scans[0])
	if err != nil {
		return err
	}
	gs, err := newSource(p.Gallery, p.GalleryIDs, "Gallery", o.Similarity, o.Precision, threads, scans[1])
	if err != nil {
		return err
	}
	if err := checkMemory(ctx, p, o, threads); err != nil { // before any input-sized scratch (SPEC §6.1)
		return err
	}
	sortedRanks := o.SortedRanks && p.Classes != nil
	if p.Classes != nil && (qs.csr != nil || gs.csr != nil || forceMaterialisedClasses) {
		// Sparse endpoints keep the explicit path (documented fallback):
		// the pairs are materialised here, after every check.
		p.Relevance, p.Classes = p.Classes.Materialise(), nil
		eligible, _ = eligibleOf(p)
	}
	s := &scorer{p: p, o: o, q: qs, g: gs, nq: nq, ng: ng, d: p.Queries.Cols(), eligible: eligible, threads: threads, sortedRanks: sortedRanks}
	s.sparse = qs.csr != nil && gs.csr != nil
	// A dense query endpoint is held in working precision (it is the
	// small side); gallery blocks, and the blocks of a sparse query
	// endpoint, are produced as they are scored.
	if qs.csr == nil {
		tmp := make([]float64, s.d)
		if o.Precision == Float64 {
			s.q64 = qs.block64(0, nq, make([]float64, nq*s.d))
		} else {
			s.q32 = qs.block32(0, nq, make([]float32, nq*s.d), tmp)
		}
	}
	s.emit = fn
	var chunks [][]float64
	if o.Pooled != nil && !s.streamsPooled() {
		// Stored path: the scores are kept per query and summarised at
		// the end.
		chunks = make([][]float64, nq)
		s.emit = func(q int, r QueryResult) error {
			chunks[q], r.MaxPositive, r.Scores = r.Scores, slices.Max(r.Scores), nil
			return fn(q, r)
		}
	}
	s.meter = newMeter(ctx, int64(nq)*int64(ng))
	s.stats = o.Stats
	if s.stats == nil {
		s.stats = &Stats{}
	}
	s.stats.Prepare = time.Since(t0)
	if err := s.score(ctx); err != nil {
		return err
	}
	if chunks != nil {
		o.Pooled.Summary = metrics.SummariseChunks(chunks)
	}
	return nil
}

func (s *scorer) score(ctx context.Context) error {
	if s.p.Classes != nil {
		if s.o.Pooled != nil && s.pooledStreamable() {
			return s.scorePooledClasses(ctx)
		}
		return s.scoreClasses(ctx)
	}
	t1 := time.Now()
	if err := s.preparePositives(ctx); err != nil {
		return err
	}
	s.screen = s.newScreen()
	s.screen16 = s.newScreen16(ctx) // int16 screens (screen16.go, screen16_64.go)
	s.stats.Positives = time.Since(t1)
	return s.run(ctx)
}

// eligibleOf lists each query's eligible positives of explicit relevance
// (SPEC §4.1) and the IDs of the queries left without one.
func eligibleOf(p Problem) (eligible [][]retrieval.Positive, missing []string) {
	eligible = make([][]retrieval.Positive, p.Queries.Rows())
	for q := range eligible {
		var ex []int
		if p.Exclusions != nil {
			ex = p.Exclusions[q]
		}
		eligible[q] = retrieval.EligiblePositives(p.Relevance[q], ex)
		if len(eligible[q]) == 0 {
			missing = append(missing, p.QueryIDs[q])
		}
	}
	return eligible, missing
}

// checkEligible is the check of SPEC §4.9 after eligibility: every query
// keeps a positive, and the pairs fit max_pairwise_comparisons.
func checkEligible(missing []string, o Options, nq, ng int) error {
	if len(missing) > 0 {
		return &Error{Msg: retrieval.MissingPositivesMessage(missing)}
	}
	if o.MaxPairwise != nil && int64(nq)*int64(ng) > *o.MaxPairwise {
		return errorf("Exact retrieval would exceed max_pairwise_comparisons: %d queries × %d gallery = %d > %d", nq, ng, int64(nq)*int64(ng), *o.MaxPairwise)
	}
	return nil
}

// forceMaterialisedClasses is a test hook: it sends Classes problems through
// the explicit-pairs path, the reference the implicit path is checked
// against.
var forceMaterialisedClasses = false

// check tests the preconditions of SPEC §4.9 in order. The finiteness
// check of a dense float32/float64 endpoint is the fused pass of fused.go,
// whose norms newSource then uses.
func check(p Problem, o Options, threads int) (scans [2]*endpointScan, err error) {
	for i, e := range []struct {
		name string
		m    matrix.Matrix
	}{{"Query", p.Queries}, {"Gallery", p.Gallery}} {
		if e.m == nil || e.m.Rows() < 1 || e.m.Cols() < 1 {
			return scans, errorf("%s embeddings must be a 2D array with at least one row", e.name)
		}
		if sc := scanEndpoint(e.m, o.Similarity == Cosine, threads); sc != nil {
			scans[i] = sc
			if sc.bad {
				return scans, errorf("%s embeddings must contain only finite numeric values; row %d, column %d", e.name, sc.badRow, sc.badCol)
			}
		} else if r, c, bad := firstNonFinite(e.m, threads); bad {
			return scans, errorf("%s embeddings must contain only finite numeric values; row %d, column %d", e.name, r, c)
		}
	}
	return scans, checkRest(p, o)
}

func checkRest(p Problem, o Options) error {
	if p.Queries.Cols() != p.Gallery.Cols() {
		return errorf("Query and gallery embedding dimensions must match; got %d and %d", p.Queries.Cols(), p.Gallery.Cols())
	}
	nq, ng := p.Queries.Rows(), p.Gallery.Rows()
	if c := p.Classes; c != nil {
		if p.Relevance != nil || len(c.Query) != nq {
			return errorf("Relevance must contain one entry for each query; got %d entries for %d queries", len(c.Query), nq)
		}
		if len(c.Gallery) != ng {
			return errorf("Relevance contains an invalid positive gallery index or grade: %d gallery classes for %d gallery rows", len(c.Gallery), ng)
		}
	} else if len(p.Relevance) != nq {
		return errorf("Relevance must contain one entry for each query; got %d entries for %d queries", len(p.Relevance), nq)
	}
	if len(p.QueryIDs) != nq || len(p.GalleryIDs) != ng {
		return errorf("ID lists must match the endpoints: %d query IDs for %d rows, %d gallery IDs for %d rows", len(p.QueryIDs), nq, len(p.GalleryIDs), ng)
	}
	for q, ps := range p.Relevance {
		prev := -1
		for _, x := range ps {
			if x.Index < 0 || x.Index >= ng || x.Index <= prev || !(x.Grade > 0) || math.IsInf(x.Grade, 0) {
				return errorf("Relevance contains an invalid positive gallery index or grade: query %d, gallery index %d, grade %v", q, x.Index, x.Grade)
			}
			prev = x.Index
		}
	}
	if p.Exclusions != nil {
		if len(p.Exclusions) != nq {
			return errorf("Exclusions contain an invalid query or gallery index: %d lists for %d queries", len(p.Exclusions), nq)
		}
		for q, ex := range p.Exclusions {
			prev := -1
			for _, g := range ex {
				if g < 0 || g >= ng || g <= prev {
					return errorf("Exclusions contain an invalid query or gallery index: query %d, gallery index %d", q, g)
				}
				prev = g
			}
		}
	}
	if o.QueryBatch < 1 || o.GalleryBatch < 1 {
		return errorf("batch sizes must be >= 1")
	}
	return nil
}

type scorer struct {
	p        Problem
	o        Options
	q, g     *source
	sparse   bool // both endpoints sparse: sparse–sparse scoring
	nq, ng   int
	d        int
	threads  int
	q64      []float64
	q32      []float32
	eligible [][]retrieval.Positive
	qs       []queryInfo
	nBeaten  int // total length of the flattened per-positive counters
	out      []QueryResult
	cls      *classState // implicit label relevance (classes.go)
	meter    *meter      // progress of the gallery pass (nil: nobody listens)
	screen   *screenState
	screen16 *screen16State // int16 screens (screen16.go; float64 protocol: screen16_64.go)
	stats    *Stats
	emit     func(q int, r QueryResult) error
	// sortedRanks: Options.SortedRanks for a Classes problem (also when it
	// is scored through the materialised pairs).
	sortedRanks bool
	// qLo, qHi: the queries the pass scores (activeQueries; both 0: all).
	qLo, qHi int
}

// activeQueries is the range of queries the gallery pass scores and merges:
// all of them, except for a chunk of a label-derived problem (classes.go).
func (s *scorer) activeQueries() (lo, hi int) {
	if s.qHi == 0 {
		return 0, s.nq
	}
	return s.qLo, s.qHi
}

// queryInfo is what every worker reads about a query: its eligible
// positives in rank order and its exclusions.
type queryInfo struct {
	pos      []retrieval.Positive // eligible positives by gallery index
	scores   []float64            // their scores, by gallery index
	order    []int                // positive slots sorted by (score desc, index asc)
	ordScore []float64            // scores in that order
	ordIndex []int                // gallery indices in that order
	excl     []int
	off      int // offset of this query's counters in partial.beaten
}

// preparePositives scores every eligible positive first (SPEC §11.3): with
// the one formula they equal what the block kernels compute, so candidates
// can be counted against them in a single pass over the gallery. Positives
// are grouped by gallery row: each row is produced once and scored against
// all queries that judge it relevant in one kernel call.
func (s *scorer) preparePositives(ctx context.Context) error {
	s.qs = make([]queryInfo, s.nq)
	s.out = make([]QueryResult, s.nq)
	type ref struct{ q, k int }
	byGallery := make([][]ref, s.ng)
	off := 0
	for q := range s.qs {
		qi := &s.qs[q]
		qi.pos = s.eligible[q]
		qi.scores = make([]float64, len(qi.pos))
		if s.p.Exclusions != nil {
			qi.excl = s.p.Exclusions[q]
		}
		qi.off = off
		off += len(qi.pos) + 1
		for k, x := range qi.pos {
			byGallery[x.Index] = append(byGallery[x.Index], ref{q, k})
		}
	}
	s.nBeaten = off
	const rowsPerTask, maxGather = 256, 256
	d := s.d
	if s.sparse {
		return s.finishPositives(ctx, s.parallel(ctx, (s.ng+rowsPerTask-1)/rowsPerTask, func(task int, _ *workspace) error {
			var gv, qv []float64
			for g := task * rowsPerTask; g < min((task+1)*rowsPerTask, s.ng); g++ {
				if len(byGallery[g]) == 0 {
					continue
				}
				var gi []int32
				gi, gv = s.g.sparseRow(g, gv)
				for _, r := range byGallery[g] {
					var qi []int32
					qi, qv = s.q.sparseRow(r.q, qv)
					v := sparsePair(qi, qv, gi, gv, s.o.Similarity == SquaredL2, s.o.Precision)
					if err := s.setPositive(r.q, r.k, g, v); err != nil {
						return err
					}
				}
			}
			return nil
		}))
	}
	err := s.parallel(ctx, (s.ng+rowsPerTask-1)/rowsPerTask, func(task int, _ *workspace) error {
		tmp := make([]float64, d)
		g64, q64, o64 := make([]float64, d), []float64(nil), []float64(nil)
		g32, q32, o32 := make([]float32, d), []float32(nil), []float32(nil)
		for g := task * rowsPerTask; g < min((task+1)*rowsPerTask, s.ng); g++ {
			refs := byGallery[g]
			if len(refs) == 0 {
				continue
			}
			var grow64 []float64
			var grow32 []float32
			if s.o.Precision == Float64 {
				grow64 = s.g.block64(g, g+1, g64)
			} else {
				grow32 = s.g.block32(g, g+1, g32, tmp)
			}
			// The gallery row is passed as the one "query" of the call: the
			// kernels pack their query operand, and (q−g)² = (g−q)² exactly,
			// so swapping the operands changes no bit.
			for lo := 0; lo < len(refs); lo += maxGather {
				part := refs[lo:min(lo+maxGather, len(refs))]
				m := len(part)
				if s.o.Precision == Float64 {
					q64, o64 = growTo(q64, m*d), growTo(o64, m)
					for i, r := range part {
						s.queryRow64(r.q, q64[i*d:(i+1)*d])
					}
					if s.o.Similarity == SquaredL2 {
						kernel.SqDist64(grow64, 1, q64, m, d, o64)
					} else {
						kernel.Dot64(grow64, 1, q64, m, d, o64)
					}
				} else {
					q32, o32, o64 = growTo(q32, m*d), growTo(o32, m), growTo(o64, m)
					for i, r := range part {
						s.queryRow32(r.q, q32[i*d:(i+1)*d], tmp)
					}
					if s.o.Similarity == SquaredL2 {
						kernel.SqDist32(grow32, 1, q32, m, d, o32)
					} else {
						kernel.Dot32(grow32, 1, q32, m, d, o32)
					}
					for i, v := range o32 {
						o64[i] = float64(v)
					}
				}
				for i, r := range part {
					if err := s.setPositive(r.q, r.k, g, o64[i]); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	return s.finishPositives(ctx, err)
}

// setPositive stores a positive's score from a raw kernel value (a squared
// distance for squared_l2).
func (s *scorer) setPositive(q, k, g int, v float64) error {
	if s.o.Similarity == SquaredL2 {
		v = -v
	}
	if v == 0 {
		v = 0 // −0 → +0 (SPEC §1.3)
	}
	if err := s.checkFinite(v, q, g); err != nil {
		return err
	}
	s.qs[q].scores[k] = v
	return nil
}

// finishPositives sorts each query's positives into rank order.
func (s *scorer) finishPositives(_ context.Context, err error) error {
	if err != nil {
		return err
	}
	for q := range s.qs {
		qi := &s.qs[q]
		qi.order = make([]int, len(qi.pos))
		for k := range qi.order {
			qi.order[k] = k
		}
		sort.Slice(qi.order, func(a, b int) bool {
			ka, kb := qi.order[a], qi.order[b]
			return precedes(qi.scores[ka], qi.pos[ka].Index, qi.scores[kb], qi.pos[kb].Index)
		})
		qi.ordScore = make([]float64, len(qi.pos))
		qi.ordIndex = make([]int, len(qi.pos))
		for r, k := range qi.order {
			qi.ordScore[r], qi.ordIndex[r] = qi.scores[k], qi.pos[k].Index
		}
	}
	return nil
}

// queryRow64 writes query q in float64 working values into dst.
func (s *scorer) queryRow64(q int, dst []float64) {
	if s.q64 != nil {
		copy(dst, s.q64[q*s.d:(q+1)*s.d])
		return
	}
	copy(dst, s.q.block64(q, q+1, dst))
}

// queryRow32 writes query q in float32 working values into dst.
func (s *scorer) queryRow32(q int, dst []float32, tmp []float64) {
	if s.q32 != nil {
		copy(dst, s.q32[q*s.d:(q+1)*s.d])
		return
	}
	copy(dst, s.q.block32(q, q+1, dst, tmp))
}

func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// workspace is one worker's buffers and partial results.
type workspace struct {
	g64, q64, s64 []float64
	g32, q32, s32 []float32
	index         *postings   // sparse–sparse: the gallery block inverted
	tmp           []float64   // one row
	rows64        blockRows64 // screening: the float64 rows of the block, on demand
	part          *partial
	above, below  []float64  // screening thresholds of one query row
	runs          [][2]int32 // screening: runs of ordinary negatives of one row
	hits          []int32    // screening: candidates of a run that may precede a positive
	kernel, fold  time.Duration
	id            int // the worker's index, where a pass keeps per-worker state
}

// partial is one worker's view of every query over the gallery blocks it
// scored. Partials merge exactly: counts add, best negatives take the
// maximum, top lists merge in the total order (SPEC §11.3).
type partial struct {
	beaten  []int // per positive in rank order: candidates that precede it but not the previous positive
	best    []float64
	hasBest []bool
	top     []topHeap
	all     [][]Candidate
	hits    []int32 // scratch for consume
	cbeaten []int32 // implicit classes, per-worker counters (classState.local)
}

// parallel runs task(0..n-1) on s.threads workers, tasks handed out in
// increasing order. After a failure no later task starts but earlier ones
// finish, so the error returned is always that of the lowest failing task.
func (s *scorer) parallel(ctx context.Context, n int, task func(i int, w *workspace) error) error {
	return s.parallelWith(ctx, n, func() *workspace { return &workspace{} }, task)
}

func (s *scorer) parallelWith(ctx context.Context, n int, newWS func() *workspace, task func(i int, w *workspace) error) error {
	tq := newTaskQueue(n)
	var wg sync.WaitGroup
	for w := 0; w < min(s.threads, n); w++ {
		wg.Add(1)
		ws := newWS()
		go func() {
			defer wg.Done()
			tq.work(ctx, task, ws)
		}()
	}
	wg.Wait()
	return tq.err(ctx)
}

// taskQueue hands tasks 0..n-1 to workers in increasing order. After a
// failure no later task starts but earlier ones finish, so the error kept
// is always that of the lowest failing task.
type taskQueue struct {
	n            int
	next, failed atomic.Int64
	errs         []error
}

func newTaskQueue(n int) *taskQueue {
	tq := &taskQueue{n: n, errs: make([]error, n)}
	tq.failed.Store(int64(n))
	return tq
}

// work runs tasks on one worker until none is left, one failed before the
// next, or ctx is done.
func (tq *taskQueue) work(ctx context.Context, task func(i int, w *workspace) error, ws *workspace) {
	for {
		i := tq.next.Add(1) - 1
		if i >= tq.failed.Load() || ctx.Err() != nil {
			return
		}
		if err := task(int(i), ws); err != nil {
			tq.errs[i] = err
			for f := tq.failed.Load(); i < f && !tq.failed.CompareAndSwap(f, i); f = tq.failed.Load() {
			}
			return
		}
	}
}

// err is the outcome once every worker has returned.
func (tq *taskQueue) err(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f := tq.failed.Load(); f < int64(tq.n) {
		return tq.errs[f]
	}
	return nil
}

// maxBlockBytes bounds a produced (converted, normalised or densified) block
// of rows: wide sparse endpoints (a 30,000-term vocabulary) must not turn a
// 10,000-row gallery block into gigabytes. Block sizes never change results.
const maxBlockBytes = 64 << 20

// blockRows caps want rows of width d by maxBlockBytes.
func (s *scorer) blockRows(want int) int {
	size := 8
	if s.o.Precision == Float32 {
		size = 4
	}
	return max(1, min(want, maxBlockBytes/(s.d*size)))
}

// run scores the gallery block by block: a worker produces a block once in
// working precision and scores every query block against it while it is
// hot, folding each score row into its partial result at once.
func (s *scorer) run(ctx context.Context) error {
	gb := s.galleryBlock()
	qb := min(s.o.QueryBatch, s.nq)
	if !s.sparse && s.q64 == nil && s.q32 == nil {
		qb = s.blockRows(qb)
	}
	blocks := passBlocks(s.ng, gb)
	var mu sync.Mutex
	var parts []*partial
	var wss []*workspace
	newWS := func() *workspace {
		w := &workspace{tmp: make([]float64, s.d), part: s.newPartial()}
		switch {
		case s.sparse:
			w.s64 = make([]float64, qb*gb)
		case s.screen != nil:
			// Screening grows its buffers as blocks need them: most of
			// the float64 ones never are, and a worker starts at once.
		case s.o.Precision == Float64:
			if s.g.direct64 == nil {
				w.g64 = make([]float64, gb*s.d)
			}
			if s.q64 == nil {
				w.q64 = make([]float64, qb*s.d)
			}
			w.s64 = make([]float64, qb*gb)
		default:
			if s.g.direct32 == nil {
				w.g32 = make([]float32, gb*s.d)
			}
			if s.q32 == nil {
				w.q32 = make([]float32, qb*s.d)
			}
			w.s32 = make([]float32, qb*gb)
		}
		mu.Lock()
		parts = append(parts, w.part)
		wss = append(wss, w)
		mu.Unlock()
		return w
	}
	task := s.denseBlock
	if s.sparse {
		task = s.sparseBlock
	}
	if s.screen != nil {
		task = func(ctx context.Context, w *workspace, g0, g1, qb int) error {
			return s.screenedBlock(w, g0, g1, qb, ctx.Err)
		}
	}
	if s.screen16 != nil { // int16 screen of the float32 protocol (screen16.go)
		task = func(ctx context.Context, w *workspace, g0, g1, qb int) error {
			return s.screened16Block(w, g0, g1, qb, ctx.Err)
		}
	}
	t0 := time.Now()
	err := s.parallelWith(ctx, len(blocks), newWS, func(b int, w *workspace) error {
		return task(ctx, w, blocks[b][0], blocks[b][1], qb)
	})
	if err != nil {
		return err
	}
	t1 := time.Now()
	s.stats.Pass += t1.Sub(t0)
	for _, w := range wss {
		s.stats.Kernel += w.kernel
		s.stats.Fold += w.fold
	}
	if st := s.screen; st != nil {
		s.stats.Screened = true
		s.stats.Screen = ScreenStats{Pairs: st.pairs.Load(), Exact: st.exact.Load(), ExactTiles: st.blocks.Load(), Kind: "float32"}
	}
	s.screen16Stats() // int16 screens (screen16.go, screen16_64.go)
	err = s.merge(ctx, parts)
	s.stats.Merge += time.Since(t1)
	return err
}

// passBlocks splits the gallery rows [0, ng) into the tasks of the pass, in
// order: blocks of gb rows, except that with at least four such blocks of
// 4096 rows or more the last 2·gb rows go in blocks of a quarter of that,
// so workers that finish their share at different times (another process
// or the background identity hash takes a core) wait for a quarter block
// at the end instead of a whole one. Like gb, the split does not depend on
// the thread count (block sizes never change a result, SPEC §4.2).
func passBlocks(ng, gb int) [][2]int {
	var out [][2]int
	fine := ng // where the quarter blocks start
	if gb >= 4096 && ng >= 4*gb {
		fine = (ng - 2*gb) / gb * gb
	}
	for g0 := 0; g0 < fine; g0 += gb {
		out = append(out, [2]int{g0, min(g0+gb, fine)})
	}
	if tail := ng - fine; tail > 0 {
		k := (tail + (gb+3)/4 - 1) / ((gb + 3) / 4)
		for i := range k {
			out = append(out, [2]int{fine + i*tail/k, fine + (i+1)*tail/k})
		}
	}
	return out
}

// galleryBlock is the number of gallery rows of one task of the pass.
func (s *scorer) galleryBlock() int {
	gb := min(s.o.GalleryBatch, s.ng)
	if !s.sparse && s.g.direct64 == nil && s.g.direct32 == nil {
		gb = s.blockRows(gb)
	}
	// Every worker needs gallery blocks: a gallery of one block (the demo's
	// 5,000 rows under the default 10,000) would be scored on one thread.
	// At least 8 blocks, of at least 64 rows. Block sizes never change a
	// result (SPEC §4.2); the split does not depend on the thread count,
	// so neither does which failing pair an error names.
	const minBlocks = 8
	return max(min(gb, (s.ng+minBlocks-1)/minBlocks), min(gb, 64))
}

// denseBlock scores gallery rows [g0, g1) against every query with the
// dense kernels.
func (s *scorer) denseBlock(ctx context.Context, w *workspace, g0, g1, qb int) error {
	gn := g1 - g0
	var g64 []float64
	var g32 []float32
	if s.o.Precision == Float64 {
		g64 = s.g.block64(g0, g1, w.g64)
	} else {
		g32 = s.g.block32(g0, g1, w.g32, w.tmp)
	}
	lo, hi := s.activeQueries()
	for q0 := lo; q0 < hi; q0 += qb {
		if err := ctx.Err(); err != nil {
			return err
		}
		q1 := min(q0+qb, hi)
		qn := q1 - q0
		if s.cls != nil && !s.o.FullRanking && s.o.TopN == 0 && !s.tileHasNegative(q0, q1, g0, g1) {
			if err := s.skippedTileExclusions(q0, q1, g0, g1, w); err != nil {
				return err
			}
			s.meter.add(int64(qn) * int64(gn))
			continue
		}
		if s.o.Precision == Float64 {
			qs := s.q64
			if qs == nil {
				qs = s.q.block64(q0, q1, w.q64)
			} else {
				qs = qs[q0*s.d : q1*s.d]
			}
			out := w.s64[:qn*gn]
			t0 := time.Now()
			if s.o.Similarity == SquaredL2 {
				kernel.SqDist64(qs, qn, g64, gn, s.d, out)
			} else {
				kernel.Dot64(qs, qn, g64, gn, s.d, out)
			}
			t1 := time.Now()
			w.kernel += t1.Sub(t0)
			for i := 0; i < qn; i++ {
				row := out[i*gn : (i+1)*gn]
				var err error
				if s.cls != nil {
					err = consumeClasses(s, w.part, q0+i, g0, row)
				} else {
					err = consume(s, w.part, q0+i, g0, row)
				}
				if err != nil {
					return err
				}
			}
			w.fold += time.Since(t1)
		} else {
			qs := s.q32
			if qs == nil {
				qs = s.q.block32(q0, q1, w.q32, w.tmp)
			} else {
				qs = qs[q0*s.d : q1*s.d]
			}
			out := w.s32[:qn*gn]
			t0 := time.Now()
			if s.o.Similarity == SquaredL2 {
				kernel.SqDist32(qs, qn, g32, gn, s.d, out)
			} else {
				kernel.Dot32(qs, qn, g32, gn, s.d, out)
			}
			t1 := time.Now()
			w.kernel += t1.Sub(t0)
			for i := 0; i < qn; i++ {
				row := out[i*gn : (i+1)*gn]
				var err error
				if s.cls != nil {
					err = consumeClasses(s, w.part, q0+i, g0, row)
				} else {
					err = consume(s, w.part, q0+i, g0, row)
				}
				if err != nil {
					return err
				}
			}
			w.fold += time.Since(t1)
		}
		s.meter.add(int64(qn) * int64(gn))
	}
	return nil
}

func (s *scorer) newPartial() *partial {
	p := &partial{beaten: make([]int, s.nBeaten), best: make([]float64, s.nq), hasBest: make([]bool, s.nq)}
	if s.cls != nil {
		p.beaten = nil // counters in classState, or per worker:
		if s.cls.local {
			p.cbeaten = s.cls.localCounters()
		}
	}
	if s.o.FullRanking {
		p.all = make([][]Candidate, s.nq)
	} else if s.o.TopN > 0 {
		p.top = make([]topHeap, s.nq)
		for i := range p.top {
			p.top[i].limit = s.o.TopN
		}
	}
	return p
}

func (s *scorer) checkFinite(v float64, q, g int) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return errorf("non-finite similarity score for query %s and gallery %s", msgfmt.Quote(s.p.QueryIDs[q]), msgfmt.Quote(s.p.GalleryIDs[g]))
	}
	return nil
}

// precedes reports whether candidate (sa, ia) ranks before (sb, ib).
func precedes(sa float64, ia int, sb float64, ib int) bool {
	return sa > sb || (sa == sb && ia < ib)
}

// consume folds one query's row of block scores (gallery rows g0…) into a
// partial result. Raw kernel values are squared distances for squared_l2 and
// are negated here. The row is walked in runs between its "special" entries
// (excluded candidates and positives), so the common case — an ordinary
// negative — costs a few comparisons.
func consume[T float32 | float64](s *scorer, part *partial, q, g0 int, row []T) error {
	qi := &s.qs[q]
	neg := s.o.Similarity == SquaredL2
	last := len(qi.ordScore) - 1
	lastScore, lastIndex := qi.ordScore[last], qi.ordIndex[last]
	beaten := part.beaten[qi.off : qi.off+len(qi.pos)+1]
	keep := part.all != nil || part.top != nil
	// count records that candidate (v, g) precedes some positives: they form
	// a suffix of the rank-ordered positives, found by binary search.
	count := func(v float64, g int) {
		lo, hi := 0, last
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if precedes(v, g, qi.ordScore[mid], qi.ordIndex[mid]) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		beaten[lo]++
	}
	keepCandidate := func(v float64, g int) {
		c := Candidate{Index: g, Score: v + 0} // +0 turns −0 into +0
		if part.all != nil {
			part.all[q] = append(part.all[q], c)
		} else {
			part.top[q].offer(c)
		}
	}
	exPtr := sort.SearchInts(qi.excl, g0)
	posPtr := sort.Search(len(qi.pos), func(k int) bool { return qi.pos[k].Index >= g0 })
	best, hasBest := part.best[q], part.hasBest[q]
	hits := part.hits
	defer func() { part.hits = hits }()
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
			var runBest float64
			var finite bool
			var n int
			if f32, ok := any(seg).([]float32); ok && !neg { // vectorised (count32.go)
				if runBest, finite, n, hits = countRun32(f32, g0+j, lastScore, lastIndex, last > 0, hits); last == 0 {
					hits = hits[:0]
				}
			} else if runBest, finite, n = countRun(seg, neg, g0+j, lastScore, lastIndex); last > 0 && n > 0 {
				hits = precedingOffsets(seg, neg, g0+j, lastScore, lastIndex, hits[:0])
			} else {
				hits = hits[:0]
			}
			if !finite {
				for jj, v := range seg {
					x := float64(v)
					if neg {
						x = -x
					}
					if x-x != 0 {
						return s.checkFinite(x, q, g0+j+jj)
					}
				}
			}
			if last == 0 { // one positive: every such candidate precedes it
				beaten[0] += n
			}
			for _, jj := range hits {
				v := float64(seg[jj])
				if neg {
					v = -v
				}
				count(v, g0+j+int(jj))
			}
			if keep {
				for jj, v := range seg {
					x := float64(v)
					if neg {
						x = -x
					}
					keepCandidate(x, g0+j+jj)
				}
			}
			if !hasBest || runBest > best {
				best, hasBest = runBest+0, true
			}
		}
		if end == len(row) {
			break
		}
		g := g0 + end
		v := float64(row[end])
		if neg {
			v = -v
		}
		if v-v != 0 {
			return s.checkFinite(v, q, g)
		}
		switch {
		case exPtr < len(qi.excl) && qi.excl[exPtr] == g:
			exPtr++ // excluded: never counts (a positive can be excluded too)
			if posPtr < len(qi.pos) && qi.pos[posPtr].Index == g {
				posPtr++
			}
		default: // an eligible positive: counts against the others, is no negative
			posPtr++
			if precedes(v, g, lastScore, lastIndex) {
				count(v, g)
			}
			if keep {
				keepCandidate(v, g)
			}
		}
		j = end + 1
	}
	part.best[q], part.hasBest[q] = best, hasBest
	return nil
}

// precedingOffsets appends to hits the offsets of the run's candidates
// (starting at gallery index g) that precede the last positive (score
// lastScore, gallery index lastIndex): only those can precede a positive.
func precedingOffsets[T float32 | float64](seg []T, neg bool, g int, lastScore float64, lastIndex int, hits []int32) []int32 {
	tieBefore := lastIndex - g // offsets below this win a tie with the last positive
	for j, x := range seg {
		v := float64(x)
		if neg {
			v = -v
		}
		if v > lastScore || (v == lastScore && j < tieBefore) {
			hits = append(hits, int32(j))
		}
	}
	return hits
}

// countRun scans a run of ordinary negatives starting at gallery index g:
// it returns their maximum score, whether all are finite, and how many
// precede the last positive (score lastScore, gallery index lastIndex).
// Four independent lanes keep the loop free of long dependency chains and
// of unpredictable branches: comparisons become counts, and the tie branch
// is almost never taken.
func countRun[T float32 | float64](seg []T, neg bool, g int, lastScore float64, lastIndex int) (best float64, finite bool, n int) {
	sign := 1.0
	if neg {
		sign = -1
	}
	b0, b1, b2, b3 := math.Inf(-1), math.Inf(-1), math.Inf(-1), math.Inf(-1)
	var c0, c1, c2, c3 float64
	var n0, n1, n2, n3 int
	ties := 0
	j := 0
	for ; j+4 <= len(seg); j += 4 {
		v0, v1, v2, v3 := sign*float64(seg[j]), sign*float64(seg[j+1]), sign*float64(seg[j+2]), sign*float64(seg[j+3])
		c0 += v0 * 0
		c1 += v1 * 0
		c2 += v2 * 0
		c3 += v3 * 0
		if v0 > b0 {
			b0 = v0
		}
		if v1 > b1 {
			b1 = v1
		}
		if v2 > b2 {
			b2 = v2
		}
		if v3 > b3 {
			b3 = v3
		}
		n0 += b2i(v0 > lastScore)
		n1 += b2i(v1 > lastScore)
		n2 += b2i(v2 > lastScore)
		n3 += b2i(v3 > lastScore)
		if v0 == lastScore || v1 == lastScore || v2 == lastScore || v3 == lastScore {
			for k, v := range [4]float64{v0, v1, v2, v3} {
				if v == lastScore && j+k < lastIndex-g {
					ties++
				}
			}
		}
	}
	for ; j < len(seg); j++ {
		v := sign * float64(seg[j])
		c0 += v * 0
		if v > b0 {
			b0 = v
		}
		n0 += b2i(v > lastScore)
		if v == lastScore && j < lastIndex-g {
			ties++
		}
	}
	best = max(b0, b1, b2, b3)
	check := c0 + c1 + c2 + c3
	return best, check == 0 && best-best == 0, n0 + n1 + n2 + n3 + ties
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// merge combines the workers' partial results into the per-query results
// and hands them out in query order.
func (s *scorer) merge(ctx context.Context, parts []*partial) error {
	const chunk = 16
	lo, hi := s.activeQueries()
	return s.parallel(ctx, (hi-lo+chunk-1)/chunk, func(task int, _ *workspace) error {
		for q := lo + task*chunk; q < min(lo+task*chunk+chunk, hi); q++ {
			if err := s.mergeQuery(q, parts); err != nil {
				return err
			}
		}
		return nil
	})
}

// mergeQuery assembles query q's result from the partials and hands it out.
func (s *scorer) mergeQuery(q int, parts []*partial) error {
	var res QueryResult
	r := &res
	if s.cls != nil {
		res = s.classResult(q, parts)
	} else {
		qi := &s.qs[q]
		r.Positives, r.Scores = qi.pos, qi.scores
		r.Ranks = make([]int, len(qi.pos))
		count := 0
		for k, slot := range qi.order {
			for _, p := range parts {
				count += p.beaten[qi.off+k]
			}
			r.Ranks[slot] = 1 + count
		}
		if s.sortedRanks {
			slices.Sort(r.Ranks)
			r.Positives = nil
		}
		s.qs[q] = queryInfo{}
	}
	for _, p := range parts {
		if p.hasBest[q] && (!r.HasNegative || p.best[q] > r.NearestNegative) {
			r.NearestNegative, r.HasNegative = p.best[q], true
		}
	}
	switch {
	case s.o.FullRanking:
		var all []Candidate
		for _, p := range parts {
			all = append(all, p.all[q]...)
			p.all[q] = nil
		}
		sortCandidates(all)
		r.Top = all
	case s.o.TopN > 0:
		var all []Candidate
		for _, p := range parts {
			all = append(all, p.top[q].c...)
		}
		sortCandidates(all)
		r.Top = all[:min(len(all), s.o.TopN)]
		for _, p := range parts {
			p.top[q].c = nil
		}
	}
	return s.emit(q, res)
}

func sortCandidates(c []Candidate) {
	sort.Slice(c, func(a, b int) bool { return precedes(c[a].Score, c[a].Index, c[b].Score, c[b].Index) })
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
