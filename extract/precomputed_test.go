package extract

import (
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// TestPrecomputedRecipeCarriesTableDigests: the recipe identifies the
// tables by their §2.9 digests, so changing one value changes the recipe
// hash (SPEC §9.5).
func TestPrecomputedRecipeCarriesTableDigests(t *testing.T) {
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	g, _ := matrix.FromRows([][]float64{{0, 1}, {1, 0}})
	g2, _ := matrix.FromRows([][]float64{{0, 1}, {1, 0.5}})
	a := &Precomputed{ExtractorName: "t", Query: q, Gallery: g}
	b := &Precomputed{ExtractorName: "t", Query: q, Gallery: g2}
	r := a.Recipe()
	d, ok := r["table_digests"].(map[string]any)
	if !ok || r["cache_safe"] != true {
		t.Fatalf("recipe %v lacks table_digests / cache_safe", r)
	}
	qd := d["query"].(map[string]any)
	if qd["kind"] != "dense" || qd["dtype"] != "float64" || len(qd["sha256"].(string)) != 64 {
		t.Fatalf("query digest %v", qd)
	}
	ha, err := RecipeHash(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := RecipeHash(b)
	if err != nil {
		t.Fatal(err)
	}
	if ha == hb {
		t.Fatal("different gallery tables give the same recipe hash")
	}
}
