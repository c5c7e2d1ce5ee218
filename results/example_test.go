package results_test

import (
	"context"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Reading back the JSON report that `vertebrae retrieval run --json` writes
// (here produced in-process by evaluate.Run and MarshalReport, which is what
// the CLI writes): ReadReport restores the results with their metrics and
// per-query values, and Verify checks that its numbers are ones a run can
// produce before anything is computed from a report read from disk.
func ExampleReadReport() {
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}, {1, 0.9}})
	g, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}, {0.6, 0.8}})
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries:  retrieval.Embeddings(q),
		Gallery:  retrieval.Embeddings(g),
		Identity: retrieval.FromContent(),
	}, retrieval.RecordRelevance([]retrieval.Record{
		{QueryID: "0", GalleryID: "0", Grade: 1},
		{QueryID: "1", GalleryID: "1", Grade: 1},
		{QueryID: "2", GalleryID: "0", Grade: 1}, // ranked second, behind gallery row 2
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
	data, err := bench.MarshalReport() // the bytes of report.json
	if err != nil {
		fmt.Println(err)
		return
	}

	report, err := results.ReadReport(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := report.Verify(); err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range report.Ranking {
		fmt.Printf("#%d %s %.4f\n", e.Rank, e.Name, e.PrimaryScore)
	}
	fwd := report.ExtractorResults[0].Forward
	mrr, _ := fwd.Metrics.Get("mrr")
	fmt.Printf("%s %.4f, mrr %.4f, %d queries\n", fwd.PrimaryMetric, fwd.Score, mrr, fwd.Metadata.NQueries)
	for _, row := range fwd.PerQuery {
		v, _ := row.Metrics.Get(fwd.PrimaryMetric)
		fmt.Printf("query %s: %.4f\n", row.QueryID, v)
	}
	// Output:
	// #1 mine 0.8770
	// ndcg@10 0.8770, mrr 0.8333, 3 queries
	// query 0: 1.0000
	// query 1: 1.0000
	// query 2: 0.6309
}
