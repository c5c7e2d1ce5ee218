package extract

import (
	"context"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// TestPrecomputedTableRowsMustMatch: a table with more (or fewer) rows than
// its endpoint fails before any batch with the SPEC §9.4 message instead of
// silently using rows [0, n).
func TestPrecomputedTableRowsMustMatch(t *testing.T) {
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	g3, _ := matrix.FromRows([][]float64{{0, 1}, {1, 0}, {1, 1}})
	g4, _ := matrix.FromRows([][]float64{{0, 1}, {1, 0}, {1, 1}, {2, 2}})
	q3, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}, {1, 1}})
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.IDsOnly(2), Gallery: retrieval.IDsOnly(3), Identity: retrieval.FromContent()},
		retrieval.RecordRelevance([]retrieval.Record{{QueryID: "0", GalleryID: "1", Grade: 1}, {QueryID: "1", GalleryID: "0", Grade: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		q, g  matrix.Matrix
		want  string
		calls bool
	}{
		{"gallery longer", q, g4, "Retriever 'tables' gallery embeddings returned 4 embeddings for 3 rows", false},
		{"query longer", q3, g3, "Retriever 'tables' query embeddings returned 3 embeddings for 2 rows", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bench := &Benchmark{Dataset: ds, Config: retrieval.DefaultConfig(), Embedding: EmbeddingConfig{BatchSize: 1, StreamingEnabled: true},
				Memory: memory.Default(), RunDepth: -1, Extractors: []Entry{{Extractor: &Precomputed{ExtractorName: "tables", Query: tc.q, Gallery: tc.g}}}}
			_, err := bench.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

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
