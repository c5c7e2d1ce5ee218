package retrieval

import (
	"reflect"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

type opaqueItems int

func (o opaqueItems) Len() int               { return int(o) }
func (o opaqueItems) Modality() string       { return "opaque" }
func (o opaqueItems) Slice(lo, hi int) Items { return opaqueItems(hi - lo) }

type gatherItems []int

func (g gatherItems) Len() int               { return len(g) }
func (g gatherItems) Modality() string       { return "numbers" }
func (g gatherItems) Slice(lo, hi int) Items { return g[lo:hi] }
func (g gatherItems) Gather(start, stride, count int) Items {
	out := make(gatherItems, count)
	for i := range out {
		out[i] = g[start+i*stride]
	}
	return out
}

// GatherItems picks rows start, start+stride, … of every built-in Items
// kind and of a Gatherer, and reports other kinds as not gatherable.
func TestGatherItems(t *testing.T) {
	m, _ := matrix.NewDense64(5, 1, []float64{0, 1, 2, 3, 4})
	for _, c := range []struct {
		in, want Items
	}{
		{Texts{"a", "b", "c", "d", "e"}, Texts{"b", "d"}},
		{Images{"a", "b", "c", "d", "e"}, Images{"b", "d"}},
		{IDsOnly(5), IDsOnly(2)},
		{gatherItems{0, 1, 2, 3, 4}, gatherItems{1, 3}},
	} {
		got, ok := GatherItems(c.in, 1, 2, 2)
		if !ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%T: %v, %v; want %v", c.in, got, ok, c.want)
		}
	}
	got, ok := GatherItems(Embeddings(m), 1, 3, 2)
	e, _ := got.(EmbeddingItems)
	if d, isDense := e.Matrix().(*matrix.Dense); !ok || !isDense || !reflect.DeepEqual(d.Float64Data(), []float64{1, 4}) {
		t.Errorf("embeddings: %v, %v", got, ok)
	}
	if _, ok := GatherItems(opaqueItems(5), 0, 2, 2); ok {
		t.Error("an Items kind without Gather was gathered")
	}
}
