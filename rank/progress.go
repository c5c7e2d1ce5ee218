package rank

import (
	"context"
	"sync"
	"time"
)

// Progress receives a scoring run's progress (SPEC §6.1): done of total
// (query, candidate) pairs scored. Calls are serialised, done never
// decreases within a run, and the last call of a successful run has
// done == total.
type Progress func(done, total int64)

type progressKey struct{}

// WithProgress returns a context whose scoring runs report to p.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// progressInterval bounds how often a run reports (between the first and
// the final report).
const progressInterval = 200 * time.Millisecond

// meter counts pairs from every worker and reports at most every
// progressInterval, plus once at the end.
type meter struct {
	fn          Progress
	total, done int64
	mu          sync.Mutex
	last        time.Time
}

func newMeter(ctx context.Context, total int64) *meter {
	fn, _ := ctx.Value(progressKey{}).(Progress)
	if fn == nil {
		return nil
	}
	return &meter{fn: fn, total: total, last: time.Now()}
}

// add records n more pairs.
func (m *meter) add(n int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done += n
	if now := time.Now(); m.done == m.total || now.Sub(m.last) >= progressInterval {
		m.last = now
		m.fn(m.done, m.total)
	}
}
