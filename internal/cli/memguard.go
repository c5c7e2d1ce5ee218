package cli

import (
	"context"
	"runtime/debug"
	"strconv"

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

// checkLabelPairs checks the relevance that label-derived relevance expands
// to (one positive per query–gallery pair sharing a label, SPEC §2.7)
// against the budget before it is built: 10⁵ queries and 10⁶ gallery items
// in 10 classes are 10¹⁰ pairs.
func checkLabelPairs(ctx context.Context, queryLabels, galleryLabels []string) error {
	count := make(map[string]int64, 64)
	for _, l := range galleryLabels {
		count[l]++
	}
	var pairs int64
	for _, l := range queryLabels {
		pairs = memory.Sum(pairs, count[l])
	}
	const positive = 16 // gallery index + grade
	return memory.Check(ctx, "Label-derived relevance ("+strconv.FormatInt(pairs, 10)+" pairs)", memory.Bytes(pairs, positive))
}
