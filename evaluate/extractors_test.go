package evaluate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// twoTables is a dataset of 2 queries and 3 gallery rows without inputs:
// a precomputed extractor supplies the rows.
func twoTables(t *testing.T) *retrieval.Dataset {
	t.Helper()
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.IDsOnly(2), Gallery: retrieval.IDsOnly(3), Identity: retrieval.FromContent()},
		retrieval.RecordRelevance([]retrieval.Record{{QueryID: "0", GalleryID: "1", Grade: 1}, {QueryID: "1", GalleryID: "0", Grade: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func tablesBenchmark(ds *retrieval.Dataset, q, g matrix.Matrix) *evaluate.Benchmark {
	return &evaluate.Benchmark{Dataset: ds, Config: retrieval.DefaultConfig(), Embedding: extract.EmbeddingConfig{BatchSize: 1, StreamingEnabled: true},
		Memory: memory.Default(), RunDepth: -1, Extractors: []extract.Entry{{Extractor: &extract.Precomputed{ExtractorName: "tables", Query: q, Gallery: g}}}}
}

// A precomputed extractor whose rows rank each query's positive first
// scores 1.
func TestBenchmarkPrecomputed(t *testing.T) {
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	g, _ := matrix.FromRows([][]float64{{0, 1}, {1, 0}, {1, 1}})
	res, err := tablesBenchmark(twoTables(t), q, g).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.ExtractorResults[0].PrimaryScore != 1 || res.ExtractorResults[0].ExtractorType != "precomputed" {
		t.Errorf("%+v", res.ExtractorResults[0])
	}
}

// A table with more (or fewer) rows than its endpoint fails before any
// batch with the SPEC §9.4 message instead of silently using rows [0, n).
func TestBenchmarkTableRowsMustMatch(t *testing.T) {
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	g3, _ := matrix.FromRows([][]float64{{0, 1}, {1, 0}, {1, 1}})
	g4, _ := matrix.FromRows([][]float64{{0, 1}, {1, 0}, {1, 1}, {2, 2}})
	q3, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}, {1, 1}})
	for _, tc := range []struct {
		name string
		q, g matrix.Matrix
		want string
	}{
		{"gallery longer", q, g4, "Retriever 'tables' gallery embeddings returned 4 embeddings for 3 rows"},
		{"query longer", q3, g3, "Retriever 'tables' query embeddings returned 3 embeddings for 2 rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tablesBenchmark(twoTables(t), tc.q, tc.g).Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// pictures stand in for images without files.
type pictures []string

func (p pictures) Len() int                         { return len(p) }
func (p pictures) Modality() string                 { return "image" }
func (p pictures) Slice(lo, hi int) retrieval.Items { return p[lo:hi] }

// A two-branch extractor (texts to one branch, the other modality to the
// other) is evaluated through its branches; each side is encoded once.
func TestBenchmarkCrossModalBranches(t *testing.T) {
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Texts{"a cat", "a dog"}, Gallery: pictures{"dog.png", "cat.png"}, Identity: retrieval.Declared("pets", "1"),
	}, retrieval.RecordRelevance([]retrieval.Record{{QueryID: "0", GalleryID: "1", Grade: 1}, {QueryID: "1", GalleryID: "0", Grade: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	oneHot := func(items []string) (matrix.Matrix, error) {
		rows := make([][]float64, len(items))
		for i, s := range items {
			rows[i] = []float64{0, 0}
			if strings.Contains(s, "cat") {
				rows[i][0] = 1
			} else {
				rows[i][1] = 1
			}
		}
		return matrix.FromRows(rows)
	}
	var calls []string
	x := &extract.FuncBranches{
		ExtractorName: "toy-clip", QueryModality: "text", GalleryModality: "image",
		Query: func(_ context.Context, b extract.Batch) (matrix.Matrix, error) {
			calls = append(calls, "query")
			return oneHot(b.Items.(retrieval.Texts))
		},
		Gallery: func(_ context.Context, b extract.Batch) (matrix.Matrix, error) {
			calls = append(calls, "gallery")
			return oneHot(b.Items.(pictures))
		},
	}
	bench := &evaluate.Benchmark{Dataset: ds, Config: retrieval.DefaultConfig(), Memory: memory.Default(), RunDepth: -1,
		Embedding:  extract.EmbeddingConfig{BatchSize: 2, StreamingEnabled: true},
		Extractors: []extract.Entry{{Extractor: x, QueryBranch: "query", GalleryBranch: "gallery"}}}
	res, err := bench.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ExtractorResults[0].PrimaryScore; got != 1 {
		t.Errorf("primary score %v, want 1", got)
	}
	if strings.Join(calls, ",") != "query,gallery" {
		t.Errorf("calls %v", calls)
	}
}
