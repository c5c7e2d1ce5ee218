package artifact

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// Bidirectional scoring of a gallery with distractors (gc and ge: no
// eligible reverse relation, gc's only one being excluded): refused without
// queries_without_positives: drop, naming the flag; with it, Score, the
// gallery shards + FinalizeScore (both layouts) and evaluate.Run agree bit
// for bit, and the reverse direction has the judged gallery items only as
// queries.
func TestScoreDropReverseQueriesWithoutPositives(t *testing.T) {
	q, _ := matrix.NewDense64(3, 3, []float64{1, 0, 0, 0, 1, 0, 0.3, 0.3, 0.9})
	g, _ := matrix.NewDense64(6, 3, []float64{1, 0, 0, 0.7, 0.7, 0, 0, 1, 0, 0.5, 0.5, 0.5, 0.2, 0.9, 0.1, 0.5, 0.5, 0.5})
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Embeddings(q), Gallery: retrieval.Embeddings(g),
		QueryIDs: []string{"qa", "qb", "qc"}, GalleryIDs: []string{"ga", "gb", "gc", "gd", "ge", "gf"},
		Identity:   retrieval.Declared("example", "drop"),
		Exclusions: []retrieval.Pair{{QueryID: "qa", GalleryID: "gd"}, {QueryID: "qb", GalleryID: "gc"}},
	}, retrieval.DenseRelevance([][]float64{{3, 1, 0, 0, 0, 0}, {0, 0, 2, 1, 0, 0}, {0, 1, 0, 0, 0, 2}}))
	if err != nil {
		t.Fatal(err)
	}
	f := scoreFixture{s: New(mem.New()), ds: ds, q: q, g: g}
	f.qk, f.gk = f.writeEndpoint(t, "e/drop/query", SideQuery, q, ds.QueryIDs()), f.writeEndpoint(t, "e/drop/gallery", SideGallery, g, ds.GalleryIDs())
	if f.rk, _, err = f.s.WriteRelevance(ctx, ds, ""); err != nil {
		t.Fatal(err)
	}
	cfg := retrieval.DefaultConfig()
	cfg.Ks, cfg.PrimaryMetric, cfg.Bidirectional, cfg.Similarity = []int{1, 2}, "ndcg@2", true, retrieval.Dot
	req := f.request(cfg)
	req.OutputKey = "scores/refused"
	if _, err := f.s.Score(ctx, req); err == nil || !strings.Contains(err.Error(), `missing for ["gc", "ge"]`) || !strings.Contains(err.Error(), "--drop-queries-without-positives") {
		t.Fatalf("without drop: %v", err)
	}
	cfg.QueriesWithoutPositives = retrieval.UnjudgedDrop
	req = f.request(cfg)
	req.OutputKey = "scores/plain"
	want, err := f.s.Score(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	local, err := evaluate.Run(ctx, ds, cfg, []evaluate.Backbone{evaluate.Precomputed("toy")}, evaluate.Options{RunDepth: -1})
	if err != nil {
		t.Fatal(err)
	}
	if local.DatasetSummary.NDroppedReverseQueries != 2 {
		t.Fatalf("summary %+v", local.DatasetSummary)
	}
	lr := local.ExtractorResults[0]
	for name, pair := range map[string][2]any{"forward": {lr.Forward, stored(t, f.s, want).Forward}, "reverse": {lr.Reverse, stored(t, f.s, want).Reverse}} {
		l, _ := json.Marshal(pair[0])
		var a, b any
		_ = json.Unmarshal(l, &a)
		_ = json.Unmarshal(pair[1].(json.RawMessage), &b)
		if ja, jb := mustJSON(a), mustJSON(b); ja != jb {
			t.Errorf("%s differs:\n%s\n%s", name, ja, jb)
		}
	}
	if lr.Reverse.Metadata.NQueries != 4 || want.Doc.PrimaryScore != lr.PrimaryScore {
		t.Fatalf("reverse metadata %+v, primary %v vs %v", lr.Reverse.Metadata, want.Doc.PrimaryScore, lr.PrimaryScore)
	}
	for _, layout := range []rank.ShardLayout{rank.Contiguous, rank.Modulo} {
		for _, total := range []int{1, 2, 4} {
			req.OutputKey = "scores/" + layout.String() + string(rune('0'+total))
			for i := range total {
				if _, err := f.s.ScorePartial(ctx, req, rank.Shard{Index: i, Total: total, Layout: layout}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := f.s.FinalizeScore(ctx, req, total, "")
			if err != nil {
				t.Fatal(err)
			}
			if a, b := evaluationJSON(t, f.s, got), evaluationJSON(t, f.s, want); a != b {
				t.Fatalf("%s N=%d:\nfinalize %s\nscore    %s", layout, total, a, b)
			}
		}
	}
}
