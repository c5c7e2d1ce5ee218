package distributed

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// typedCentering is the centering test extractor with an extractor_type in
// its recipe, so the reconstruction names its type as the local run does.
type typedCentering struct{ *centering }

func (c typedCentering) Recipe() map[string]any {
	r := c.centering.Recipe()
	r["extractor_type"] = c.Type()
	return r
}

// comparable drops what a reconstruction does not reproduce (timings, the
// endpoint cache status of the local run).
func comparableJSON(t *testing.T, r *results.ExtractorResult) string {
	t.Helper()
	c := *r
	c.Runtime, c.CacheStatus = results.Runtime{}, ""
	b, err := json.Marshal([]any{c, c.Forward.PerQuery, c.Reverse})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Issue #12 acceptance, extraction side: a fitted same-modality extractor
// planned once (fit on the gallery, state stored), encoded in N ∈ {1, 3}
// extraction shards by workers that never fit, merged, scored in 3
// gallery shards (both layouts) and finalized, reconstructs (from-artifacts)
// the local run's extractor result, bidirectional on and off, with ties
// (duplicated gallery rows) and exclusions.
func TestFittedShardsScoreLikeLocalRun(t *testing.T) {
	ctx := context.Background()
	q, _ := matrix.NewDense64(4, 3, []float64{1, 2, 3, 0.5, 0.25, 1, 3, 1, 0.1, 1, 0, 0})
	g, _ := matrix.NewDense64(7, 3, []float64{1, 0, 0, 0.3, 1, 0, 1, 1, 0.7, 1, 0, 0, 1, 2, 3, 0.3, 1, 0, 5, 1, 1}) // 0=3, 1=5
	rel := [][]float64{{1, 0, 0, 2, 0, 0, 0}, {0, 1, 0, 0, 0, 3, 1}, {0, 0, 2, 0, 1, 0, 0}, {1, 0, 0, 0, 0, 1, 0}}
	for _, bidir := range []bool{false, true} {
		ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.Embeddings(q), Gallery: retrieval.Embeddings(g),
			Identity: retrieval.Declared("fitted-score", "1"), Exclusions: []retrieval.Pair{{QueryID: "0", GalleryID: "4"}, {QueryID: "2", GalleryID: "1"}, {QueryID: "3", GalleryID: "5"}}},
			retrieval.DenseRelevance(rel))
		if err != nil {
			t.Fatal(err)
		}
		cfg := retrieval.DefaultConfig()
		cfg.Similarity, cfg.Ks, cfg.PrimaryMetric, cfg.Bidirectional = retrieval.Cosine, []int{1, 3}, "ndcg@3", bidir
		local, err := (&evaluate.Benchmark{Dataset: ds, Config: cfg, Extractors: []extract.Entry{{Extractor: typedCentering{&centering{q: q, g: g}}}},
			Embedding: extract.DefaultEmbeddingConfig(), Memory: memory.Default(), RunDepth: -1}).Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := comparableJSON(t, local.ExtractorResults[0])
		for _, total := range []int{1, 3} {
			st := artifact.New(mem.New())
			planner := typedCentering{&centering{q: q, g: g}}
			p, _ := NewPlan("run.yaml", []byte("spec"), ds, total)
			pe, err := PlanExtractor(ctx, st, ds, "centering", extract.Entry{Extractor: planner}, 2, p, total)
			if err != nil {
				t.Fatal(err)
			}
			if planner.fits != 1 || pe.FittedStateKey == nil {
				t.Fatalf("N=%d: %d fits, fitted_state_key %v", total, planner.fits, pe.FittedStateKey)
			}
			p.Extractors = append(p.Extractors, pe)
			keys := map[string]string{}
			for _, side := range []string{artifact.SideQuery, artifact.SideGallery} {
				pe, ep, _ := p.Endpoint("centering", side)
				for _, sh := range ep.Shards {
					worker := typedCentering{&centering{q: q, g: g}} // a fresh process: never fitted
					if err := LoadState(ctx, st, pe, worker); err != nil {
						t.Fatal(err)
					}
					m, ids, err := Encode(ctx, ds, extract.Entry{Extractor: worker}, true, side, sh)
					if err != nil {
						t.Fatal(err)
					}
					if err := Write(ctx, st, pe, ep, sh, worker.Recipe(), m, ids); err != nil {
						t.Fatal(err)
					}
				}
				if _, _, err := WriteMerged(ctx, st, pe, ep); err != nil {
					t.Fatal(err)
				}
				keys[side] = ep.OutputKey
			}
			rk, _, err := st.WriteRelevance(ctx, ds, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, layout := range []rank.ShardLayout{rank.Contiguous, rank.Modulo} {
				req := artifact.ScoreRequest{QueryKey: keys[artifact.SideQuery], GalleryKey: keys[artifact.SideGallery], RelevanceKey: rk,
					Config: cfg, OutputKey: "scores/" + layout.String()}
				for i := range 3 {
					if _, err := st.ScorePartial(ctx, req, rank.Shard{Index: i, Total: 3, Layout: layout}); err != nil {
						t.Fatal(err)
					}
				}
				scored, err := st.FinalizeScore(ctx, req, 3, "")
				if err != nil {
					t.Fatal(err)
				}
				rc, err := st.FromArtifacts(ctx, []string{scored.Key})
				if err != nil {
					t.Fatal(err)
				}
				if got := comparableJSON(t, rc.ExtractorResults[0]); got != want {
					t.Fatalf("bidirectional %v, N=%d extraction shards, %s gallery shards:\nsharded %s\nlocal   %s", bidir, total, layout, got, want)
				}
			}
		}
	}
}
