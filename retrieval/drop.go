package retrieval

import (
	"fmt"
	"slices"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Queries-without-positives policies (SPEC §3.1 queries_without_positives).
const (
	UnjudgedError = "error"
	UnjudgedDrop  = "drop"
)

// DroppedQueries returns the IDs of the queries removed because they had no
// eligible positive (WithDropQueriesWithoutPositives), in input order.
func (d *Dataset) DroppedQueries() []string { return slices.Clone(d.dropped) }

// dropQueriesWithoutPositives removes the queries without an eligible
// positive from the IDs, relevance and exclusions, and returns the input
// rows kept (nil when every query is kept).
func (d *Dataset) dropQueriesWithoutPositives() ([]int, error) {
	keep := make([]int, 0, len(d.queryIDs))
	var dropped []string
	for q := range d.queryIDs {
		if d.eligibleCount(q) > 0 {
			keep = append(keep, q)
		} else {
			dropped = append(dropped, d.queryIDs[q])
		}
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	if len(keep) == 0 {
		return nil, invalid("Every query must retain at least one eligible positive relevance after exclusions; no query has one, so none is left to evaluate (%d dropped)", len(dropped))
	}
	d.dropped = dropped
	qids := make([]string, len(keep))
	excl := make([][]int, len(keep))
	n := 0
	for i, q := range keep {
		qids[i] = d.queryIDs[q]
		excl[i] = d.exclusions[q]
		n += len(excl[i])
	}
	d.queryIDs, d.exclusions, d.nExclusions = qids, excl, n
	if d.positives != nil {
		pos := make([][]Positive, len(keep))
		for i, q := range keep {
			pos[i] = d.positives[q]
		}
		d.positives = pos
	}
	if d.labelled != nil {
		sub := d.labelled.selectQueries(keep)
		if d.labels != nil {
			d.labels = sub
		}
		d.labelled = sub
	}
	return keep, nil
}

// selectQueries is c restricted to the given query rows (the gallery is
// unchanged).
func (c *Classes) selectQueries(keep []int) *Classes {
	q := make([]int32, len(keep))
	for i, r := range keep {
		q[i] = c.Query[r]
	}
	return &Classes{Query: q, Gallery: c.Gallery, members: c.members, labels: c.labels}
}

// selectItems returns the rows keep (ascending) of an endpoint.
func selectItems(it Items, keep []int) (Items, error) {
	switch t := it.(type) {
	case EmbeddingItems:
		m, err := selectRows(t.m, keep)
		if err != nil {
			return nil, err
		}
		return EmbeddingItems{m: m}, nil
	case Texts:
		out := make(Texts, len(keep))
		for i, r := range keep {
			out[i] = t[r]
		}
		return out, nil
	case Images:
		out := make(Images, len(keep))
		for i, r := range keep {
			out[i] = t[r]
		}
		return out, nil
	case IDsOnly:
		return IDsOnly(len(keep)), nil
	}
	return nil, invalid("queries_without_positives: drop is not supported for %s query inputs of type %T", it.Modality(), it)
}

// selectRows copies the rows keep of a dense or CSR matrix.
func selectRows(m matrix.Matrix, keep []int) (matrix.Matrix, error) {
	switch t := m.(type) {
	case *matrix.Dense:
		c := t.Cols()
		switch t.DType() {
		case matrix.Float16:
			return matrix.NewDense16(len(keep), c, gather(t.Float16Bits(), c, keep))
		case matrix.Float32:
			return matrix.NewDense32(len(keep), c, gather(t.Float32Data(), c, keep))
		default:
			return matrix.NewDense64(len(keep), c, gather(t.Float64Data(), c, keep))
		}
	case *matrix.CSR:
		indptr, indices := t.Components()
		ptr := make([]int64, 1, len(keep)+1)
		var idx []int32
		var f32 []float32
		var f64 []float64
		for _, r := range keep {
			lo, hi := indptr[r], indptr[r+1]
			idx = append(idx, indices[lo:hi]...)
			if t.DType() == matrix.Float32 {
				f32 = append(f32, t.Float32Data()[lo:hi]...)
			} else {
				f64 = append(f64, t.Float64Data()[lo:hi]...)
			}
			ptr = append(ptr, int64(len(idx)))
		}
		if idx == nil {
			idx = []int32{}
		}
		if t.DType() == matrix.Float32 {
			if f32 == nil {
				f32 = []float32{}
			}
			return matrix.NewCSR32(len(keep), t.Cols(), ptr, idx, f32)
		}
		if f64 == nil {
			f64 = []float64{}
		}
		return matrix.NewCSR64(len(keep), t.Cols(), ptr, idx, f64)
	}
	return nil, fmt.Errorf("queries_without_positives: drop: unsupported matrix type %T", m)
}

func gather[T any](data []T, cols int, keep []int) []T {
	out := make([]T, 0, len(keep)*cols)
	for _, r := range keep {
		out = append(out, data[r*cols:(r+1)*cols]...)
	}
	return out
}

// SelectQueries is c restricted to the given query rows (the gallery, and
// so every query's positives, are unchanged).
func (c *Classes) SelectQueries(keep []int) *Classes { return c.selectQueries(keep) }

// SelectRows copies the rows keep (ascending) of a dense or CSR matrix.
func SelectRows(m matrix.Matrix, keep []int) (matrix.Matrix, error) { return selectRows(m, keep) }

// ReverseQueriesWithoutPositives returns the IDs of the gallery items with
// no eligible reverse relation (SPEC §4.8), in gallery order: with
// queries_without_positives: drop, a bidirectional run skips them as reverse
// queries (they stay forward candidates).
func (d *Dataset) ReverseQueriesWithoutPositives() []string {
	var out []string
	for g, ok := range d.reverseEligible() {
		if !ok {
			out = append(out, d.galleryIDs[g])
		}
	}
	return out
}

// NoReverseRelationMessage is the §4.8 message for the given gallery IDs;
// it ends with the way out (the flag, and the run-file key).
func NoReverseRelationMessage(ids []string) string {
	return ErrNoReverseRelation.Error() + "; missing for " + msgfmt.IDList(ids) +
		" (pass --drop-queries-without-positives to skip them as reverse queries; in a run file, retrieval: {queries_without_positives: drop})"
}
