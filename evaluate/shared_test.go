package evaluate

import (
	"context"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Run scores its backbones under a context that reserves the fingerprint
// chain's processor (rank.WithSharedProcessor) until the protocol
// fingerprint is known: the backbone sees the reservation, and it is
// released by the time Run returns.
func TestRunReservesProcessorForFingerprints(t *testing.T) {
	q, _ := matrix.NewDense64(2, 2, []float64{1, 0, 0, 1})
	g, _ := matrix.NewDense64(3, 2, []float64{1, 0, 0, 1, 1, 1})
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.Embeddings(q), Gallery: retrieval.Embeddings(g)},
		retrieval.LabelRelevance([]string{"a", "a"}, []string{"a", "a", "a"}), retrieval.WithIdentity(retrieval.FromContent()), retrieval.WithBackgroundIdentity())
	if err != nil {
		t.Fatal(err)
	}
	b := Precomputed("x")
	var seen <-chan struct{}
	encode := b.Encode
	b.Encode = func(ctx context.Context, side string, items retrieval.Items) (matrix.Matrix, error) {
		seen = rank.SharedProcessor(ctx)
		return encode(ctx, side, items)
	}
	if _, err := Run(context.Background(), ds, retrieval.DefaultConfig(), []Backbone{b}, Options{}); err != nil {
		t.Fatal(err)
	}
	if seen == nil {
		t.Fatal("the backbone's context reserves no processor for the fingerprints")
	}
	select {
	case <-seen:
	default:
		t.Fatal("the reservation is still held after Run returned")
	}
}
