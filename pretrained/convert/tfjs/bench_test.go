//go:build cgo

package tfjs_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
	"github.com/vertebrae-eval/vertebrae/pretrained"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// BenchmarkUSELite encodes the 12 reference sentences (1 to 240 tokens)
// per iteration through the onnx_text adapter, 16 rows per ONNX run.
func BenchmarkUSELite(b *testing.B) {
	dir := modelstest.Dir(b, pretrained.USELite)
	if _, err := onnx.ResolveLibrary(""); err != nil {
		b.Skip(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "use_lite_embeddings.json"))
	if err != nil {
		b.Fatal(err)
	}
	var ref useReference
	if err := json.Unmarshal(data, &ref); err != nil {
		b.Fatal(err)
	}
	var texts retrieval.Texts
	for _, c := range ref.Cases {
		texts = append(texts, c.Text)
	}
	enc, err := onnx.NewTextEncoder(context.Background(), onnx.TextConfig{Name: "use-lite", ModelDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := enc.Encode(context.Background(), extract.Batch{Side: "query", Items: texts}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(texts))/1e6, "ms/sentence")
}
