package artifact

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/faulty"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// scoreFixture is SPEC §4.10 example 1 extended with an exclusion, stored
// as artifacts: endpoints, relevance, and the dataset they came from.
type scoreFixture struct {
	s      *Store
	ds     *retrieval.Dataset
	q, g   *matrix.Dense
	qk, gk string
	rk     string
}

func newScoreFixture(t *testing.T, revision string) scoreFixture {
	t.Helper()
	q, _ := matrix.NewDense64(2, 3, []float64{1, 0, 0, 0, 1, 0})
	g, _ := matrix.NewDense64(4, 3, []float64{1, 0, 0, 0.7, 0.7, 0, 0, 1, 0, 0.5, 0.5, 0.5})
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Embeddings(q), Gallery: retrieval.Embeddings(g),
		QueryIDs: []string{"qa", "qb"}, GalleryIDs: []string{"ga", "gb", "gc", "gd"},
		Identity:   retrieval.Declared("example", revision),
		Exclusions: []retrieval.Pair{{QueryID: "qa", GalleryID: "gd"}},
	}, retrieval.DenseRelevance([][]float64{{3, 1, 0, 0}, {0, 0, 2, 1}}))
	if err != nil {
		t.Fatal(err)
	}
	f := scoreFixture{s: New(mem.New()), ds: ds, q: q, g: g}
	f.qk, f.gk = f.writeEndpoint(t, "e/"+revision+"/query", SideQuery, q, ds.QueryIDs()), f.writeEndpoint(t, "e/"+revision+"/gallery", SideGallery, g, ds.GalleryIDs())
	if f.rk, _, err = f.s.WriteRelevance(ctx, ds, ""); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f scoreFixture) writeEndpoint(t testing.TB, key, side string, m matrix.Matrix, ids []string) string {
	t.Helper()
	sum, _ := IDsSHA256(ids)
	meta := &Embedding{EndpointIdentity: EndpointIdentity{DatasetIdentityKey: f.ds.IdentityKey(),
		ExtractorRecipe: map[string]any{"name": "toy", "extractor_type": "precomputed"}, RecipeHash: "r",
		Side: side, Modality: "embeddings", IDsSHA256: sum, CacheEligible: true, CacheStatus: CacheMiss}}
	if err := f.s.WriteEndpoint(ctx, key, m, meta); err != nil {
		t.Fatal(err)
	}
	return key
}

func (f scoreFixture) request(cfg retrieval.Config) ScoreRequest {
	return ScoreRequest{QueryKey: f.qk, GalleryKey: f.gk, RelevanceKey: f.rk, Config: cfg}
}

// The score artifact equals evaluate.Run on the dataset bit for bit and
// carries the local run's protocol fingerprint.
func TestScoreEqualsLocalRun(t *testing.T) {
	for _, bidir := range []bool{false, true} {
		f := newScoreFixture(t, "1")
		cfg := retrieval.DefaultConfig()
		cfg.Ks, cfg.PrimaryMetric, cfg.Bidirectional = []int{1, 2}, "ndcg@2", bidir
		if bidir {
			cfg.Similarity = retrieval.Dot
		}
		res, err := f.s.Score(ctx, f.request(cfg))
		if err != nil {
			t.Fatal(err)
		}
		local, err := evaluate.Run(ctx, f.ds, cfg, []evaluate.Backbone{evaluate.Precomputed("toy")}, evaluate.Options{RunDepth: -1})
		if err != nil {
			t.Fatal(err)
		}
		lr := local.ExtractorResults[0]
		fwd, _ := json.Marshal(lr.Forward)
		var a, b any
		_ = json.Unmarshal(fwd, &a)
		_ = json.Unmarshal(stored(t, f.s, res).Forward, &b)
		if ja, jb := mustJSON(a), mustJSON(b); ja != jb {
			t.Errorf("forward differs:\n%s\n%s", ja, jb)
		}
		if res.Doc.PrimaryScore != lr.PrimaryScore || (lr.Reverse != nil) != (string(stored(t, f.s, res).Reverse) != "null") {
			t.Errorf("primary %v vs %v", res.Doc.PrimaryScore, lr.PrimaryScore)
		}
		if res.Doc.ProtocolFingerprint != local.Metadata.ProtocolFingerprint {
			t.Error("protocol fingerprint differs from the local run's")
		}
		if res.Key != ScoreKey(res.Doc.EvaluationFingerprint) {
			t.Error(res.Key)
		}
		rc, err := f.s.FromArtifacts(ctx, []string{res.Key})
		if err != nil {
			t.Fatal(err)
		}
		if r := rc.ExtractorResults[0]; r.PrimaryScore != lr.PrimaryScore || r.Name != "toy" || mustJSON(r.CompressionMetadata) != mustJSON(lr.CompressionMetadata) {
			t.Errorf("reconstruction %+v", r)
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func wantCheck(t *testing.T, err error, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", frags)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q lacks %q", err, f)
		}
	}
}

func TestScoreChecks(t *testing.T) {
	cfg := retrieval.DefaultConfig()
	f := newScoreFixture(t, "1")
	// Queries and gallery swapped.
	r := f.request(cfg)
	r.QueryKey, r.GalleryKey = f.gk, f.qk
	_, err := f.s.Score(ctx, r)
	wantCheck(t, err, "side", f.gk)

	// Mixed dataset identities: a gallery of another revision.
	other := newScoreFixture(t, "2")
	gk := f.writeEndpoint(t, "e/x/gallery", SideGallery, f.g, f.ds.GalleryIDs())
	_ = gk
	mixed := other.writeEndpoint(t, "e/other/gallery", SideGallery, f.g, f.ds.GalleryIDs())
	if err := copyKey(other.s, f.s, mixed); err != nil {
		t.Fatal(err)
	}
	r = f.request(cfg)
	r.GalleryKey = mixed
	_, err = f.s.Score(ctx, r)
	wantCheck(t, err, "dataset identities", mixed)

	// Relevance of another dataset.
	if err := copyKey(other.s, f.s, other.rk); err != nil {
		t.Fatal(err)
	}
	r = f.request(cfg)
	r.RelevanceKey = other.rk
	_, err = f.s.Score(ctx, r)
	wantCheck(t, err, "dataset identit", other.rk)

	// IDs that differ from the relevance artifact's.
	bad := f.writeEndpoint(t, "e/ids/query", SideQuery, f.q, []string{"qb", "qa"})
	r = f.request(cfg)
	r.QueryKey = bad
	_, err = f.s.Score(ctx, r)
	wantCheck(t, err, "query IDs", bad)

	// Compressed endpoints of two different compression runs.
	c1, err := f.s.Compress(ctx, f.qk, f.gk, compress.Config{Method: compress.MethodPCA, NComponents: ptr(2)}, "")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := f.s.Compress(ctx, f.qk, f.gk, compress.Config{Method: compress.MethodPrefixTruncate, NComponents: ptr(2)}, "")
	if err != nil {
		t.Fatal(err)
	}
	r = f.request(cfg)
	r.QueryKey, r.GalleryKey = c1.QueryOutputKey, c2.GalleryOutputKey
	_, err = f.s.Score(ctx, r)
	wantCheck(t, err, "compressed endpoints come from different compression runs")
	// One compression run scores, and names the variant.
	r.GalleryKey = c1.GalleryOutputKey
	res, err := f.s.Score(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.s.FromArtifacts(ctx, []string{res.Key})
	if err != nil || rc.ExtractorResults[0].Name != "toy[pca_2]" {
		t.Fatalf("%v %+v", err, rc)
	}

	// Tampered relevance fingerprint.
	var doc map[string]any
	if _, err := f.s.ReadJSON(ctx, f.rk, &doc); err != nil {
		t.Fatal(err)
	}
	doc["relevance"].(map[string]any)["0"].(map[string]any)["1"] = json.Number("2")
	if err := f.s.WriteJSON(ctx, "rel/tampered", doc); err != nil {
		t.Fatal(err)
	}
	r = f.request(cfg)
	r.RelevanceKey = "rel/tampered"
	_, err = f.s.Score(ctx, r)
	wantCheck(t, err, "relevance fingerprint mismatch", "rel/tampered")
}

func ptr[T any](v T) *T { return &v }

func copyKey(from, to *Store, key string) error {
	for name, err := range from.st.List(ctx, key+"/") {
		if err != nil {
			return err
		}
		rc, err := from.st.Get(ctx, name)
		if err != nil {
			return err
		}
		size, _ := from.st.Stat(ctx, name)
		err = to.st.Put(ctx, name, rc, size)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// §10.8: a score artifact whose retrieval_config was edited (and re-signed
// as a valid artifact) fails reconstruction; so do mixed protocols and a
// reverse that does not match the config.
func TestReconstructionChecks(t *testing.T) {
	f := newScoreFixture(t, "1")
	cfg := retrieval.DefaultConfig()
	res, err := f.s.Score(ctx, f.request(cfg))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(key string, change func(d map[string]any)) string {
		var d map[string]any
		if _, err := f.s.ReadJSON(ctx, res.Key, &d); err != nil {
			t.Fatal(err)
		}
		change(d)
		if err := f.s.WriteJSON(ctx, key, d); err != nil {
			t.Fatal(err)
		}
		return key
	}
	tampered := edit("s/tampered", func(d map[string]any) { d["retrieval_config"].(map[string]any)["ks"] = []any{1, 2, 10} })
	_, err = f.s.FromArtifacts(ctx, []string{tampered})
	wantCheck(t, err, "protocol fingerprint is inconsistent with its relevance, exclusions, or retrieval_config", tampered)

	sim := edit("s/similarity", func(d map[string]any) { d["retrieval_config"].(map[string]any)["similarity"] = "dot" })
	_, err = f.s.FromArtifacts(ctx, []string{sim})
	wantCheck(t, err, "protocol fingerprint is inconsistent")

	other := edit("s/other", func(d map[string]any) { d["protocol_fingerprint"] = strings.Repeat("0", 64) })
	_, err = f.s.FromArtifacts(ctx, []string{res.Key, other})
	wantCheck(t, err, "protocol fingerprint mismatch")

	rev := edit("s/reverse", func(d map[string]any) { d["reverse"] = d["forward"] })
	_, err = f.s.FromArtifacts(ctx, []string{rev})
	wantCheck(t, err, "reverse must be present exactly when")

	ps := edit("s/primary", func(d map[string]any) { d["primary_score"] = json.Number("0.5") })
	_, err = f.s.FromArtifacts(ctx, []string{ps})
	wantCheck(t, err, "primary_score")

	_, err = f.s.FromArtifacts(ctx, []string{f.rk})
	wantCheck(t, err, "retrieval_evaluation")
	if _, err := f.s.FromArtifacts(ctx, nil); !errors.Is(err, ErrCheck) {
		t.Fatal(err)
	}
}

// SPEC §8.4 in artifact workflows: n_components ≥ width stores arrays
// byte-identical to the inputs, applied=false, and the skip warning reaches
// the reconstructed result.
func TestCompressionNoOp(t *testing.T) {
	f := newScoreFixture(t, "1")
	dt := "float32"
	sum, err := f.s.Compress(ctx, f.qk, f.gk, compress.Config{Method: compress.MethodPCA, NComponents: ptr(3), DType: &dt}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := compress.SkipWarning(3, 3)
	if sum.CompressionMetadata["applied"] != false || sum.CompressionMetadata["dtype"] != "float64" {
		t.Fatalf("metadata %v", sum.CompressionMetadata)
	}
	for _, pair := range [][2]string{{f.qk, sum.QueryOutputKey}, {f.gk, sum.GalleryOutputKey}} {
		a, _ := f.s.Manifest(ctx, pair[0])
		b, _ := f.s.Manifest(ctx, pair[1])
		if a.Array.SHA256 != b.Array.SHA256 {
			t.Errorf("%s is not byte-identical to %s", pair[1], pair[0])
		}
	}
	res, err := f.s.Score(ctx, ScoreRequest{QueryKey: sum.QueryOutputKey, GalleryKey: sum.GalleryOutputKey, RelevanceKey: f.rk, Config: retrieval.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.s.FromArtifacts(ctx, []string{res.Key})
	if err != nil {
		t.Fatal(err)
	}
	r := rc.ExtractorResults[0]
	if r.Name != "toy[pca_3]" || len(r.Warnings) != 1 || r.Warnings[0] != want {
		t.Errorf("name %s warnings %v", r.Name, r.Warnings)
	}
}

// A separate exclusions artifact overrides the relevance document's
// exclusions: scoring with none equals a local run of the dataset built
// without them, and its fingerprint is that run's.
func TestExclusionsOverride(t *testing.T) {
	f := newScoreFixture(t, "1")
	if err := f.s.WriteExclusions(ctx, "x/none", nil, 2, 4); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WriteExclusions(ctx, "x/bad", [][2]int{{1, 0}, {0, 1}}, 2, 4); err == nil {
		t.Fatal("unsorted exclusions accepted")
	}
	cfg := retrieval.DefaultConfig()
	r := f.request(cfg)
	r.ExclusionsKey = "x/none"
	res, err := f.s.Score(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Embeddings(f.q), Gallery: retrieval.Embeddings(f.g),
		QueryIDs: f.ds.QueryIDs(), GalleryIDs: f.ds.GalleryIDs(), Identity: retrieval.Declared("example", "1"),
	}, retrieval.DenseRelevance([][]float64{{3, 1, 0, 0}, {0, 0, 2, 1}}))
	if err != nil {
		t.Fatal(err)
	}
	local, err := evaluate.Run(ctx, plain, cfg, []evaluate.Backbone{evaluate.Precomputed("toy")}, evaluate.Options{RunDepth: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Doc.PrimaryScore != local.ExtractorResults[0].PrimaryScore || res.Doc.ProtocolFingerprint != local.Metadata.ProtocolFingerprint {
		t.Errorf("override: %v %s, local %v %s", res.Doc.PrimaryScore, res.Doc.ProtocolFingerprint, local.ExtractorResults[0].PrimaryScore, local.Metadata.ProtocolFingerprint)
	}
	withEx, err := f.s.Score(ctx, f.request(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if withEx.Key == res.Key || withEx.Doc.ProtocolFingerprint == res.Doc.ProtocolFingerprint {
		t.Error("exclusions did not enter the fingerprints")
	}
	if _, err := f.s.FromArtifacts(ctx, []string{res.Key}); err != nil {
		t.Fatal(err)
	}
}

// A streamed document (lazy rows and columns, written through the chunk
// hasher) is the file WriteJSON writes for the same content, on a store
// that names files after writing them (one pass) and on one that does not
// (two passes); a value that is not JSON-compatible fails and commits
// nothing.
func TestStreamedDocumentEqualsWriteJSON(t *testing.T) {
	t.Parallel()
	keys := []string{"mrr", "map"}
	rows := make([]results.QueryRow, 3000)
	for i := range rows {
		rows[i] = results.QueryRow{QueryID: fmt.Sprintf("q\"%d", i), Metrics: metrics.Values{Keys: keys, Vals: []float64{1 / float64(i+1), float64(i%7) / 7}}}
	}
	lazy := map[string]any{"artifact_type": TypeEvaluation, "per_query": results.CanonicalRows(rows), "columns": results.CanonicalPerQuery(rows)}
	var whole map[string]any
	b, err := canonjson.Marshal(lazy)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &whole); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]store.Store{"one pass": mem.New(), "two passes": faulty.New(mem.New())} {
		s := New(st)
		if err := s.writeJSONStream(ctx, "doc/streamed", TypeEvaluation, lazy); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteJSON(ctx, "doc/whole", whole); err != nil {
			t.Fatal(err)
		}
		a, err1 := s.Manifest(ctx, "doc/streamed")
		w, err2 := s.Manifest(ctx, "doc/whole")
		if err1 != nil || err2 != nil || a.Metadata.SHA256 != w.Metadata.SHA256 || a.Metadata.SizeBytes != w.Metadata.SizeBytes {
			t.Fatalf("%s: streamed %+v, whole %+v (%v %v)", name, a, w, err1, err2)
		}
		if _, _, err := s.ReadMetadata(ctx, "doc/streamed"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bad := map[string]any{"artifact_type": TypeEvaluation, "x": canonjson.Float64s([]float64{1, math.NaN()})}
		if err := s.writeJSONStream(ctx, "doc/bad", TypeEvaluation, bad); err == nil || !strings.Contains(err.Error(), "not JSON-compatible") || !strings.Contains(err.Error(), "doc/bad") {
			t.Fatalf("%s: a NaN: %v", name, err)
		}
		for n, err := range st.List(ctx, "doc/bad") {
			if err == nil {
				t.Fatalf("%s: a failed write left %s", name, n)
			}
		}
	}
}
