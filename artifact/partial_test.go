package artifact

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// evaluationJSON is a score document without its output key.
// stored is a committed score's document, read back whole (Scored.Doc
// holds its scalar fields only).
func stored(t *testing.T, s *Store, sc *Scored) *Evaluation {
	t.Helper()
	var d Evaluation
	if _, err := s.ReadJSON(ctx, sc.Key, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func evaluationJSON(t *testing.T, s *Store, sc *Scored) string {
	t.Helper()
	var doc map[string]any
	if _, err := s.ReadJSON(ctx, sc.Key, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["output_key"] != sc.Key || doc["primary_score"] != sc.Doc.PrimaryScore && fmt.Sprint(doc["primary_score"]) != fmt.Sprint(sc.Doc.PrimaryScore) {
		t.Fatalf("stored document at %s: output_key %v, primary_score %v; committed %v", sc.Key, doc["output_key"], doc["primary_score"], sc.Doc.PrimaryScore)
	}
	delete(doc, "output_key")
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Gallery shards + FinalizeScore write the document Score writes, for
// plain and compressed pairs, both directions and both layouts.
func TestFinalizeScoreEqualsScore(t *testing.T) {
	f := newScoreFixture(t, "1")
	comp, err := f.s.Compress(ctx, f.qk, f.gk, compress.Config{Method: compress.MethodPCA, NComponents: ptr(2)}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, bidir := range []bool{false, true} {
		for pi, pair := range [][2]string{{f.qk, f.gk}, {comp.QueryOutputKey, comp.GalleryOutputKey}} {
			// One key per case: an explicit output key never takes other content.
			base := fmt.Sprintf("scores/%v-%d/", bidir, pi)
			cfg := retrieval.DefaultConfig()
			cfg.Ks, cfg.PrimaryMetric, cfg.Bidirectional, cfg.Similarity = []int{1, 2}, "ndcg@2", bidir, retrieval.Dot
			req := f.request(cfg)
			req.QueryKey, req.GalleryKey, req.OutputKey = pair[0], pair[1], base+"plain"
			want, err := f.s.Score(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, layout := range []rank.ShardLayout{rank.Contiguous, rank.Modulo} {
				req.OutputKey = base + layout.String()
				for i := range 3 {
					sp, err := f.s.ScorePartial(ctx, req, rank.Shard{Index: i, Total: 3, Layout: layout})
					if err != nil {
						t.Fatal(err)
					}
					d := sp.Doc
					if sp.Key != PartialKey(req.OutputKey, i, 3) || d.ArtifactType != TypeEvaluationPartial || d.Shard.ShardIndex != i ||
						d.Shard.TotalShards != 3 || d.Shard.ShardBy != layout.String() || d.EvaluationFingerprint != want.Doc.EvaluationFingerprint ||
						(d.Reverse != nil) != bidir || d.Shape[1] != 2 || d.Forward.NPositives != 4 {
						t.Fatalf("partial %d: %+v", i, d)
					}
					if r := d.Reverse; r != nil {
						lo, hi := evaluate.ReverseBlock(rank.Shard{Index: i, Total: 3, Layout: layout}, d.NGallery, nil)
						if *r.QueryLo != lo || *r.QueryHi != hi || r.ShardRows != hi-lo || len(r.NearestNegative) != hi-lo {
							t.Fatalf("partial %d: reverse %+v, want the block [%d, %d)", i, r, lo, hi)
						}
					}
				}
				got, err := f.s.FinalizeScore(ctx, req, 3, "")
				if err != nil {
					t.Fatal(err)
				}
				if a, b := evaluationJSON(t, f.s, got), evaluationJSON(t, f.s, want); a != b {
					t.Fatalf("bidirectional %v %s %s:\nfinalize %s\nscore    %s", bidir, pair[1], layout, a, b)
				}
				if bidir && pi == 0 {
					// A partial whose reverse block is not its shard's is refused.
					key := PartialKey(req.OutputKey, 1, 3)
					m, md, err := f.s.LoadArray(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					var doc EvaluationPartial
					if err := json.Unmarshal(md, &doc); err != nil {
						t.Fatal(err)
					}
					*doc.Reverse.QueryLo++
					if err := f.s.WriteArray(ctx, key, FromMatrix(m), doc); err != nil {
						t.Fatal(err)
					}
					if _, err := f.s.FinalizeScore(ctx, req, 3, ""); !errors.Is(err, ErrCheck) || !strings.Contains(err.Error(), "foreign partial: its reverse direction is not the block") {
						t.Fatalf("shifted reverse block: %v", err)
					}
				}
			}
		}
	}
}

// A shard fails exactly as Score does: the same checks, in the same order,
// with the same messages (global rows and IDs).
func TestScorePartialErrorsEqualScore(t *testing.T) {
	f := newScoreFixture(t, "1")
	zero, _ := matrix.NewDense64(4, 3, []float64{1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	zk := f.writeEndpoint(t, "e/zero/gallery", SideGallery, zero, f.ds.GalleryIDs())
	cfg := retrieval.DefaultConfig()
	swapped := f.request(cfg)
	swapped.QueryKey, swapped.GalleryKey = f.gk, f.qk
	zeroReq := f.request(cfg)
	zeroReq.GalleryKey = zk
	for name, req := range map[string]ScoreRequest{"zero-norm gallery rows": zeroReq, "sides": swapped} {
		_, want := f.s.Score(ctx, req)
		_, got := f.s.ScorePartial(ctx, req, rank.Shard{Index: 1, Total: 2})
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("%s: partial %v, score %v", name, got, want)
		}
	}
	// Finalize of nothing names the first partial.
	_, err := f.s.FinalizeScore(ctx, f.request(cfg), 2, "")
	key := PartialKey(ScoreKey(mustFingerprint(t, f, cfg)), 0, 2)
	var ae *Error
	if !errors.As(err, &ae) || ae.Key != key || !errors.Is(err, ErrCheck) {
		t.Errorf("finalize without partials: %v", err)
	}
}

func mustFingerprint(t *testing.T, f scoreFixture, cfg retrieval.Config) string {
	t.Helper()
	j, err := f.s.PrepareScore(ctx, f.request(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return j.EvaluationFingerprint()
}
