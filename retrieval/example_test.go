package retrieval_test

import (
	"fmt"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// A dataset built from two embedding matrices and graded relevance
// judgements (records of query ID, gallery ID and grade). Rows are named by
// the ID lists; without them they are "0".."n-1".
func ExampleNewDataset() {
	q, err := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := matrix.FromRows([][]float64{{1, 0}, {0.7, 0.7}, {0, 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries:    retrieval.Embeddings(q),
		Gallery:    retrieval.Embeddings(g),
		QueryIDs:   []string{"q1", "q2"},
		GalleryIDs: []string{"d1", "d2", "d3"},
		Identity:   retrieval.FromContent(),
	}, retrieval.RecordRelevance([]retrieval.Record{
		{QueryID: "q1", GalleryID: "d1", Grade: 3},
		{QueryID: "q1", GalleryID: "d2", Grade: 1},
		{QueryID: "q2", GalleryID: "d3", Grade: 2},
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	s := ds.Summary()
	fmt.Println("queries:", ds.NumQueries(), "gallery:", ds.NumGallery())
	fmt.Println("relevance pairs:", s.NRelevancePairs)
	for _, p := range ds.Positives(0) {
		fmt.Printf("%s -> %s grade %.0f\n", ds.QueryIDs()[0], ds.GalleryIDs()[p.Index], p.Grade)
	}
	fmt.Println("identity:", s.Identity["mode"])
	// Output:
	// queries: 2 gallery: 3
	// relevance pairs: 3
	// q1 -> d1 grade 3
	// q1 -> d2 grade 1
	// identity: content
}

// Label-derived relevance: a gallery row is a positive (grade 1) of every
// query with the same label. The classes are held implicitly, so large
// classes never become explicit pairs.
func ExampleLabelRelevance() {
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	g, _ := matrix.FromRows([][]float64{{0.9, 0.1}, {0.1, 0.9}, {0.8, 0.2}})
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries:  retrieval.Embeddings(q),
		Gallery:  retrieval.Embeddings(g),
		Identity: retrieval.Declared("pets", "v1"),
	}, retrieval.LabelRelevance([]string{"cat", "dog"}, []string{"cat", "dog", "cat"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, id := range ds.QueryIDs() {
		fmt.Printf("query %s: %d positive(s)", id, len(ds.Positives(i)))
		for _, p := range ds.Positives(i) {
			fmt.Printf(" %s", ds.GalleryIDs()[p.Index])
		}
		fmt.Println()
	}
	s := ds.Summary()
	fmt.Println("relevance pairs:", s.NRelevancePairs, "implicit classes:", ds.Classes() != nil)
	fmt.Println("identity:", s.Identity["mode"], s.Identity["dataset_id"], s.Identity["revision"])
	// Output:
	// query 0: 2 positive(s) 0 2
	// query 1: 1 positive(s) 1
	// relevance pairs: 3 implicit classes: true
	// identity: declared pets v1
}
