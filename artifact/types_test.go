package artifact

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// objects reads every object of st.
func objects(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, err := range st.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(objectBytes(t, st, name))
	}
	return out
}

// The write rules of SPEC §6.8 at the store layer, for JSON and array
// artifacts, through both data paths (a store that moves and one that
// uploads twice): another type is refused at any key, other content only
// at an explicit key, identical content is rewritten, and a refusal leaves
// every object as it was.
func TestWritesNeverReplaceAnotherArtifact(t *testing.T) {
	t.Parallel()
	type write func(s *Store, key string, opts ...WriteOption) error
	jsonOf := func(typ, body string) write {
		return func(s *Store, key string, opts ...WriteOption) error {
			return s.WriteJSON(ctx, key, map[string]any{"artifact_type": typ, "body": body}, opts...)
		}
	}
	arrayOf := func(typ string, seed float32) write {
		return func(s *Store, key string, opts ...WriteOption) error {
			return s.WriteArray(ctx, key, FromMatrix(dense32(t, 3, 2, seed)), map[string]any{"artifact_type": typ, "side": "gallery"}, opts...)
		}
	}
	cases := []struct {
		name          string
		first, second write
		explicit      bool
		frag          string // "" = the second write commits
	}{
		{"json over an array, derived key", arrayOf(TypeEmbedding, 1), jsonOf(TypeReport, "a"), false, "k already holds a gallery-side retrieval_embedding;"},
		{"array over json, derived key", jsonOf(TypeRelevance, "a"), arrayOf(TypeEmbedding, 1), false, "k already holds a retrieval_relevance;"},
		{"json over json of another type", jsonOf(TypeEvaluation, "a"), jsonOf(TypeReport, "a"), true, "k already holds a retrieval_evaluation;"},
		{"other content, explicit", jsonOf(TypeReport, "a"), jsonOf(TypeReport, "b"), true, "k already holds a retrieval_report with other content"},
		{"other array content, explicit", arrayOf(TypeEmbedding, 1), arrayOf(TypeEmbedding, 2), true, "k already holds a retrieval_embedding with other content"},
		{"other content, derived key (a cache refresh)", jsonOf(TypeReport, "a"), jsonOf(TypeReport, "b"), false, ""},
		{"other array content, derived key", arrayOf(TypeEmbedding, 1), arrayOf(TypeEmbedding, 2), false, ""},
		{"identical json, explicit", jsonOf(TypeReport, "a"), jsonOf(TypeReport, "a"), true, ""},
		{"identical array, explicit", arrayOf(TypeEmbedding, 1), arrayOf(TypeEmbedding, 1), true, ""},
	}
	for _, c := range cases {
		for _, backend := range []string{"mover", "upload twice"} {
			t.Run(c.name+"/"+backend, func(t *testing.T) {
				t.Parallel()
				var st store.Store = mem.New()
				if backend == "upload twice" {
					st = noMove{st}
				}
				s := New(st)
				if err := c.first(s, "k", ExplicitKey()); err != nil {
					t.Fatal(err)
				}
				before := objects(t, st)
				var opts []WriteOption
				if c.explicit {
					opts = append(opts, ExplicitKey())
				}
				err := c.second(s, "k", opts...)
				if c.frag == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				var oe *OccupiedError
				if !errors.As(err, &oe) || !errors.Is(err, ErrOccupied) || !strings.Contains(err.Error(), c.frag) {
					t.Fatalf("error %v, want an OccupiedError with %q", err, c.frag)
				}
				if after := objects(t, st); !maps.Equal(before, after) {
					t.Errorf("the refused write changed the store: %d objects before, %d after", len(before), len(after))
				}
			})
		}
	}
}

// A damaged artifact is repaired at a derived key and refused at an
// explicit one (it may hold anything); a free key takes any type.
func TestCheckOutput(t *testing.T) {
	t.Parallel()
	st := mem.New()
	s := New(st)
	if err := s.CheckOutput(ctx, "free", TypeReport, ExplicitKey()); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteJSON(ctx, "k", map[string]any{"artifact_type": TypeReport}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Manifest(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	putBytes(t, st, "k/"+m.Metadata.Filename, []byte(`{"artifact_type": "damaged"}`))
	if err := s.CheckOutput(ctx, "k", TypeEvaluation); err != nil {
		t.Errorf("derived key over a damaged artifact: %v", err)
	}
	if err := s.CheckOutput(ctx, "k", TypeReport, ExplicitKey()); !errors.Is(err, ErrOccupied) || !strings.Contains(err.Error(), "damaged artifact") {
		t.Errorf("explicit key over a damaged artifact: %v", err)
	}
}

// Key arguments of the wrong type are TypeErrors naming the key, what it
// holds and what was expected; a relevance artifact serves as exclusions.
func TestReadersCheckTheType(t *testing.T) {
	t.Parallel()
	s := New(mem.New())
	if err := s.WriteArray(ctx, "ep", FromMatrix(dense32(t, 2, 2, 1)), map[string]any{"artifact_type": TypeEmbedding, "side": "query"}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteJSON(ctx, "score", map[string]any{"artifact_type": TypeEvaluation}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		read func() error
		frag string
	}{
		{"exclusions", func() error { _, _, err := s.ReadExclusions(ctx, "ep", 2, 2); return err },
			"ep is a query-side retrieval_embedding, not a retrieval_exclusions or retrieval_relevance"},
		{"relevance", func() error { _, err := s.ReadRelevance(ctx, "score"); return err },
			"score is a retrieval_evaluation, not a retrieval_relevance"},
		{"endpoint", func() error { _, err := s.ReadEndpointMeta(ctx, "score"); return err },
			"score is a retrieval_evaluation, not an endpoint embedding"},
		{"gallery endpoint", func() error { return s.CheckType(ctx, "ep", GalleryEndpoint) },
			"ep is a query-side retrieval_embedding, not a gallery-side endpoint embedding"},
		{"score", func() error { _, err := s.FromArtifacts(ctx, []string{"ep"}); return err },
			"ep is a query-side retrieval_embedding, not a retrieval_evaluation"},
	} {
		err := c.read()
		var te *TypeError
		if !errors.As(err, &te) || !errors.Is(err, ErrWrongType) || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("%s: %v, want a TypeError with %q", c.name, err, c.frag)
		}
	}
	if err := s.CheckType(ctx, "ep", QueryEndpoint); err != nil {
		t.Error(err)
	}
}

// typeOf reads a canonical document's first member in place and agrees
// with a full decode on every other document.
func TestTypeOfFastPath(t *testing.T) {
	t.Parallel()
	for _, md := range []string{
		`{"artifact_type":"retrieval_evaluation","cache_eligible":true}`,
		`{"artifact_type":"retrieval_evaluation"}`,
		`{"artifact_type":"a\"b","x":1}`,
		`{"artifact_type":"x"`,
		`{"b":1,"artifact_type":"y"}`,
		`{"artifact_type":1}`,
		`not json`,
		``,
	} {
		if got, want := typeOf([]byte(md)), headerOf([]byte(md)).ArtifactType; got != want {
			t.Errorf("typeOf(%s) = %q, want %q", md, got, want)
		}
	}
}

// The type rule reads a large document (a score with a row per gallery
// row) as a verified stream, keeping only its head: the type is found, a
// write of another type is refused naming it, damage anywhere is still
// damage, and a small or non-canonical document is read whole.
func TestMetadataTypeOfLargeDocuments(t *testing.T) {
	t.Parallel()
	st := mem.New()
	s := New(st)
	big := map[string]any{"artifact_type": TypeEvaluation, "rows": strings.Repeat("x", 3*metadataHead)}
	if err := s.WriteJSON(ctx, "k/big", big); err != nil {
		t.Fatal(err)
	}
	m, err := s.Manifest(ctx, "k/big")
	if err != nil {
		t.Fatal(err)
	}
	if typ, md, err := s.metadataType(ctx, "k/big", m); err != nil || typ != TypeEvaluation || md != nil {
		t.Fatalf("large document: %q, %d bytes kept, %v", typ, len(md), err)
	}
	err = s.WriteJSON(ctx, "k/big", map[string]any{"artifact_type": TypeRelevance})
	var oe *OccupiedError
	if !errors.As(err, &oe) || oe.Type != TypeEvaluation {
		t.Fatalf("another type over a large document: %v", err)
	}
	for name, doc := range map[string]any{
		"small":          map[string]any{"artifact_type": TypeEvaluation, "side": "query"},
		"type not first": map[string]any{"artifact_type": TypeEvaluation, "aaa": strings.Repeat("y", 2*metadataHead)},
	} {
		key := "k/" + strings.ReplaceAll(name, " ", "-")
		if err := s.WriteJSON(ctx, key, doc); err != nil {
			t.Fatal(err)
		}
		m, _ := s.Manifest(ctx, key)
		typ, md, err := s.metadataType(ctx, key, m)
		if err != nil || typ != TypeEvaluation || md == nil {
			t.Fatalf("%s: %q, %d bytes, %v", name, typ, len(md), err)
		}
	}
	// A flipped byte past the head fails the read, as ReadMetadata does.
	name := "k/big/" + m.Metadata.Filename
	b := objectBytes(t, st, name)
	b[len(b)-10] ^= 1
	putBytes(t, st, name, b)
	if _, _, err := s.metadataType(ctx, "k/big", m); !errors.Is(err, ErrChecksum) {
		t.Fatalf("damaged past the head: %v", err)
	}
}
