package cli

import (
	"context"
	"runtime/debug"

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
func withMemoryGuard(ctx context.Context, limit int64) (_ context.Context, restore func()) {
	prev := debug.SetMemoryLimit(max(limit, minSoftLimit))
	return memory.WithLimit(ctx, limit), func() { debug.SetMemoryLimit(prev) }
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
