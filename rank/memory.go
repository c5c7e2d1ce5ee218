package rank

import (
	"context"

	"github.com/vertebrae-eval/vertebrae/memory"
)

// checkMemory checks the scoring allocations whose size follows from
// declared shapes rather than from rows already held against the budget in
// ctx (SPEC §6.1, §7.5): the dense scratch of the width each worker keeps
// when an endpoint is sparse (a CSR width can be vastly larger than its
// data: row buffers, the postings' column pointers, the positive pass), and
// the kept rankings of a run export, which the report converts once more.
func checkMemory(ctx context.Context, p Problem, o Options, threads int) error {
	nq, ng, d := int64(p.Queries.Rows()), int64(p.Gallery.Rows()), int64(p.Queries.Cols())
	const candidate = 16 // Index + Score
	var need int64
	if p.Queries.Sparse() || p.Gallery.Sparse() {
		perWorker := memory.Bytes(d, 8+8+20) // tmp, postings (colPtr, fill), positive-pass rows
		if !(p.Queries.Sparse() && p.Gallery.Sparse()) {
			qb, gb := min(int64(o.QueryBatch), nq), min(int64(o.GalleryBatch), ng)
			perWorker = memory.Sum(perWorker, memory.Bytes(qb+gb, d, 8))
		}
		need = memory.Bytes(int64(threads), perWorker)
	}
	switch {
	case o.FullRanking:
		need = memory.Sum(need, memory.Bytes(2, nq, ng, candidate))
	case o.TopN > 0:
		need = memory.Sum(need, memory.Bytes(int64(threads)+1, nq, min(int64(o.TopN), ng), candidate))
	}
	return memory.Check(ctx, "Exact retrieval scoring (scratch and kept rankings)", need)
}
