//go:build cgo

package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract/onnx"
)

// requireONNXRuntime skips without an ONNX Runtime library unless
// VERTEBRAE_REQUIRE_ONNXRUNTIME is set (as .ci/run does).
func requireONNXRuntime(t *testing.T) {
	t.Helper()
	if _, err := onnx.ResolveLibrary(""); err != nil {
		if os.Getenv("VERTEBRAE_REQUIRE_ONNXRUNTIME") != "" {
			t.Fatalf("VERTEBRAE_REQUIRE_ONNXRUNTIME is set but: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// The real MNIST classifier as a fourth demo backbone: its ten digit logits
// rank Fashion-MNIST far above chance (ndcg@10 0.1) but below the pixel
// descriptors — a digit model was never trained on clothes.
func TestDemoONNX(t *testing.T) {
	if testing.Short() {
		t.Skip("demo scores 5 rows × 1,000 × 5,000 pairs; skipped with -short")
	}
	requireONNXRuntime(t)
	jsonPath := filepath.Join(t.TempDir(), "demo.json")
	code, stdout, stderr := run(t, "demo", "--onnx", "--json", jsonPath)
	if code != 0 {
		t.Fatal(stderr)
	}
	if !strings.Contains(stdout, "| mnist-cnn-onnx |") {
		t.Errorf("demo --onnx report lacks the ONNX row:\n%s", stdout)
	}
	rep := reportOf(t, mustRead(t, jsonPath))
	results := rep["extractor_results"].([]any)
	scores := map[string]float64{}
	for _, r := range results {
		m := r.(map[string]any)
		scores[m["name"].(string)] = m["primary_score"].(float64)
	}
	if len(results) != 5 {
		t.Fatalf("%d results, want 5: %v", len(results), scores)
	}
	// The pure-Go rows are unchanged by the extra row (golden values).
	if got := math.Round(scores["raw-pixels"]*1e4) / 1e4; got != 0.7658 {
		t.Errorf("raw-pixels ndcg@10 = %v, want 0.7658", got)
	}
	// Measured with ONNX Runtime 1.30.0: 0.58696. Other CPUs/runtimes may
	// round the logits differently, which can reorder near-ties slightly.
	if s := scores["mnist-cnn-onnx"]; math.Abs(s-0.587) > 0.01 {
		t.Errorf("mnist-cnn-onnx ndcg@10 = %v, want 0.587 ± 0.01", s)
	}
	last := results[len(results)-1].(map[string]any)
	if last["name"] != "mnist-cnn-onnx" || last["extractor_type"] != "onnx_image" {
		t.Errorf("last result = %v %v", last["name"], last["extractor_type"])
	}
	recipe := last["recipe"].(map[string]any)
	if recipe["runtime_version"] == "" || !strings.HasPrefix(recipe["path_identities"].(map[string]any)["model"].(string), "sha256:") {
		t.Errorf("recipe = %v", recipe)
	}
}

func TestDemoONNXLibraryMissing(t *testing.T) {
	t.Setenv(onnx.LibraryEnv, filepath.Join(t.TempDir(), "libonnxruntime.so"))
	code, _, stderr := run(t, "demo", "--onnx", "--markdown", "-")
	if code != 1 || !strings.Contains(stderr, "ONNX Runtime library not found") || !strings.Contains(stderr, "--onnxruntime-lib") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
