package artifact

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// newLabelFixture stores a leave-one-out label dataset (labels a, a, b, b,
// b, a, b: the own pair of every item excluded) as artifacts: one endpoint
// for both sides and the relevance document.
func newLabelFixture(t *testing.T, opts ...retrieval.Option) scoreFixture {
	t.Helper()
	m, _ := matrix.NewDense64(7, 3, []float64{
		1, 0, 0.2, 0.9, 0.1, 0, 0, 1, 0.3, 0.2, 0.8, 0.1, 0.1, 0.7, 0.7, 0.8, 0.3, 0.1, 0.4, 0.4, 0.5})
	ids := []string{"i0", "i1", "i2", "i3", "i4", "i5", "i6"}
	ds, err := retrieval.NewLeaveOneOutDataset(retrieval.Embeddings(m), ids, []string{"a", "a", "b", "b", "b", "a", "b"},
		append([]retrieval.Option{retrieval.WithIdentity(retrieval.Declared("labels", "1"))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	f := scoreFixture{s: New(mem.New()), ds: ds, q: m, g: m}
	f.qk, f.gk = f.writeEndpoint(t, "e/labels/query", SideQuery, m, ids), f.writeEndpoint(t, "e/labels/gallery", SideGallery, m, ids)
	if f.rk, _, err = f.s.WriteRelevance(ctx, ds, ""); err != nil {
		t.Fatal(err)
	}
	return f
}

// A label relevance artifact stores the labels (relevance_labels, no
// relevance object), reads back as implicit classes with the dataset's
// relevance fingerprint, and is read and verified the same whether the
// dataset held its relevance implicitly or materialised.
func TestLabelRelevanceArtifactRoundTrip(t *testing.T) {
	for _, materialised := range []bool{false, true} {
		var opts []retrieval.Option
		if materialised {
			opts = append(opts, retrieval.WithMaterialisedLabels())
		}
		f := newLabelFixture(t, opts...)
		raw, _, err := f.s.ReadMetadata(ctx, f.rk)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(`"relevance_labels":{"gallery":["a","a","b","b","b","a","b"],"query":["a","a","b","b","b","a","b"]}`)) ||
			bytes.Contains(raw, []byte(`"relevance":`)) {
			t.Fatalf("stored document: %s", raw)
		}
		p, err := f.s.ReadRelevance(ctx, f.rk)
		if err != nil {
			t.Fatal(err)
		}
		rf, _ := f.ds.RelevanceFingerprint()
		if p.Classes == nil || p.Positives != nil || p.Doc.ProtocolFingerprint != rf ||
			strings.Join(p.Classes.GalleryLabels(), "") != "aabbbab" || len(p.Exclusions[3]) != 1 || p.Exclusions[3][0] != 3 {
			t.Fatalf("materialised %v: protocol %+v", materialised, p)
		}
		for q := range 7 {
			want := f.ds.Positives(q)
			got := p.Classes.Positives(q)
			if mustJSON(got) != mustJSON(want) {
				t.Fatalf("query %d: positives %v, dataset %v", q, got, want)
			}
		}
	}
}

// A relevance document of one class of 3,000 gallery rows and 200 queries
// (600,000 pairs) holds a few bytes per row, not per pair.
func TestLabelRelevanceArtifactSize(t *testing.T) {
	const nq, ng = 200, 3000
	ql, gl := make([]string, nq), make([]string, ng)
	for i := range ql {
		ql[i] = "c"
	}
	for i := range gl {
		gl[i] = "c"
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.IDsOnly(nq), Gallery: retrieval.IDsOnly(ng),
		Identity: retrieval.FromContent()}, retrieval.LabelRelevance(ql, gl))
	if err != nil {
		t.Fatal(err)
	}
	s := New(mem.New())
	key, _, err := s.WriteRelevance(ctx, ds, "")
	if err != nil {
		t.Fatal(err)
	}
	raw, _, err := s.ReadMetadata(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if limit := 16*(nq+ng) + 2048; len(raw) > limit {
		t.Fatalf("relevance document of %d bytes for %d rows (bound %d)", len(raw), nq+ng, limit)
	}
	if p, err := s.ReadRelevance(ctx, key); err != nil || p.Classes == nil {
		t.Fatalf("read back: %v", err)
	}
}

// Changing one stored label (the fingerprint left as it was) fails with
// `relevance fingerprint mismatch`; a document with both relevance forms,
// neither, or labels that do not align with the IDs is invalid.
func TestLabelRelevanceArtifactTampered(t *testing.T) {
	f := newLabelFixture(t)
	edit := func(name string, change func(doc map[string]any)) error {
		var doc map[string]any
		if _, err := f.s.ReadJSON(ctx, f.rk, &doc); err != nil {
			t.Fatal(err)
		}
		change(doc)
		key := "rel/" + name
		if err := f.s.WriteJSON(ctx, key, doc); err != nil {
			t.Fatal(err)
		}
		_, err := f.s.ReadRelevance(ctx, key)
		return err
	}
	labels := func(doc map[string]any, side string) []any {
		return doc["relevance_labels"].(map[string]any)[side].([]any)
	}
	for _, side := range []string{"query", "gallery"} {
		err := edit("label-"+side, func(doc map[string]any) { labels(doc, side)[4] = "a" })
		if err == nil || !strings.Contains(err.Error(), "relevance fingerprint mismatch") || !errors.Is(err, ErrCheck) {
			t.Fatalf("%s label changed: %v", side, err)
		}
		cfg := retrieval.DefaultConfig()
		r := f.request(cfg)
		r.RelevanceKey = "rel/label-" + side
		_, err = f.s.Score(ctx, r)
		wantCheck(t, err, "relevance fingerprint mismatch", r.RelevanceKey)
	}
	for name, change := range map[string]func(map[string]any){
		"both":    func(doc map[string]any) { doc["relevance"] = map[string]any{"0": map[string]any{"1": 1}} },
		"neither": func(doc map[string]any) { delete(doc, "relevance_labels") },
		"short": func(doc map[string]any) {
			doc["relevance_labels"].(map[string]any)["gallery"] = labels(doc, "gallery")[:6]
		},
		"empty": func(doc map[string]any) { labels(doc, "query")[0] = "" },
	} {
		if err := edit(name, change); err == nil || !errors.Is(err, ErrInvalidMetadata) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Scoring a label protocol from artifacts equals the local run bit for
// bit (forward, reverse, primary score, protocol fingerprint), and so do
// the reconstruction and gallery shards finalized, in both layouts.
func TestLabelScoreEqualsLocalRun(t *testing.T) {
	f := newLabelFixture(t)
	for _, bidir := range []bool{false, true} {
		cfg := retrieval.DefaultConfig()
		cfg.Ks, cfg.PrimaryMetric, cfg.Bidirectional = []int{1, 3}, "ndcg@3", bidir
		req := f.request(cfg)
		res, err := f.s.Score(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		local, err := evaluate.Run(ctx, f.ds, cfg, []evaluate.Backbone{evaluate.Precomputed("toy")}, evaluate.Options{RunDepth: -1})
		if err != nil {
			t.Fatal(err)
		}
		lr := local.ExtractorResults[0]
		same := func(what string, localPart any, stored json.RawMessage) {
			t.Helper()
			b, _ := json.Marshal(localPart)
			var a, c any
			_ = json.Unmarshal(b, &a)
			_ = json.Unmarshal(stored, &c)
			if ja, jc := mustJSON(a), mustJSON(c); ja != jc {
				t.Errorf("bidirectional %v: %s differs:\nlocal    %s\nartifact %s", bidir, what, ja, jc)
			}
		}
		same("forward", lr.Forward, stored(t, f.s, res).Forward)
		if bidir {
			same("reverse", lr.Reverse, stored(t, f.s, res).Reverse)
		}
		if res.Doc.PrimaryScore != lr.PrimaryScore || res.Doc.ProtocolFingerprint != local.Metadata.ProtocolFingerprint {
			t.Errorf("bidirectional %v: primary %v vs %v, fingerprint %s vs %s", bidir, res.Doc.PrimaryScore, lr.PrimaryScore,
				res.Doc.ProtocolFingerprint, local.Metadata.ProtocolFingerprint)
		}
		rc, err := f.s.FromArtifacts(ctx, []string{res.Key})
		if err != nil || rc.ExtractorResults[0].PrimaryScore != lr.PrimaryScore {
			t.Fatalf("reconstruction: %v %+v", err, rc)
		}
		for _, layout := range []rank.ShardLayout{rank.Contiguous, rank.Modulo} {
			sharded := req
			sharded.OutputKey = "scores/" + layout.String() + "/" + strconv.FormatBool(bidir)
			for i := range 3 {
				if _, err := f.s.ScorePartial(ctx, sharded, rank.Shard{Index: i, Total: 3, Layout: layout}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := f.s.FinalizeScore(ctx, sharded, 3, "")
			if err != nil {
				t.Fatal(err)
			}
			if a, b := evaluationJSON(t, f.s, got), evaluationJSON(t, f.s, res); a != b {
				t.Fatalf("bidirectional %v %s:\nfinalize %s\nscore    %s", bidir, layout, a, b)
			}
		}
	}
}
