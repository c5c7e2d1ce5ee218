package retrieval

import (
	"context"
	"errors"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// A done context stops dataset construction (every relevance form and the
// content identity) and the digest with its error; a live one changes
// nothing.
func TestDatasetConstructionStopsWithContext(t *testing.T) {
	m, err := matrix.NewDense32(3, 2, []float32{1, 0, 0, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	in := func() DatasetInputs {
		return DatasetInputs{Queries: Embeddings(m), Gallery: Embeddings(m), Identity: FromContent()}
	}
	rels := map[string]func() Relevance{
		"labels": func() Relevance { return LabelRelevance([]string{"a", "b", "a"}, []string{"a", "b", "a"}) },
		"records": func() Relevance {
			return RecordRelevance([]Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "1", GalleryID: "1", Grade: 1}, {QueryID: "2", GalleryID: "2", Grade: 1}})
		},
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for name, rel := range rels {
		want, err := NewDataset(in(), rel())
		if err != nil {
			t.Fatal(err)
		}
		got, err := NewDataset(in(), rel(), WithContext(context.Background()))
		if err != nil || got.IdentityKey() != want.IdentityKey() {
			t.Errorf("%s: live context: key %s, err %v; want key %s", name, got.IdentityKey(), err, want.IdentityKey())
		}
		if _, err := NewDataset(in(), rel(), WithContext(done)); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: done context: err %v, want context.Canceled", name, err)
		}
	}
	if _, err := EmbeddingDigestContext(done, m); !errors.Is(err, context.Canceled) {
		t.Errorf("EmbeddingDigestContext: err %v, want context.Canceled", err)
	}
	want, _ := EmbeddingDigest(m)
	if got, err := EmbeddingDigestContext(context.Background(), m); err != nil || got["sha256"] != want["sha256"] {
		t.Errorf("EmbeddingDigestContext: %v, %v; want %v", got, err, want)
	}
}
