package rank

import (
	"context"
	"math"
	"slices"
	"sync/atomic"

	"github.com/vertebrae-eval/vertebrae/metrics"
)

// classPooled is the streaming pooled summary (SPEC §4.7
// positive_similarity) of a Classes problem scored in chunks (classes.go):
// each chunk's positive scores are folded into it as soon as they are
// computed, in query order, so no score is held beyond its chunk. The
// ordered sum takes them in the order of the stored path (query, then
// gallery index); the median comes from a window placed by a sample of
// whole queries, or by re-scoring when the window missed it (pooled.go).
// Every number is that of metrics.SummariseChunks over the stored scores,
// bit for bit.
type classPooled struct {
	ps       *pooledScan
	win      pooledWindow
	part     pooledPart
	kept     atomic.Int64
	overflow atomic.Bool
	sum      float64
	n        int
	maxPos   []float64 // each query's best positive (QueryResult.MaxPositive)
	buf      []float64
}

// streamsPooled reports whether a Classes problem's pooled summary is
// streamed (one class: pooled.go; otherwise chunk by chunk, classPooled),
// so that its results carry no Scores and nothing is stored for it.
func (s *scorer) streamsPooled() bool {
	return s.o.Pooled != nil && s.p.Classes != nil && s.sortedRanks && !forceStoredPooled
}

// newClassPooled places the median window from a sample of whole queries.
func (s *scorer) newClassPooled(ctx context.Context) (*classPooled, error) {
	c := s.p.Classes
	excluded := make([][]int32, s.nq)
	n := 0
	for q := range s.nq {
		var ex []int
		if s.p.Exclusions != nil {
			ex = s.p.Exclusions[q]
		}
		n += c.EligibleCount(q, ex)
		m := c.Members(int(c.Query[q]))
		for _, g := range ex {
			if c.Gallery[g] == c.Query[q] {
				i, _ := slices.BinarySearch(m, int32(g))
				excluded[q] = append(excluded[q], int32(i))
			}
		}
	}
	ps := &pooledScan{s: s, excluded: excluded, qBlock: 64, slabs: make([][]float64, max(1, s.threads))}
	// Up to the window's cap every score is kept (the demo: 500,000), so
	// the median never needs a second scoring. Above it, the window comes
	// from a sample of 64 whole queries: each query's positives form a
	// cluster of similar scores (their class's), so the sample's quantiles
	// err more than those of as many independent values, and the window
	// is made as wide as the cap allows, up to the 0.4–0.6 quantiles.
	win, windowCap := pooledWindow{lo: math.Inf(-1), hi: math.Inf(1)}, n
	if n > pooledWindowCap {
		delta := min(0.1, max(0.01, 0.4*float64(pooledWindowCap)/float64(n)))
		var err error
		if win, windowCap, err = ps.sampleWindow(ctx, n, max(1, s.nq/64), delta); err != nil {
			return nil, err
		}
	}
	cp := &classPooled{ps: ps, win: win, n: n, maxPos: make([]float64, s.nq)}
	cp.part.window = make([]uint64, 0, windowCap)
	return cp, nil
}

// fold takes the positive scores of queries [lo, hi) (st.scores, member
// order, excluded members' slots unused), in query order.
func (cp *classPooled) fold(st *classState, lo, hi int) {
	for q := lo; q < hi; q++ {
		vals := st.scores[q]
		if ex := st.excluded[q]; ex != nil {
			cp.buf = cp.buf[:0]
			for m, v := range vals {
				if !ex[m] {
					cp.buf = append(cp.buf, v)
				}
			}
			vals = cp.buf
		}
		cp.ps.rowStats(&cp.part, q, vals, cp.win, &cp.kept, &cp.overflow, cp.maxPos)
		acc := cp.sum // in a local: see scorePooledClasses
		for _, v := range vals {
			acc += v
		}
		cp.sum = acc
	}
}

// summary completes the pooled summary once every chunk is folded.
func (cp *classPooled) summary(ctx context.Context) (metrics.Summary, error) {
	kept := cp.part.window
	cp.part.window = nil
	med, err := cp.ps.median(ctx, cp.n, cp.part.below, kept, cp.overflow.Load())
	if err != nil {
		return metrics.Summary{}, err
	}
	mean := cp.sum / float64(cp.n)
	lo, hi := cp.part.lo+0, cp.part.hi+0 // −0 → +0 (SPEC §1.3)
	return metrics.Summary{Mean: &mean, Median: &med, Min: &lo, Max: &hi}, nil
}
