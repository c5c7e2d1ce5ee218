package compare_test

import (
	"context"
	"fmt"
	"math"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// arcs returns unit vectors at the given angles (degrees), one per row.
func arcs(degrees ...float64) *matrix.Dense {
	rows := make([][]float64, len(degrees))
	for i, d := range degrees {
		rows[i] = []float64{math.Cos(d * math.Pi / 180), math.Sin(d * math.Pi / 180)}
	}
	m, err := matrix.FromRows(rows)
	if err != nil {
		panic(err)
	}
	return m
}

// Eight queries, each relevant to the gallery row of the same index. The
// "good" backbone embeds every gallery row exactly at its query; the "weak"
// one turns them all by 12°, so that from the second query on the previous
// gallery row (8° away) outranks the relevant one (12° away).
var (
	queries     = arcs(0, 20, 40, 60, 80, 100, 120, 140)
	goodGallery = arcs(0, 20, 40, 60, 80, 100, 120, 140)
	weakGallery = arcs(12, 32, 52, 72, 92, 112, 132, 152)
)

// dataset is the evaluated dataset: its relevance (query i ↔ gallery i)
// and a declared identity, so that reports of separate runs on it merge.
func dataset() (*retrieval.Dataset, error) {
	var recs []retrieval.Record
	for i := range queries.Rows() {
		recs = append(recs, retrieval.Record{QueryID: fmt.Sprint(i), GalleryID: fmt.Sprint(i), Grade: 1})
	}
	return retrieval.NewDataset(retrieval.DatasetInputs{
		Queries:  retrieval.Embeddings(queries),
		Gallery:  retrieval.Embeddings(goodGallery),
		Identity: retrieval.Declared("arcs", "1"),
	}, retrieval.RecordRelevance(recs))
}

// Two backbones with precomputed tables, evaluated on one dataset and
// compared with a paired significance test over the per-query values: the
// mean difference of each compared metric, the sign-flip randomization test
// (exact here: 2^8 sign vectors are fewer than the 10,000 permutations)
// and the decision after Holm adjustment.
func ExampleCompute() {
	ctx := context.Background()
	ds, err := dataset()
	if err != nil {
		fmt.Println(err)
		return
	}
	tables := func(name string, q, g matrix.Matrix) evaluate.Backbone {
		return evaluate.Backbone{Name: name, Type: "precomputed",
			Encode: func(_ context.Context, side string, _ retrieval.Items) (matrix.Matrix, error) {
				if side == "query" {
					return q, nil
				}
				return g, nil
			}}
	}
	bench, err := evaluate.Run(ctx, ds, retrieval.DefaultConfig(), []evaluate.Backbone{
		tables("weak", queries, weakGallery),
		tables("good", queries, goodGallery),
	}, evaluate.Options{RunDepth: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	// evaluate.Run already filled bench.Comparison with the default
	// settings (evaluate.Options.Comparison); Compute recomputes it with
	// others: every result against a baseline, and MRR besides the
	// primary metric.
	cmp, err := compare.Compute(ctx, bench, compare.Options{Baseline: "weak", Metrics: []string{"mrr"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("winner:", bench.Ranking[0].Name)
	for _, bl := range cmp.Blocks {
		for _, p := range bl.Pairs {
			fmt.Printf("%s: %s - %s = %.4f, randomization p = %.4f (exact %v), significant %v\n",
				bl.Metric, p.A, p.B, p.MeanDiff, p.RandomizationP, p.RandomizationExact, p.Significant)
		}
	}
	// Output:
	// winner: good
	// ndcg@10: good - weak = 0.3229, randomization p = 0.0156 (exact true), significant true
	// mrr: good - weak = 0.4375, randomization p = 0.0156 (exact true), significant true
}

// Reports written by separate runs (`vertebrae retrieval run --json`, one
// backbone each) merged into one benchmark, as `vertebrae retrieval compare`
// does, and compared. Reports of different datasets or protocols are
// refused.
func ExampleMergeReports() {
	ctx := context.Background()
	ds, err := dataset()
	if err != nil {
		fmt.Println(err)
		return
	}
	var reports []compare.Report
	for _, b := range []struct {
		name string
		g    matrix.Matrix
	}{{"good", goodGallery}, {"weak", weakGallery}} {
		backbone := evaluate.Backbone{Name: b.name, Type: "precomputed",
			Encode: func(_ context.Context, side string, _ retrieval.Items) (matrix.Matrix, error) {
				if side == "query" {
					return queries, nil
				}
				return b.g, nil
			}}
		bench, err := evaluate.Run(ctx, ds, retrieval.DefaultConfig(), []evaluate.Backbone{backbone}, evaluate.Options{RunDepth: -1})
		if err != nil {
			fmt.Println(err)
			return
		}
		data, err := bench.MarshalReport()
		if err != nil {
			fmt.Println(err)
			return
		}
		reports = append(reports, compare.Report{Source: b.name + ".json", Data: data})
	}

	merged, err := compare.MergeReports(reports)
	if err != nil {
		fmt.Println(err)
		return
	}
	cmp, err := compare.Compute(ctx, merged, compare.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range merged.Ranking {
		fmt.Printf("#%d %s %.4f\n", e.Rank, e.Name, e.PrimaryScore)
	}
	bl := cmp.Blocks[0]
	for _, r := range bl.Results {
		fmt.Printf("%s: mean %s %.4f, beats %v\n", r.Name, bl.Metric, r.Mean, r.Beats)
	}
	// Output:
	// #1 good 1.0000
	// #2 weak 0.6771
	// good: mean ndcg@10 1.0000, beats [weak]
	// weak: mean ndcg@10 0.6771, beats []
}
