package retrieval

import "github.com/vertebrae-eval/vertebrae/matrix"

// Gatherer is an optional Items method: the items of endpoint rows start,
// start+stride, …, start+(count-1)·stride as one Items value, so a modulo
// extraction shard (SPEC §11.2) can hand them to an encoder in one batch.
type Gatherer interface {
	Gather(start, stride, count int) Items
}

// GatherItems returns the items of rows start, start+stride, … (count of
// them) and true, or false when items cannot be gathered (an Items type
// without Gather whose rows this package cannot copy); the caller then
// falls back to one Slice per row. The rows must lie within items.
func GatherItems(items Items, start, stride, count int) (Items, bool) {
	if stride == 1 {
		return items.Slice(start, start+count), true
	}
	switch t := items.(type) {
	case Texts:
		return gatherSlice(t, start, stride, count), true
	case Images:
		return gatherSlice(t, start, stride, count), true
	case IDsOnly:
		return IDsOnly(count), true
	case EmbeddingItems:
		if t.m == nil {
			return nil, false
		}
		m, err := matrix.StridedRows(t.m, start, stride, count)
		if err != nil {
			return nil, false // not a Dense or CSR matrix
		}
		return EmbeddingItems{m: m}, true
	case Gatherer:
		return t.Gather(start, stride, count), true
	}
	return nil, false
}

func gatherSlice[S ~[]E, E any](s S, start, stride, count int) S {
	out := make(S, count)
	for i := range out {
		out[i] = s[start+i*stride]
	}
	return out
}
