//go:build cgo

package cli

import (
	"fmt"
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
	t.Setenv(ModelsDirEnv, "") // the MobileNetV2 row has its own test (demo_cnn_test.go)
	jsonPath := filepath.Join(t.TempDir(), "demo.json")
	code, stdout, stderr := run(t, "demo", "--onnx", "--json", jsonPath)
	if code != 0 {
		t.Fatal(stderr)
	}
	if !strings.Contains(stderr, "no mobilenet-v2-nsfwjs row: no prepared models directory") || !strings.Contains(stderr, "--models DIR") {
		t.Errorf("no note on the missing MobileNetV2 row: %q", stderr)
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

// A run file with an onnx_dual_encoder: captions query images (and back,
// bidirectional) through the tiny CLIP-style export. The designed outcome:
// the purple caption ranks its magenta image second (MRR 0.9 forward), every
// image ranks its caption first (MRR 1 reverse).
func TestRunSpecONNXDualEncoder(t *testing.T) {
	requireONNXRuntime(t)
	dir := t.TempDir()
	testdata, err := filepath.Abs(filepath.Join("..", "..", "..", "extract", "onnx", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	colors := []string{"red", "green", "blue", "yellow", "purple"}
	files := []string{"red", "green", "blue", "yellow", "magenta"}
	var queries, images, qrels strings.Builder
	qrels.WriteString("query-id\tcorpus-id\tscore\n")
	for i, c := range colors {
		fmt.Fprintf(&queries, `{"_id": "t%d", "text": "a photo of a %s square"}`+"\n", i, c)
		fmt.Fprintf(&images, "%s\n", filepath.Join(testdata, "images", files[i]+".png"))
		fmt.Fprintf(&qrels, "t%d\ti%d\t1\n", i, i)
	}
	writeFile(t, dir, "captions.jsonl", queries.String())
	writeFile(t, dir, "images.txt", images.String())
	writeFile(t, dir, "image_ids.txt", "i0\ni1\ni2\ni3\ni4\n")
	writeFile(t, dir, "qrels.tsv", qrels.String())
	spec := writeFile(t, dir, "run.yaml", `version: 1
dataset:
  queries: {modality: text, path: captions.jsonl}
  gallery: {modality: image, path: images.txt, ids: image_ids.txt}
  qrels: {path: qrels.tsv}
retrieval: {similarity: cosine, ks: [1, 5], primary_metric: ndcg@5, bidirectional: true}
extractors:
  - {name: tiny-clip, type: onnx_dual_encoder, model_dir: `+filepath.Join(testdata, "tiny-clip")+`,
     query_branch: text_branch, gallery_branch: image_branch, batch_size: 2, intra_op_threads: 1}
  - {name: tiny-siglip, type: onnx_dual_encoder, model_dir: `+filepath.Join(testdata, "tiny-siglip")+`,
     query_branch: text_branch, gallery_branch: image_branch, normalize: true}
`)
	code, stdout, stderr := run(t, "retrieval", "run", "--spec", spec, "--json", "-", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep := reportOf(t, stdout)
	results := rep["extractor_results"].([]any)
	if len(results) != 2 {
		t.Fatalf("%d results", len(results))
	}
	for _, r := range results {
		m := r.(map[string]any)
		fwd := m["forward"].(map[string]any)["metrics"].(map[string]any)
		rev := m["reverse"].(map[string]any)["metrics"].(map[string]any)
		if math.Abs(fwd["mrr"].(float64)-0.9) > 1e-12 || fwd["recall@1"] != 0.8 || rev["mrr"] != 1.0 {
			t.Errorf("%s: forward %v, reverse %v", m["name"], fwd, rev)
		}
		recipe := m["recipe"].(map[string]any)
		if m["extractor_type"] != "onnx_dual_encoder" || recipe["cache_safe"] != true {
			t.Errorf("%s: type %v, recipe %v", m["name"], m["extractor_type"], recipe)
		}
	}
	if rep["dataset_summary"].(map[string]any)["gallery_modality"] != "image" {
		t.Errorf("summary %v", rep["dataset_summary"])
	}

	// A missing model directory fails before anything is encoded, naming
	// the entry's line and the files looked for.
	bad := writeFile(t, dir, "bad.yaml", `version: 1
dataset:
  queries: {modality: text, path: captions.jsonl}
  gallery: {modality: image, path: images.txt, ids: image_ids.txt}
  qrels: {path: qrels.tsv}
extractors:
  - {name: clip, type: onnx_dual_encoder, model_dir: models/none,
     query_branch: text_branch, gallery_branch: image_branch}
`)
	code, _, stderr = run(t, "retrieval", "run", "--spec", bad, "--quiet")
	if code != 1 || !strings.Contains(stderr, "bad.yaml:7: extractor clip: text model not found (looked for "+filepath.Join(dir, "models", "none", "text_model.onnx")) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// --onnxruntime-lib picks the library for run-file ONNX entries; an entry's
// own onnxruntime_library wins over it.
func TestRunSpecONNXRuntimeLibFlag(t *testing.T) {
	requireONNXRuntime(t)
	lib, err := onnx.ResolveLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	lib, _ = filepath.Abs(lib)
	dir := t.TempDir()
	testdata, _ := filepath.Abs(filepath.Join("..", "..", "..", "extract", "onnx", "testdata"))
	writeFile(t, dir, "q.txt", "a photo of a red square\na photo of a blue square\n")
	writeFile(t, dir, "g.txt", "red square\nblue square\n")
	writeFile(t, dir, "qrels.tsv", "0\t0\t1\n1\t1\t1\n")
	entry := func(extra string) string {
		return `version: 1
dataset:
  queries: {modality: text, path: q.txt}
  gallery: {modality: text, path: g.txt}
  qrels: {path: qrels.tsv}
extractors:
  - {name: tiny, type: onnx_text, model_dir: ` + filepath.Join(testdata, "tiny-text") + extra + `}
`
	}
	missing := filepath.Join(dir, "nowhere", "libonnxruntime.so")
	spec := writeFile(t, dir, "flag.yaml", entry(""))
	code, _, stderr := run(t, "retrieval", "run", "--spec", spec, "--onnxruntime-lib", missing, "--quiet")
	if code != 1 || !strings.Contains(stderr, "ONNX Runtime library not found (configured path: "+missing+")") {
		t.Fatalf("flag with a missing library: exit %d, %s", code, stderr)
	}
	spec = writeFile(t, dir, "entry.yaml", entry(", onnxruntime_library: "+lib))
	code, stdout, stderr := run(t, "retrieval", "run", "--spec", spec, "--onnxruntime-lib", missing, "--json", "-", "--quiet")
	if code != 0 {
		t.Fatalf("entry library should win over the flag: exit %d, %s", code, stderr)
	}
	if r := reportOf(t, stdout)["extractor_results"].([]any)[0].(map[string]any); r["extractor_type"] != "onnx_text" {
		t.Errorf("result %v", r)
	}
}
