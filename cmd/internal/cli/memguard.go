package cli

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/vertebrae-eval/vertebrae/memory"
)

// minSoftLimit keeps the runtime's soft limit above what the Go runtime and
// the small fixed structures need, so a tiny test budget does not turn into
// continuous garbage collection.
const minSoftLimit = 64 << 20

// withMemoryGuard carries the resolved budget to the guarded allocations
// of scoring and compression (SPEC §6.1) and sets the Go runtime's soft
// memory limit from it; restore puts the previous limit back (tests run
// many commands in one process).
//
// The budget admits the data whose size follows from declared shapes; a
// worker also holds structures it does not list (ID tables, the relevance,
// buffers). When those bring the live heap near the budget, a soft limit
// at the budget makes the collector run back to back without freeing
// anything (measured: a gallery-shard worker sized to its embeddings spent
// 40–70 % more CPU). So after every collection the limit is raised, if
// needed, to twice the live heap (the growth GOGC=100 allows): garbage
// stays bounded by the live data, and the admission checks still use the
// budget.
func withMemoryGuard(ctx context.Context, limit int64) (_ context.Context, restore func()) {
	base := max(limit, minSoftLimit)
	prev := debug.SetMemoryLimit(base)
	g := &limitFollower{base: base, limit: base}
	g.arm()
	return memory.WithLimit(ctx, limit), func() {
		g.mu.Lock()
		g.stopped = true
		debug.SetMemoryLimit(prev)
		g.mu.Unlock()
	}
}

// limitFollower raises the soft limit to twice the live heap after each
// garbage collection, never below base.
type limitFollower struct {
	mu          sync.Mutex
	base, limit int64
	stopped     bool
}

// arm attaches a cleanup to a fresh unreachable object: it runs after the
// next collection that frees it, adjusts the limit and arms again.
func (g *limitFollower) arm() {
	runtime.AddCleanup(new([64]byte), func(g *limitFollower) { g.afterGC() }, g)
}

func (g *limitFollower) afterGC() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	want := max(g.base, 2*liveHeap())
	if want != g.limit {
		g.limit = want
		debug.SetMemoryLimit(want)
	}
	g.arm()
}

// liveHeap is the heap the last collection found live.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// benchMemory checks the synthetic problem of `vertebrae bench` against the
// machine's budget (§7.2) before generating it, so absurd sizes fail with
// the figures instead of a runtime out-of-memory dump.
func benchMemory(ctx context.Context, fl *benchFlags) (context.Context, func(), error) {
	limit, err := memory.Resolve(memory.Default())
	if err != nil {
		return ctx, func() {}, err
	}
	q, g, d := int64(fl.queries), int64(fl.gallery), int64(fl.dim)
	data := memory.Bytes(memory.Sum(q, g), d, 8)
	if fl.nnz > 0 {
		data = memory.Bytes(memory.Sum(q, g), int64(fl.nnz), 12)
	}
	// Relevance lists and IDs: a positive (16 bytes) per pair, an ID per row.
	need := memory.Sum(data, memory.Bytes(q, int64(fl.positives), 16), memory.Bytes(memory.Sum(q, g), 24))
	if err := memory.Check(memory.WithLimit(ctx, limit), "The synthetic bench problem", need); err != nil {
		return ctx, func() {}, err
	}
	ctx, restore := withMemoryGuard(ctx, limit)
	return ctx, restore, nil
}
