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
	"sort"
	"sync"
	"sync/atomic"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
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
}

// Score runs exact retrieval after checking the preconditions of SPEC §4.9 in
// order. Results are bit-identical for every block size and thread count.
func Score(ctx context.Context, p Problem, o Options) ([]QueryResult, error) {
	if err := check(p, o); err != nil {
		return nil, err
	}
	nq, ng := p.Queries.Rows(), p.Gallery.Rows()
	eligible := make([][]retrieval.Positive, nq)
	var missing []string
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
	if len(missing) > 0 {
		return nil, &Error{Msg: retrieval.MissingPositivesMessage(missing)}
	}
	if o.MaxPairwise != nil && int64(nq)*int64(ng) > *o.MaxPairwise {
		return nil, errorf("Exact retrieval would exceed max_pairwise_comparisons: %d queries × %d gallery = %d > %d", nq, ng, int64(nq)*int64(ng), *o.MaxPairwise)
	}
	qp, err := prepare(p.Queries, p.QueryIDs, "Query", o.Similarity, o.Precision)
	if err != nil {
		return nil, err
	}
	gp, err := prepare(p.Gallery, p.GalleryIDs, "Gallery", o.Similarity, o.Precision)
	if err != nil {
		return nil, err
	}
	s := &scorer{p: p, o: o, q: qp, g: gp, eligible: eligible, out: make([]QueryResult, nq)}
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	return s.out, nil
}

func check(p Problem, o Options) error {
	for _, e := range []struct {
		name string
		m    matrix.Matrix
	}{{"Query", p.Queries}, {"Gallery", p.Gallery}} {
		if e.m == nil || e.m.Rows() < 1 || e.m.Cols() < 1 {
			return errorf("%s embeddings must be a 2D array with at least one row", e.name)
		}
		if r, c, bad := matrix.FirstNonFinite(e.m); bad {
			return errorf("%s embeddings must contain only finite numeric values; row %d, column %d", e.name, r, c)
		}
	}
	if p.Queries.Cols() != p.Gallery.Cols() {
		return errorf("Query and gallery embedding dimensions must match; got %d and %d", p.Queries.Cols(), p.Gallery.Cols())
	}
	nq, ng := p.Queries.Rows(), p.Gallery.Rows()
	if len(p.Relevance) != nq {
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
	q, g     *prepared
	eligible [][]retrieval.Positive
	out      []QueryResult
}

func (s *scorer) run(ctx context.Context) error {
	nq := s.q.rows
	threads := s.o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	nBlocks := (nq + s.o.QueryBatch - 1) / s.o.QueryBatch
	threads = min(threads, nBlocks)
	// Blocks are handed out in increasing order. After a failure no block
	// above it starts, but blocks below it finish, so the error reported is
	// always the one of the lowest failing block, whatever the timing.
	var next atomic.Int64
	var failed atomic.Int64
	failed.Store(int64(nBlocks))
	var wg sync.WaitGroup
	errs := make([]error, nBlocks)
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := newBlockBuffers(s)
			for {
				b := next.Add(1) - 1
				if b >= failed.Load() || ctx.Err() != nil {
					return
				}
				lo := int(b) * s.o.QueryBatch
				hi := min(lo+s.o.QueryBatch, nq)
				if err := s.queryBlock(ctx, lo, hi, buf); err != nil {
					errs[b] = err
					for f := failed.Load(); b < f && !failed.CompareAndSwap(f, b); f = failed.Load() {
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if f := failed.Load(); f < int64(nBlocks) {
		return errs[f]
	}
	return nil
}

type blockBuffers struct {
	s64 []float64
	s32 []float32
}

func newBlockBuffers(s *scorer) *blockBuffers {
	n := min(s.o.QueryBatch, s.q.rows) * min(s.o.GalleryBatch, s.g.rows)
	if s.o.Precision == Float64 {
		return &blockBuffers{s64: make([]float64, n)}
	}
	return &blockBuffers{s32: make([]float32, n)}
}

// queryState is the per-query bookkeeping carried across gallery blocks.
type queryState struct {
	q        int
	pos      []retrieval.Positive // eligible positives by gallery index
	order    []int                // positive slots sorted by (score desc, index asc)
	ordScore []float64            // scores in that order
	ordIndex []int                // gallery indices in that order
	beaten   []int                // beaten[k]: candidates preceding order[k] but not order[k-1]
	excl     []int
	exPtr    int
	posPtr   int
	best     float64
	hasBest  bool
	top      *topHeap
	all      []Candidate
}

func (s *scorer) queryBlock(ctx context.Context, lo, hi int, buf *blockBuffers) error {
	ng, d := s.g.rows, s.g.cols
	states := make([]queryState, hi-lo)
	for i := range states {
		st := &states[i]
		q := lo + i
		st.q = q
		st.pos = s.eligible[q]
		if s.p.Exclusions != nil {
			st.excl = s.p.Exclusions[q]
		}
		scores := make([]float64, len(st.pos))
		for k, x := range st.pos {
			scores[k] = s.pairScore(q, x.Index)
			if err := s.checkFinite(scores[k], q, x.Index); err != nil {
				return err
			}
		}
		st.order = make([]int, len(st.pos))
		for k := range st.order {
			st.order[k] = k
		}
		sort.Slice(st.order, func(a, b int) bool {
			ka, kb := st.order[a], st.order[b]
			return precedes(scores[ka], st.pos[ka].Index, scores[kb], st.pos[kb].Index)
		})
		st.ordScore = make([]float64, len(st.pos))
		st.ordIndex = make([]int, len(st.pos))
		for r, k := range st.order {
			st.ordScore[r], st.ordIndex[r] = scores[k], st.pos[k].Index
		}
		st.beaten = make([]int, len(st.pos)+1)
		if s.o.TopN > 0 && !s.o.FullRanking {
			st.top = &topHeap{limit: s.o.TopN}
		}
		s.out[q].Positives = st.pos
		s.out[q].Scores = scores
	}
	for g0 := 0; g0 < ng; g0 += s.o.GalleryBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		g1 := min(g0+s.o.GalleryBatch, ng)
		gn := g1 - g0
		qn := hi - lo
		if s.o.Precision == Float64 {
			out := buf.s64[:qn*gn]
			qs, gs := s.q.f64[lo*d:hi*d], s.g.f64[g0*d:g1*d]
			if s.o.Similarity == SquaredL2 {
				kernel.SqDist64(qs, qn, gs, gn, d, out)
			} else {
				kernel.Dot64(qs, qn, gs, gn, d, out)
			}
			for i := range states {
				if err := s.consume64(&states[i], g0, out[i*gn:(i+1)*gn]); err != nil {
					return err
				}
			}
		} else {
			out := buf.s32[:qn*gn]
			qs, gs := s.q.f32[lo*d:hi*d], s.g.f32[g0*d:g1*d]
			if s.o.Similarity == SquaredL2 {
				kernel.SqDist32(qs, qn, gs, gn, d, out)
			} else {
				kernel.Dot32(qs, qn, gs, gn, d, out)
			}
			row := make([]float64, gn)
			for i := range states {
				for j, v := range out[i*gn : (i+1)*gn] {
					row[j] = float64(v)
				}
				if err := s.consume64(&states[i], g0, row); err != nil {
					return err
				}
			}
		}
	}
	for i := range states {
		s.finish(&states[i])
	}
	return nil
}

// pairScore computes one score with the same accumulator as the block kernels.
func (s *scorer) pairScore(q, g int) float64 {
	d := s.q.cols
	var v float64
	if s.o.Precision == Float64 {
		a, b := s.q.f64[q*d:(q+1)*d], s.g.f64[g*d:(g+1)*d]
		if s.o.Similarity == SquaredL2 {
			v = -kernel.SqDistRow64(a, b)
		} else {
			v = kernel.DotRow64(a, b)
		}
	} else {
		a, b := s.q.f32[q*d:(q+1)*d], s.g.f32[g*d:(g+1)*d]
		if s.o.Similarity == SquaredL2 {
			v = -float64(kernel.SqDistRow32(a, b))
		} else {
			v = float64(kernel.DotRow32(a, b))
		}
	}
	if v == 0 {
		v = 0 // −0 → +0 (SPEC §1.3)
	}
	return v
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

// consume64 folds one row of block scores (gallery rows g0…) into a query's
// state. Raw kernel values are squared distances for squared_l2 and are
// negated here.
func (s *scorer) consume64(st *queryState, g0 int, row []float64) error {
	neg := s.o.Similarity == SquaredL2
	last := len(st.ordScore) - 1
	lastScore, lastIndex := st.ordScore[last], st.ordIndex[last]
	for j, v := range row {
		g := g0 + j
		if neg {
			v = -v
		}
		if v == 0 {
			v = 0
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return s.checkFinite(v, st.q, g)
		}
		for st.exPtr < len(st.excl) && st.excl[st.exPtr] < g {
			st.exPtr++
		}
		if st.exPtr < len(st.excl) && st.excl[st.exPtr] == g {
			continue
		}
		for st.posPtr < len(st.pos) && st.pos[st.posPtr].Index < g {
			st.posPtr++
		}
		isPos := st.posPtr < len(st.pos) && st.pos[st.posPtr].Index == g
		if !isPos && (!st.hasBest || v > st.best) {
			st.best, st.hasBest = v, true
		}
		// Count g against every positive it precedes. Positives are sorted
		// in rank order, so those form a suffix; most candidates precede
		// none, which one comparison with the last positive settles.
		if precedes(v, g, lastScore, lastIndex) {
			k := sort.Search(len(st.ordScore), func(k int) bool {
				return precedes(v, g, st.ordScore[k], st.ordIndex[k])
			})
			st.beaten[k]++
		}
		if s.o.FullRanking {
			st.all = append(st.all, Candidate{Index: g, Score: v})
		} else if st.top != nil {
			st.top.offer(Candidate{Index: g, Score: v})
		}
	}
	return nil
}

func (s *scorer) finish(st *queryState) {
	r := &s.out[st.q]
	r.Ranks = make([]int, len(st.pos))
	count := 0
	for k, slot := range st.order {
		count += st.beaten[k]
		r.Ranks[slot] = 1 + count
	}
	r.NearestNegative, r.HasNegative = st.best, st.hasBest
	switch {
	case s.o.FullRanking:
		sort.Slice(st.all, func(a, b int) bool {
			return precedes(st.all[a].Score, st.all[a].Index, st.all[b].Score, st.all[b].Index)
		})
		r.Top = st.all
	case st.top != nil:
		r.Top = st.top.sorted()
	}
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

func (h *topHeap) sorted() []Candidate {
	out := append([]Candidate(nil), h.c...)
	sort.Slice(out, func(a, b int) bool { return precedes(out[a].Score, out[a].Index, out[b].Score, out[b].Index) })
	return out
}
