package evaluate_test

import (
	"context"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// The library example of README.md (SPEC §4.10 example 1, graded subset).
func ExampleRun() {
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	g, _ := matrix.FromRows([][]float64{{1, 0}, {0.7, 0.7}, {0, 1}})
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries:  retrieval.Embeddings(q),
		Gallery:  retrieval.Embeddings(g),
		Identity: retrieval.FromContent(),
	}, retrieval.RecordRelevance([]retrieval.Record{
		{QueryID: "0", GalleryID: "0", Grade: 3},
		{QueryID: "1", GalleryID: "2", Grade: 2},
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	bench, err := evaluate.Run(context.Background(), ds, retrieval.DefaultConfig(),
		[]evaluate.Backbone{evaluate.Precomputed("mine")}, evaluate.Options{RunDepth: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	r := bench.ExtractorResults[0]
	mrr, _ := r.Forward.Metrics.Get("mrr")
	fmt.Println(r.Name, r.PrimaryScore, mrr)
	// Output: mine 1 1
}
