package runspec_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/runspec"
)

// runFile is a run file (SPEC §6.5) over embedding tables: relative paths
// resolve against the run file's directory. The first extractor scores the
// dataset's own tables; the second its own gallery table.
const runFile = `version: 1
dataset:
  id: tiny
  revision: "1"
  queries: {path: q.npy}
  gallery: {path: g.npy}
  qrels: {path: rel.qrels}   # TREC: query 0 gallery grade
retrieval: {ks: [1, 3], primary_metric: mrr}
extractors:
  - {name: tables, type: precomputed}
  - {name: other, type: precomputed, queries: q.npy, gallery: other.npy}
`

// writeNPY saves rows as a .npy file, as numpy.save would.
func writeNPY(path string, rows [][]float64) error {
	m, err := matrix.FromRows(rows)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := npy.WriteDense(f, m); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Open reads a run file, validates it and loads its dataset (tables,
// qrels, identity); the session's extractors are then built by name with
// Session.Entry. Close releases the files the session holds open.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "runspec-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	for _, t := range []struct {
		name string
		rows [][]float64
	}{
		{"q.npy", [][]float64{{1, 0}, {0, 1}}},
		{"g.npy", [][]float64{{1, 0}, {0.7, 0.7}, {0, 1}}},
		{"other.npy", [][]float64{{0.9, 0.1}, {0.1, 0.9}, {0.2, 0.8}}},
	} {
		if err := writeNPY(filepath.Join(dir, t.name), t.rows); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "rel.qrels"), []byte("0 0 0 3\n0 0 1 1\n1 0 2 2\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(runFile), 0o644); err != nil {
		fmt.Println(err)
		return
	}

	s, err := runspec.Open(context.Background(), path, runspec.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Println("queries:", s.Dataset.NumQueries(), "gallery:", s.Dataset.NumGallery())
	fmt.Println("primary metric:", s.Spec.Retrieval.PrimaryMetric, "ks:", s.Spec.Retrieval.Ks)
	for _, e := range s.Spec.Extractors {
		fmt.Println("extractor:", e.Name, e.Type)
	}

	// Evaluate every extractor of the file, as `vertebrae retrieval run
	// --spec` does.
	entries := make([]extract.Entry, len(s.Spec.Extractors))
	for i, e := range s.Spec.Extractors {
		if entries[i], err = s.Entry(context.Background(), e.Name, ""); err != nil {
			fmt.Println(err)
			return
		}
	}
	bench := &evaluate.Benchmark{
		Dataset: s.Dataset, Config: s.Spec.Retrieval, Extractors: entries, Compression: s.Spec.Compression,
		Embedding: extract.EmbeddingConfig(s.Spec.Embedding), Memory: s.Spec.Memory, RunDepth: -1,
	}
	res, err := bench.Run(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.ExtractorResults {
		fmt.Printf("%s mrr %.4f\n", r.Name, r.PrimaryScore)
	}
	// Output:
	// queries: 2 gallery: 3
	// primary metric: mrr ks: [1 3]
	// extractor: tables precomputed
	// extractor: other precomputed
	// tables mrr 1.0000
	// other mrr 0.7500
}
