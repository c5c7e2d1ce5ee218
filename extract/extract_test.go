package extract

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory/admit"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// captions and pictures: query i ("a cat") describes gallery item i.
var (
	captions = retrieval.Texts{"a cat", "a dog", "a bird"}
	pictures = pictureItems{"cat.png", "dog.png", "bird.png"}
)

// pictureItems stand in for images without files.
type pictureItems []string

func (p pictureItems) Len() int                         { return len(p) }
func (p pictureItems) Modality() string                 { return "image" }
func (p pictureItems) Slice(lo, hi int) retrieval.Items { return p[lo:hi] }

func oneHot(words []string, vocab []string) *matrix.Dense {
	data := make([]float64, len(words)*len(vocab))
	for i, w := range words {
		for j, v := range vocab {
			if strings.Contains(w, v) {
				data[i*len(vocab)+j] = 1
			}
		}
	}
	m, _ := matrix.NewDense64(len(words), len(vocab), data)
	return m
}

var vocab = []string{"cat", "dog", "bird"}

func crossModalDataset(t *testing.T) *retrieval.Dataset {
	t.Helper()
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: captions, Gallery: pictures, Identity: retrieval.Declared("pets", "1"),
	}, retrieval.RecordRelevance([]retrieval.Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "1", GalleryID: "1", Grade: 1}, {QueryID: "2", GalleryID: "2", Grade: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func textImageEncoder(calls *[]string) *FuncBranches {
	return &FuncBranches{
		ExtractorName: "toy-clip", QueryModality: "text", GalleryModality: "image",
		Query: func(_ context.Context, b Batch) (matrix.Matrix, error) {
			*calls = append(*calls, "query")
			return oneHot(b.Items.(retrieval.Texts), vocab), nil
		},
		Gallery: func(_ context.Context, b Batch) (matrix.Matrix, error) {
			*calls = append(*calls, "gallery")
			return oneHot(b.Items.(pictureItems), vocab), nil
		},
	}
}

func TestModalityAndBranchErrors(t *testing.T) {
	var calls []string
	ds := crossModalDataset(t)
	textOnly := &Func{ExtractorName: "text-model", Serves: "text", EncodeFunc: func(context.Context, Batch) (matrix.Matrix, error) {
		calls = append(calls, "encode")
		return nil, errors.New("unreachable")
	}}
	cases := []struct {
		e    Entry
		want string
	}{
		{Entry{Extractor: textOnly}, "Extractor text-model does not support retrieval modality image"},
		{Entry{Extractor: textImageEncoder(&calls), QueryBranch: "gallery", GalleryBranch: "query"}, "Extractor toy-clip does not support retrieval modality text"},
		{Entry{Extractor: textImageEncoder(&calls), QueryBranch: "query"}, "query_branch and gallery_branch must be provided together"},
		{Entry{Extractor: textImageEncoder(&calls)}, "requires query_branch and gallery_branch"},
		{Entry{Extractor: textOnly, QueryBranch: "a", GalleryBranch: "b"}, "does not support branches"},
		{Entry{Extractor: textImageEncoder(&calls), QueryBranch: "query", GalleryBranch: "depth"}, `has no branch "depth"`},
	}
	for _, c := range cases {
		_, err := Encode(context.Background(), ds, c.e, DefaultEmbeddingConfig(), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	if len(calls) != 0 {
		t.Errorf("nothing may be encoded before the checks pass: %v", calls)
	}
}

// A same-modality extractor's Fit sees the gallery only, once, before any
// encoding; the fitted state is applied to both endpoints.
func TestFitOnGalleryOnly(t *testing.T) {
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Texts{"cat dog", "bird"}, Gallery: retrieval.Texts{"cat", "dog", "bird"}, Identity: retrieval.Ephemeral(),
	}, retrieval.RecordRelevance([]retrieval.Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "1", GalleryID: "2", Grade: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var fitted []string
	var events []string
	model := &Func{ExtractorName: "vocab", Serves: "text", Streaming: true,
		FitFunc: func(_ context.Context, g retrieval.Items) error {
			events = append(events, "fit")
			fitted = append(fitted, g.(retrieval.Texts)...)
			return nil
		},
		EncodeFunc: func(_ context.Context, b Batch) (matrix.Matrix, error) {
			events = append(events, "encode-"+b.Side)
			return oneHot(b.Items.(retrieval.Texts), fitted), nil
		},
	}
	enc, err := Encode(context.Background(), ds, Entry{Extractor: model}, DefaultEmbeddingConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	if strings.Join(fitted, ",") != "cat,dog,bird" || strings.Join(events, ",") != "fit,encode-query,encode-gallery" {
		t.Errorf("fitted %v, events %v", fitted, events)
	}
	if enc.Query.Cols() != 3 {
		t.Errorf("query width %d", enc.Query.Cols())
	}
}

// A query-side failure (here: the memory budget) never starts the gallery.
func TestQueryFailureStopsGallery(t *testing.T) {
	var calls []string
	budget, err := admit.NewBudget(16, 0, false, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Encode(context.Background(), crossModalDataset(t),
		Entry{Extractor: textImageEncoder(&calls), QueryBranch: "query", GalleryBranch: "gallery"},
		EmbeddingConfig{BatchSize: 2, StreamingEnabled: true}, budget)
	if err == nil || !strings.Contains(err.Error(), "memory budget") {
		t.Fatalf("got %v", err)
	}
	if strings.Join(calls, ",") != "query" {
		t.Errorf("calls %v: the gallery must never be encoded", calls)
	}
}

func TestRecipeHash(t *testing.T) {
	a := &Func{ExtractorName: "m", Serves: "text", RecipeValues: map[string]any{"model": "x"}}
	b := &Func{ExtractorName: "m", Serves: "text", RecipeValues: map[string]any{"model": "y"}}
	ha, err := RecipeHash(a)
	if err != nil || len(ha) != 64 {
		t.Fatal(ha, err)
	}
	if hb, _ := RecipeHash(b); hb == ha {
		t.Error("recipes differ but hashes agree")
	}
	if again, _ := RecipeHash(a); again != ha {
		t.Error("recipe hash is not stable")
	}
}
