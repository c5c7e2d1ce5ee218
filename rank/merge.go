package rank

import (
	"context"
	"math"
	"slices"

	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// The merge: integer counts summed over the pass's workers, ranks from the
// counts and the rank order, and each query's result.

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
		rs := sorterPool.Get().(*sorter)
		ord, _ := rankOrder(rs, c.scores[i], ex, false, nil)
		for k, pos := range ord {
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
