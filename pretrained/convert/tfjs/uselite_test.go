//go:build cgo

package tfjs_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/pretrained"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

type useReference struct {
	Versions map[string]string `json:"versions"`
	Cases    []struct {
		Text      string    `json:"text"`
		IDs       []int64   `json:"ids"`
		Embedding []float64 `json:"embedding"`
	} `json:"cases"`
}

func requireORT(t *testing.T) {
	t.Helper()
	if _, err := onnx.ResolveLibrary(""); err != nil {
		if os.Getenv("VERTEBRAE_REQUIRE_ONNXRUNTIME") != "" {
			t.Fatalf("VERTEBRAE_REQUIRE_ONNXRUNTIME is set but: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// TestUSELiteMatchesTFJS runs the converted Universal Sentence Encoder Lite
// through the onnx_text adapter and compares with the embeddings the
// original TF.js graph computed (testdata/use_lite_embeddings.json, made by
// internal/refgen with @tensorflow/tfjs on its CPU backend): max |Δ| ≤ 1e-5.
// The batch mixes sentence lengths, an empty text (in the middle and last)
// and one longer than 128 tokens.
func TestUSELiteMatchesTFJS(t *testing.T) {
	dir := modelstest.Dir(t, pretrained.USELite)
	requireORT(t)
	data, err := os.ReadFile(filepath.Join("testdata", "use_lite_embeddings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref useReference
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 10 {
		t.Fatalf("%d reference sentences, want ≥ 10", len(ref.Cases))
	}
	t.Logf("reference: %v", ref.Versions)
	texts := make(retrieval.Texts, 0, len(ref.Cases)+1)
	for _, c := range ref.Cases {
		texts = append(texts, c.Text)
	}
	texts = append(texts, "") // a trailing empty text has no token coordinates
	empty := -1
	for i, c := range ref.Cases {
		if c.Text == "" {
			empty = i
		}
	}
	if empty < 0 {
		t.Fatal("the references have no empty text")
	}
	for _, batch := range []int{1, 5, 16} {
		enc, err := onnx.NewTextEncoder(context.Background(), onnx.TextConfig{Name: "use-lite", ModelDir: dir, BatchSize: batch})
		if err != nil {
			t.Fatal(err)
		}
		m, err := enc.Encode(context.Background(), extract.Batch{Side: "query", Items: texts})
		enc.Close()
		if err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		d, ok := m.(*matrix.Dense)
		if !ok || d.Rows() != len(texts) || d.Cols() != 512 {
			t.Fatalf("batch %d: %T %dx%d", batch, m, m.Rows(), m.Cols())
		}
		worst := 0.0
		for i := range texts {
			want := ref.Cases[min(i, len(ref.Cases)-1)].Embedding
			if i == len(ref.Cases) {
				want = ref.Cases[empty].Embedding
			}
			for j := range 512 {
				worst = math.Max(worst, math.Abs(d.At(i, j)-want[j]))
			}
		}
		t.Logf("batch %d: max |Δ| = %.3g", batch, worst)
		if worst > 1e-5 {
			t.Errorf("batch %d: max |Δ| = %.3g > 1e-5", batch, worst)
		}
	}
}

// TestUSELiteRecipe checks that the adapter's recipe carries the SHA-256 of
// the prepared model and vocabulary, equal to the manifest's (SPEC §9.5).
func TestUSELiteRecipe(t *testing.T) {
	dir := modelstest.Dir(t, pretrained.USELite)
	requireORT(t)
	enc, err := onnx.NewTextEncoder(context.Background(), onnx.TextConfig{Name: "use-lite", ModelDir: dir, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	r := enc.Recipe()
	if r["cache_safe"] != true {
		t.Fatalf("cache_safe = %v", r["cache_safe"])
	}
	if !enc.StreamingSafe() {
		t.Error("batch 1 should be streaming-safe")
	}
	ids := r["path_identities"].(map[string]any)
	man, err := pretrained.ReadManifest(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, e := range man.Models {
		for _, f := range e.Files {
			want[f.Path] = "sha256:" + f.SHA256
		}
	}
	for role, file := range map[string]string{"model": "use-lite/model.onnx", "tokenizer": "use-lite/" + onnx.USELiteVocabFile} {
		if ids[role] == nil || ids[role] != want[file] {
			t.Errorf("recipe %s identity %v, manifest %s", role, ids[role], want[file])
		}
	}
	if text := r["text"].(map[string]any); text["input_layout"] != "sparse_indices_values" || text["max_length"] != 128 {
		t.Errorf("text recipe %v", text)
	}
	batched, err := onnx.NewTextEncoder(context.Background(), onnx.TextConfig{Name: "use-lite", ModelDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer batched.Close()
	if batched.StreamingSafe() {
		t.Error("batches of several rows pad to the longest row: not streaming-safe")
	}
}
