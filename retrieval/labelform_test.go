package retrieval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Implicit and materialised label relevance are one dataset: the content
// identity key, the relevance and protocol fingerprints agree (both use
// the label form) for one to several classes and query counts crossing
// digit widths; a background identity gives the same key.
func TestLabelFormSameForBothRepresentations(t *testing.T) {
	for _, nq := range []int{1, 9, 10, 11, 64, 65, 99, 100, 101, 129, 1001} {
		for _, nc := range []int{1, 3} {
			ng := 23
			gl := make([]string, ng)
			gids := make([]string, ng)
			for i := range gl {
				gl[i], gids[i] = "c"+strconv.Itoa(i%nc), "g"+strconv.Itoa(i)
			}
			ql := make([]string, nq)
			qids := make([]string, nq)
			for i := range ql {
				ql[i], qids[i] = "c"+strconv.Itoa((i*7)%nc), "q"+strconv.Itoa(i)
			}
			qv, gv := make([]float64, nq), make([]float64, ng)
			for i := range qv {
				qv[i] = float64(i + 1)
			}
			for i := range gv {
				gv[i] = float64(i + 1)
			}
			qm, _ := matrix.NewDense64(nq, 1, qv)
			gm, _ := matrix.NewDense64(ng, 1, gv)
			build := func(opts ...Option) *Dataset {
				ds, err := NewDataset(DatasetInputs{Queries: Embeddings(qm), Gallery: Embeddings(gm), QueryIDs: qids, GalleryIDs: gids,
					Identity: FromContent()}, LabelRelevance(ql, gl), opts...)
				if err != nil {
					t.Fatal(err)
				}
				return ds
			}
			a, b := build(), build(WithMaterialisedLabels())
			if a.Classes() == nil || b.Classes() != nil {
				t.Fatal("representations not as requested")
			}
			bg := build(WithBackgroundIdentity()) // hashed while the test goes on
			if a.IdentityKey() != b.IdentityKey() || bg.IdentityKey() != a.IdentityKey() || bg.Summary().Identity["key"] != a.IdentityKey() {
				t.Fatalf("nq %d, %d classes: identity keys differ", nq, nc)
			}
			fa, err1 := a.ProtocolFingerprint(DefaultConfig())
			fb, err2 := b.ProtocolFingerprint(DefaultConfig())
			if err1 != nil || err2 != nil || fa != fb {
				t.Fatalf("nq %d, %d classes: fingerprints %s %s (%v %v)", nq, nc, fa, fb, err1, err2)
			}
			qa, ga, oka := a.RelevanceLabels()
			qb, gb, okb := b.RelevanceLabels()
			if !oka || !okb || strings.Join(qa, "\n") != strings.Join(ql, "\n") || strings.Join(ga, "\n") != strings.Join(gl, "\n") ||
				strings.Join(qb, "\n") != strings.Join(ql, "\n") || strings.Join(gb, "\n") != strings.Join(gl, "\n") {
				t.Fatalf("nq %d, %d classes: RelevanceLabels do not give the labels back", nq, nc)
			}
		}
	}
}

// errTooMuchText stops a canonical encoding that outgrows its bound.
var errTooMuchText = errors.New("canonical text exceeds its bound")

// boundedCounter counts the bytes written to it and fails past limit, so a
// value whose text is O(pairs) fails fast instead of writing gigabytes.
type boundedCounter struct{ n, limit int64 }

func (w *boundedCounter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if w.n > w.limit {
		return 0, errTooMuchText
	}
	return len(p), nil
}

// canonicalSize is the length of v's canonical text, or an error once it
// passes limit.
func canonicalSize(t *testing.T, v any, limit int64) int64 {
	t.Helper()
	w := &boundedCounter{limit: limit}
	if err := canonjson.Encode(w, v); err != nil {
		t.Fatalf("canonical text: %v after %d bytes (bound %d)", err, w.n, limit)
	}
	return w.n
}

// The texts hashed for the content identity and for the relevance
// fingerprint of label-derived relevance grow with the rows, not with the
// pairs (SPEC §2.7, §2.9, §10.3): one class of 100,000 gallery rows and
// 2,000 queries (2×10⁸ pairs, about 2.8 GB as [q,g,1] triples) hashes a
// few bytes per row, here at most 24 per row (IDs up to 5 digits, label
// "c") plus a constant. The pair form fails the bound after its first
// 2.4 MB.
func TestLabelFormHashesLinearText(t *testing.T) {
	const nq, ng = 2000, 100_000
	ql, gl := make([]string, nq), make([]string, ng)
	for i := range ql {
		ql[i] = "c"
	}
	for i := range gl {
		gl[i] = "c"
	}
	for _, leaveOneOut := range []bool{false, true} {
		var ds *Dataset
		var err error
		if leaveOneOut { // the exclusions (one per query) are O(rows) too
			ds, err = NewLeaveOneOutDataset(IDsOnly(ng), nil, gl, WithIdentity(FromContent()))
		} else {
			ds, err = NewDataset(DatasetInputs{Queries: IDsOnly(nq), Gallery: IDsOnly(ng), Identity: FromContent()}, LabelRelevance(ql, gl))
		}
		if err != nil {
			t.Fatal(err)
		}
		rows := int64(ds.NumQueries() + ds.NumGallery())
		limit := 24*rows + 4096
		snap, err := ds.contentSnapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		identityText := canonicalSize(t, snap, limit)
		payload, err := ds.relevanceFingerprintPayload()
		if err != nil {
			t.Fatal(err)
		}
		fingerprintText := canonicalSize(t, payload, limit)
		// Both hold every ID and every label: at least 4 bytes per row
		// (`"c",`) besides the IDs.
		if identityText < 4*rows || fingerprintText < 4*rows {
			t.Fatalf("texts of %d and %d bytes for %d rows: the labels are missing", identityText, fingerprintText, rows)
		}
		// The identity and the fingerprint are the hashes of those texts.
		want, _ := canonjson.Hash(payload)
		if fp, err := ds.RelevanceFingerprint(); err != nil || fp != want {
			t.Fatalf("fingerprint %s (%v), hash of its payload %s", fp, err, want)
		}
		t.Logf("leave-one-out %v: %d rows, %d pairs: identity text %d bytes, fingerprint text %d bytes",
			leaveOneOut, rows, int64(ds.NumQueries())*ng, identityText, fingerprintText)
	}
}

// BenchmarkLabelFormHashes: the content identity and the relevance
// fingerprint of one class of 100,000 gallery rows and 2,000 queries (IDs
// only: only the IDs, labels and metadata are hashed).
func BenchmarkLabelFormHashes(b *testing.B) {
	const nq, ng = 2000, 100_000
	ql, gl := make([]string, nq), make([]string, ng)
	for i := range ql {
		ql[i] = "c"
	}
	for i := range gl {
		gl[i] = "c"
	}
	for range b.N {
		ds, err := NewDataset(DatasetInputs{Queries: IDsOnly(nq), Gallery: IDsOnly(ng), Identity: FromContent()}, LabelRelevance(ql, gl))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ds.RelevanceFingerprint(); err != nil {
			b.Fatal(err)
		}
	}
}

// pinDataset is two queries and three gallery rows whose relevance pairs
// are (q0, g0), (q0, g2), (q1, g1): from labels a, b / a, b, a, or the same
// pairs as records.
func pinDataset(t *testing.T, rel Relevance, opts ...Option) *Dataset {
	t.Helper()
	qm, _ := matrix.NewDense64(2, 1, []float64{1, 2})
	gm, _ := matrix.NewDense64(3, 1, []float64{1, 2, 3})
	ds, err := NewDataset(DatasetInputs{Queries: Embeddings(qm), Gallery: Embeddings(gm), QueryIDs: []string{"q0", "q1"},
		GalleryIDs: []string{"g0", "g1", "g2"}, Identity: FromContent()}, rel, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func pinRecords() Relevance {
	return RecordRelevance([]Record{{QueryID: "q0", GalleryID: "g0", Grade: 1}, {QueryID: "q0", GalleryID: "g2", Grade: 1}, {QueryID: "q1", GalleryID: "g1", Grade: 1}})
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// The label form, exactly: the content snapshot's relevance is
// {"gallery_labels", "query_labels"} and the relevance fingerprint is H of
// the SPEC §10.3 label object, labels in row order (checked against text
// written out by hand). Explicit relevance keeps its forms: the content
// key and fingerprints of the same pairs as records are pinned (with the
// chunked endpoint digests of SPEC §10.5; TestEndpointDigestIsChunked
// checks those by hand).
func TestLabelFormExact(t *testing.T) {
	ds := pinDataset(t, LabelRelevance([]string{"a", "b"}, []string{"a", "b", "a"}))
	rel, err := canonjson.Marshal(ds.snapshotRelevance())
	if err != nil || string(rel) != `{"gallery_labels":["a","b","a"],"query_labels":["a","b"]}` {
		t.Fatalf("snapshot relevance %s (%v)", rel, err)
	}
	want := sha256Hex(`{"dataset_identity_key":"` + ds.IdentityKey() + `","gallery_ids":["g0","g1","g2"],"gallery_labels":["a","b","a"],` +
		`"identity_schema":2,"kind":"retrieval_relevance_labels","query_ids":["q0","q1"],"query_labels":["a","b"]}`)
	if fp, err := ds.RelevanceFingerprint(); err != nil || fp != want {
		t.Fatalf("label fingerprint %s (%v), want %s", fp, err, want)
	}

	ex := pinDataset(t, pinRecords())
	rf, err1 := ex.RelevanceFingerprint()
	pf, err2 := ex.ProtocolFingerprint(DefaultConfig())
	if err1 != nil || err2 != nil ||
		ex.IdentityKey() != "fe53af8e8c81154bd6fa23f6c32ed2777dfc998e064d3f28661b53922ad7cefd" ||
		rf != "882afa184ee19ed6d55c2a8f73449a18cb7fc27b42c3bb3a8f04b3e4e05415f7" ||
		pf != "ef1e7db049e9569483e18a8815bf0d617588c8f69f52b9112fcfa868de71e341" {
		t.Fatalf("explicit relevance: key %s, relevance fingerprint %s, protocol fingerprint %s (%v %v)", ex.IdentityKey(), rf, pf, err1, err2)
	}
	if got, err := RelevanceFingerprintOf(ex.IdentityKey(), ex.QueryIDs(), ex.GalleryIDs(), ex.relevanceTriples()); err != nil || got != rf {
		t.Fatalf("RelevanceFingerprintOf %s (%v), dataset %s", got, err, rf)
	}
}

// The label-form identity and fingerprint are deterministic, change when
// any one label changes (query or gallery side, even a renaming that keeps
// every pair: the labels are what is hashed), and differ from those of
// the explicit triples of the same pairs.
func TestLabelFormChanges(t *testing.T) {
	type hashes struct{ key, rf, pf string }
	of := func(ds *Dataset) hashes {
		rf, err1 := ds.RelevanceFingerprint()
		pf, err2 := ds.ProtocolFingerprint(DefaultConfig())
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		return hashes{ds.IdentityKey(), rf, pf}
	}
	base := of(pinDataset(t, LabelRelevance([]string{"a", "b"}, []string{"a", "b", "a"})))
	if again := of(pinDataset(t, LabelRelevance([]string{"a", "b"}, []string{"a", "b", "a"}))); again != base {
		t.Fatalf("not deterministic: %v, %v", base, again)
	}
	if m := of(pinDataset(t, LabelRelevance([]string{"a", "b"}, []string{"a", "b", "a"}), WithMaterialisedLabels())); m != base {
		t.Fatalf("materialised labels: %v, implicit %v", m, base)
	}
	for name, l := range map[string][2][]string{
		"query label":         {{"a", "a"}, {"a", "b", "a"}},
		"gallery label":       {{"a", "b"}, {"a", "b", "b"}},
		"renamed, same pairs": {{"x", "b"}, {"x", "b", "x"}},
	} {
		got := of(pinDataset(t, LabelRelevance(l[0], l[1])))
		if got.key == base.key || got.rf == base.rf || got.pf == base.pf {
			t.Errorf("%s: %v, unchanged from %v", name, got, base)
		}
	}
	// The same pairs as triples: another content key and fingerprints.
	ex := of(pinDataset(t, pinRecords()))
	if ex.key == base.key || ex.rf == base.rf || ex.pf == base.pf {
		t.Fatalf("triples %v, labels %v", ex, base)
	}
	// Under one declared identity only the relevance form differs, and
	// still the fingerprints do.
	dl := pinDatasetDeclared(t, LabelRelevance([]string{"a", "b"}, []string{"a", "b", "a"}))
	dx := pinDatasetDeclared(t, pinRecords())
	fl, _ := dl.RelevanceFingerprint()
	fx, _ := dx.RelevanceFingerprint()
	if dl.IdentityKey() != dx.IdentityKey() || fl == fx {
		t.Fatalf("declared: keys %s %s, fingerprints %s %s", dl.IdentityKey(), dx.IdentityKey(), fl, fx)
	}
}

func pinDatasetDeclared(t *testing.T, rel Relevance) *Dataset {
	t.Helper()
	ds, err := NewDataset(DatasetInputs{Queries: IDsOnly(2), Gallery: IDsOnly(3), QueryIDs: []string{"q0", "q1"},
		GalleryIDs: []string{"g0", "g1", "g2"}, Identity: Declared("pin", "1")}, rel)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// Labels are hashed as JSON strings, so they must be valid UTF-8; a
// fingerprint needs the label strings.
func TestLabelFormNeedsUTF8Labels(t *testing.T) {
	_, err := NewDataset(DatasetInputs{Queries: IDsOnly(1), Gallery: IDsOnly(1), Identity: Declared("x", "1")},
		LabelRelevance([]string{"a"}, []string{"\xff"}))
	if err == nil || !strings.Contains(err.Error(), "gallery labels must be non-empty UTF-8 strings; index 0 is not valid UTF-8") {
		t.Fatalf("invalid UTF-8 label: %v", err)
	}
	if _, err := LabelRelevanceFingerprintOf("k", []string{"q"}, []string{"g"}, NewClasses([]int32{0}, []int32{0})); err == nil {
		t.Fatal("fingerprint of classes without labels")
	}
	c, err := ClassesFromLabels([]string{"b", "a"}, []string{"a", "b", "a"})
	if err != nil || !c.HasLabels() || strings.Join(c.QueryLabels(), ",") != "b,a" || strings.Join(c.Reverse().QueryLabels(), ",") != "a,b,a" {
		t.Fatalf("ClassesFromLabels: %v", err)
	}
}
