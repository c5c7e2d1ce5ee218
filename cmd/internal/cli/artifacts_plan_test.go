package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/runspec"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// SPEC §9.5 in plans: a cache-safe extractor plans a miss at the canonical
// key, then a hit with no shards once the endpoint exists; `cache: false`
// is disabled and an extractor without a content identity bypassed, both
// on run-scoped keys.
func TestPlanCacheStatus(t *testing.T) {
	q, _ := matrix.NewDense64(2, 2, []float64{1, 0, 0, 1})
	g, _ := matrix.NewDense64(5, 2, []float64{1, 0, 0, 1, 1, 1, 2, 1, 1, 2})
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.Embeddings(q), Gallery: retrieval.Embeddings(g),
		Identity: retrieval.Declared("d", "1")}, retrieval.DenseRelevance([][]float64{{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}}))
	if err != nil {
		t.Fatal(err)
	}
	sc := &runspec.Session{Spec: &runspec.Spec{Embedding: runspec.Embedding{BatchSize: 2, StreamingEnabled: true}}, Dataset: ds}
	st := artifact.New(mem.New())
	plan := &Plan{RunID: strings.Repeat("ab", 16), DatasetIdentityKey: ds.IdentityKey()}
	ctx := context.Background()
	safe := &extract.Precomputed{ExtractorName: "safe", Query: q, Gallery: g, RecipeValues: map[string]any{"cache_identity": "tables-v1"}}
	pe, err := planExtractor(ctx, st, sc, &runspec.Extractor{Name: "safe", Cache: true}, safe, plan, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range pe.Endpoints {
		if ep.CacheStatus != artifact.CacheMiss || !ep.CacheEligible || !strings.HasPrefix(ep.OutputKey, "retrieval/embeddings/") {
			t.Errorf("%s: %+v", ep.Side, ep)
		}
		if want := min(3, ep.NSamples); len(ep.Shards) != want || ep.Shards[want-1].OutputKey != artifact.ShardKey(ep.OutputKey, want-1, want) {
			t.Errorf("%s shards %+v", ep.Side, ep.Shards)
		}
	}
	gk := pe.Endpoints[1].OutputKey
	if err := st.WriteEndpoint(ctx, gk, g, &artifact.Embedding{EndpointIdentity: artifact.EndpointIdentity{Side: "gallery"}}); err != nil {
		t.Fatal(err)
	}
	pe, _ = planExtractor(ctx, st, sc, &runspec.Extractor{Name: "safe", Cache: true}, safe, plan, 3)
	if ep := pe.Endpoints[1]; ep.CacheStatus != artifact.CacheHit || len(ep.Shards) != 0 {
		t.Errorf("existing endpoint: %+v", ep)
	}
	if ep := pe.Endpoints[0]; ep.CacheStatus != artifact.CacheMiss {
		t.Errorf("query endpoint: %+v", ep)
	}
	for _, c := range []struct {
		e      *runspec.Extractor
		x      extract.Extractor
		status string
	}{
		{&runspec.Extractor{Name: "safe", Cache: false}, safe, artifact.CacheDisabled},
		// An encoder without cache_identity or content identity
		// (precomputed ones have one: the digests of their tables).
		{&runspec.Extractor{Name: "plain", Cache: true}, unsafeEncoder{}, artifact.CacheBypassed},
	} {
		pe, err := planExtractor(ctx, st, sc, c.e, c.x, plan, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range pe.Endpoints {
			if ep.CacheStatus != c.status || ep.CacheEligible || !strings.HasPrefix(ep.OutputKey, "runs/"+plan.RunID+"/retrieval/embeddings/") || len(ep.Shards) != 1 {
				t.Errorf("%s %s: %+v", c.e.Name, ep.Side, ep)
			}
		}
	}
}

// unsafeEncoder is an extractor whose recipe has no identity (SPEC §9.5).
type unsafeEncoder struct{}

func (unsafeEncoder) Name() string { return "plain" }
func (unsafeEncoder) Type() string { return "func" }
func (unsafeEncoder) Recipe() map[string]any {
	return map[string]any{"name": "plain", "extractor_type": "func"}
}
func (unsafeEncoder) StreamingSafe() bool                                          { return true }
func (unsafeEncoder) Modality() string                                             { return extract.ModalityEmbeddings }
func (unsafeEncoder) Encode(context.Context, extract.Batch) (matrix.Matrix, error) { return nil, nil }
