package rank

import (
	"context"
	"math"
	"runtime"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// prepared is a problem that passed every check of SPEC §4.9, in order,
// with its endpoints' row sources and its relevance view. A full run and
// every gallery shard of it start from the same prepared problem.
type prepared struct {
	p         Problem
	o         Options
	threads   int
	nq, ng, d int
	q, g      *source
	rel       *relevance
}

// prepare checks p under o (SPEC §4.9, in order) and prepares its sources.
func prepare(ctx context.Context, p Problem, o Options) (*prepared, error) {
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	// The passes over whole endpoints (scan, norms) are not split; ctx is
	// checked between them.
	scans, err := check(p, o, threads)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nq, ng := p.Queries.Rows(), p.galleryRows()
	rel := newRelevance(p)
	var missing []string
	for q := range nq {
		if rel.count(q) == 0 {
			missing = append(missing, p.QueryIDs[q])
		}
	}
	if len(missing) > 0 {
		return nil, &Error{Msg: retrieval.MissingPositivesMessage(missing)}
	}
	if o.MaxPairwise != nil && int64(nq)*int64(ng) > *o.MaxPairwise {
		return nil, errorf("Exact retrieval would exceed max_pairwise_comparisons: %d queries × %d gallery = %d > %d", nq, ng, int64(nq)*int64(ng), *o.MaxPairwise)
	}
	qs, err := newSource(p.Queries, sliceNames(p.QueryIDs), "Query", o.Similarity, o.Precision, threads, scans[0], allRows(p.Queries.Rows()))
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	gs, err := newSource(p.Gallery, p.galleryName, "Gallery", o.Similarity, o.Precision, threads, scans[1], p.window())
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkMemory(ctx, p, o, threads); err != nil { // before any input-sized scratch (SPEC §6.1)
		return nil, err
	}
	return &prepared{p: p, o: o, threads: threads, nq: nq, ng: ng, d: p.Queries.Cols(), q: qs, g: gs, rel: rel}, nil
}

// check tests the preconditions of SPEC §4.9 in order up to the
// eligible-positive rule. The finiteness check of a dense float32/float64
// endpoint is the fused pass of fused.go, whose norms newSource then uses.
//
// A gallery window (Problem.GalleryTotal) is checked on the rows it holds,
// reported by their global indices.
func check(p Problem, o Options, threads int) (scans [2]*endpointScan, err error) {
	if p.GalleryTotal > 0 && p.Gallery != nil {
		if w := p.window(); p.GalleryFirst < 0 || p.GalleryStride < 0 || (w.len() > 0 && w.hi > p.GalleryTotal) {
			return scans, errorf("gallery rows %d, %d, … below %d are not rows of a %d-row gallery", w.lo, w.lo+w.stride, w.hi, p.GalleryTotal)
		}
	}
	for i, e := range []struct {
		name string
		m    matrix.Matrix
		base int
		step int
	}{{"Query", p.Queries, 0, 1}, {"Gallery", p.Gallery, p.GalleryFirst, max(1, p.GalleryStride)}} {
		if e.m == nil || e.m.Rows() < 1 || e.m.Cols() < 1 {
			if i == 1 && p.GalleryTotal > 0 && e.m != nil && e.m.Rows() == 0 && e.m.Cols() > 0 {
				continue // an empty window: a shard that holds no rows
			}
			return scans, errorf("%s embeddings must be a 2D array with at least one row", e.name)
		}
		if sc := scanEndpoint(e.m, o.Similarity == Cosine, threads); sc != nil {
			scans[i] = sc
			if sc.bad {
				return scans, errorf("%s embeddings must contain only finite numeric values; row %d, column %d", e.name, e.base+sc.badRow*e.step, sc.badCol)
			}
		} else if r, c, bad := matrix.FirstNonFiniteParallel(e.m, threads); bad {
			return scans, errorf("%s embeddings must contain only finite numeric values; row %d, column %d", e.name, e.base+r*e.step, c)
		}
	}
	return scans, checkRest(p, o)
}

func checkRest(p Problem, o Options) error {
	if p.Queries.Cols() != p.Gallery.Cols() {
		return errorf("Query and gallery embedding dimensions must match; got %d and %d", p.Queries.Cols(), p.Gallery.Cols())
	}
	nq, ng := p.Queries.Rows(), p.galleryRows()
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
	if len(p.QueryIDs) != nq || (len(p.GalleryIDs) != ng && (p.GalleryIDs != nil || p.GalleryName == nil)) {
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
