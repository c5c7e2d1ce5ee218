package extract

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// recordingText is a text Encoder that records every text it is given.
func recordingText(seen *[]string, values map[string]any) *Func {
	return &Func{ExtractorName: "e5", ExtractorType: "hosted_embeddings", Serves: "text", Streaming: true, RecipeValues: values,
		EncodeFunc: func(_ context.Context, b Batch) (matrix.Matrix, error) {
			texts := b.Items.(retrieval.Texts)
			for _, s := range texts {
				*seen = append(*seen, b.Side+"|"+s)
			}
			return oneHot(texts, vocab), nil
		}}
}

func textDataset(t *testing.T) *retrieval.Dataset {
	t.Helper()
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Texts{"cat", "bird"}, Gallery: retrieval.Texts{"a cat", "a dog", "a bird"}, Identity: retrieval.Declared("pets", "1"),
	}, retrieval.RecordRelevance([]retrieval.Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "1", GalleryID: "2", Grade: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// The prefixes reach the encoder: every query text gets the query prefix,
// every gallery text the gallery one (e5, BGE, nomic conventions), in
// batches too.
func TestTextPrefixReachesEncoder(t *testing.T) {
	for _, c := range []struct {
		name, q, g string
		want       []string
	}{
		{"e5", "query: ", "passage: ", []string{"query|query: cat", "query|query: bird", "gallery|passage: a cat", "gallery|passage: a dog", "gallery|passage: a bird"}},
		{"bge query only", "Represent this sentence for searching relevant passages: ", "", []string{
			"query|Represent this sentence for searching relevant passages: cat", "query|Represent this sentence for searching relevant passages: bird",
			"gallery|a cat", "gallery|a dog", "gallery|a bird"}},
		{"nomic", "search_query: ", "search_document: ", []string{"query|search_query: cat", "query|search_query: bird",
			"gallery|search_document: a cat", "gallery|search_document: a dog", "gallery|search_document: a bird"}},
		{"none", "", "", []string{"query|cat", "query|bird", "gallery|a cat", "gallery|a dog", "gallery|a bird"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var seen []string
			x := WithTextPrefix(recordingText(&seen, nil), c.q, c.g)
			enc, err := Encode(context.Background(), textDataset(t), Entry{Extractor: x}, EmbeddingConfig{BatchSize: 2, StreamingEnabled: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer enc.Close()
			if !slices.Equal(seen, c.want) {
				t.Errorf("encoder saw %q\nwant %q", seen, c.want)
			}
		})
	}
}

// The prefix is part of the recipe: the hash changes with it (and with
// which side it is on), and without one the extractor and its hash are
// untouched, so existing caches stay valid.
func TestTextPrefixRecipeHash(t *testing.T) {
	var seen []string
	base := recordingText(&seen, map[string]any{"model": "e5-small", "cache_identity": "e5@1"})
	h0, err := RecipeHash(base)
	if err != nil {
		t.Fatal(err)
	}
	if x := WithTextPrefix(base, "", ""); x != Extractor(base) {
		t.Fatalf("no prefix must return the extractor itself, got %T", x)
	}
	hashes := map[string]string{h0: "none"}
	for _, p := range [][2]string{{"query: ", "passage: "}, {"passage: ", "query: "}, {"query: ", ""}, {"", "query: "}, {"search_query: ", "search_document: "}} {
		x := WithTextPrefix(base, p[0], p[1])
		h, err := RecipeHash(x)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := hashes[h]; dup {
			t.Errorf("prefix %q has the recipe hash of %s", p, prev)
		}
		hashes[h] = p[0] + "/" + p[1]
		r := x.Recipe()
		tp, _ := r[TextPrefixKey].(map[string]any)
		if tp["query"] != p[0] || tp["gallery"] != p[1] || r["model"] != "e5-small" || r["cache_identity"] != "e5@1" {
			t.Errorf("recipe %v", r)
		}
		if x.Name() != "e5" || x.Type() != "hosted_embeddings" || !x.StreamingSafe() {
			t.Errorf("identity methods changed: %s %s %v", x.Name(), x.Type(), x.StreamingSafe())
		}
		if _, isFitter := x.(Fitter); isFitter {
			t.Error("a Func without FitFunc must not become a Fitter")
		}
		if _, ok := base.Recipe()[TextPrefixKey]; ok {
			t.Error("the inner recipe was modified")
		}
	}
	if h, _ := RecipeHash(base); h != h0 {
		t.Error("the base hash changed")
	}
}

// memCache is an EndpointCache in memory keyed by recipe hash and side.
type memCache map[string]matrix.Matrix

func (c memCache) Load(_ context.Context, r EndpointRef) (matrix.Matrix, bool, error) {
	m, ok := c[r.RecipeHash+"/"+r.Side]
	return m, ok, nil
}

func (c memCache) Save(_ context.Context, r EndpointRef, m matrix.Matrix) error {
	c[r.RecipeHash+"/"+r.Side] = m
	return nil
}

// Prefixed and unprefixed embeddings never share a cache entry.
func TestTextPrefixSeparateCacheEntries(t *testing.T) {
	cache := memCache{}
	ds := textDataset(t)
	var seen []string
	status := func(q, g string) string {
		t.Helper()
		x := WithTextPrefix(recordingText(&seen, map[string]any{"cache_identity": "e5@1"}), q, g)
		enc, st, err := EncodeCached(context.Background(), ds, Entry{Extractor: x}, DefaultEmbeddingConfig(), nil, cache, true)
		if err != nil {
			t.Fatal(err)
		}
		enc.Close()
		return st
	}
	for i, c := range []struct{ q, g, want string }{
		{"", "", CacheMiss}, {"", "", CacheHit},
		{"query: ", "passage: ", CacheMiss}, {"query: ", "passage: ", CacheHit},
		{"query: ", "", CacheMiss}, {"", "", CacheHit},
	} {
		if got := status(c.q, c.g); got != c.want {
			t.Errorf("run %d (%q, %q): %s, want %s", i, c.q, c.g, got, c.want)
		}
	}
	if len(cache) != 6 {
		t.Errorf("%d cache entries, want 6 (3 recipes × 2 sides)", len(cache))
	}
}

// In a cross-modal branch encoder only the text side is prefixed.
func TestTextPrefixBranchEncoder(t *testing.T) {
	var texts, images []string
	clip := &FuncBranches{ExtractorName: "clip", QueryModality: "text", GalleryModality: "image",
		Query: func(_ context.Context, b Batch) (matrix.Matrix, error) {
			texts = append(texts, b.Items.(retrieval.Texts)...)
			return oneHot(b.Items.(retrieval.Texts), vocab), nil
		},
		Gallery: func(_ context.Context, b Batch) (matrix.Matrix, error) {
			images = append(images, b.Items.(pictureItems)...)
			return oneHot(b.Items.(pictureItems), vocab), nil
		},
	}
	x := WithTextPrefix(clip, "a photo of ", "ignored: ")
	if _, ok := x.(BranchEncoder); !ok {
		t.Fatalf("%T is not a BranchEncoder", x)
	}
	enc, err := Encode(context.Background(), crossModalDataset(t), Entry{Extractor: x, QueryBranch: "query", GalleryBranch: "gallery"}, DefaultEmbeddingConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	if strings.Join(texts, ",") != "a photo of a cat,a photo of a dog,a photo of a bird" || strings.Join(images, ",") != "cat.png,dog.png,bird.png" {
		t.Errorf("texts %q, images %q", texts, images)
	}
}

// A fitted encoder is fitted on the prefixed gallery texts.
func TestTextPrefixFitter(t *testing.T) {
	var fitted []string
	model := &Func{ExtractorName: "vocab", Serves: "text", Streaming: true,
		FitFunc: func(_ context.Context, g retrieval.Items) error {
			fitted = append(fitted, g.(retrieval.Texts)...)
			return nil
		},
		EncodeFunc: func(_ context.Context, b Batch) (matrix.Matrix, error) {
			return oneHot(b.Items.(retrieval.Texts), vocab), nil
		},
	}
	x := WithTextPrefix(model, "q: ", "d: ")
	if _, ok := x.(Fitter); !ok {
		t.Fatalf("%T lost Fit", x)
	}
	enc, err := Encode(context.Background(), textDataset(t), Entry{Extractor: x}, DefaultEmbeddingConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	enc.Close()
	if strings.Join(fitted, ",") != "d: a cat,d: a dog,d: a bird" {
		t.Errorf("fitted on %q", fitted)
	}
}

type shutdownEncoder struct {
	*Func
	calls int
	err   error
}

func (s *shutdownEncoder) Shutdown(context.Context) error { s.calls++; return s.err }

// Persistent workers are still ended through the wrapper.
func TestTextPrefixForwardsShutdown(t *testing.T) {
	var seen []string
	inner := &shutdownEncoder{Func: recordingText(&seen, nil), err: errors.New("worker exited 3")}
	x := WithTextPrefix(inner, "query: ", "")
	s, ok := x.(interface{ Shutdown(context.Context) error })
	if !ok {
		t.Fatalf("%T has no Shutdown", x)
	}
	if err := s.Shutdown(context.Background()); err == nil || inner.calls != 1 {
		t.Errorf("Shutdown: %v, %d calls", err, inner.calls)
	}
}
