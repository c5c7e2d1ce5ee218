package evaluate

import (
	"slices"
	"sync"

	"github.com/vertebrae-eval/vertebrae/metrics"
)

// uniformMetrics computes the metrics of label-relevance queries (every
// grade 1, ranks ascending), once per positive count for the queries whose
// positives all rank ahead of every candidate that is not one (one class:
// every query's ranks are 1..20,000, and the mean average precision alone
// is 20,000 divisions per query). Ranks are distinct positions, so
// ascending ranks that start at 1 and end at their count n are exactly
// 1..n, whose metrics depend on n only. Other queries are computed as
// they come. Safe for concurrent use.
type uniformMetrics struct {
	ks   []int
	gain metrics.Gain
	mu   sync.Mutex
	byN  map[int]metrics.Values
}

func (u *uniformMetrics) query(ranks []int) metrics.Values {
	n := len(ranks)
	if n == 0 || ranks[0] != 1 || ranks[n-1] != n {
		return metrics.QueryUniformSorted(ranks, 1, u.ks, u.gain)
	}
	u.mu.Lock()
	v, ok := u.byN[n]
	u.mu.Unlock()
	if !ok {
		v = metrics.QueryUniformSorted(ranks, 1, u.ks, u.gain)
		u.mu.Lock()
		if u.byN == nil {
			u.byN = map[int]metrics.Values{}
		}
		u.byN[n] = v
		u.mu.Unlock()
	}
	// Every row owns its values, as when each is computed.
	return metrics.Values{Keys: slices.Clone(v.Keys), Vals: slices.Clone(v.Vals)}
}
