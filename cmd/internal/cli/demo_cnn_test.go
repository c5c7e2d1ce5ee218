//go:build cgo

package cli

import (
	"context"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/demo"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/pretrained"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// The MobileNetV2 row (`demo --onnx --models DIR`) end to end, on the
// first 200 queries and 1,000 gallery images of the demo (the full demo
// encodes 6,000 images: minutes of CPU; its figures are in the README). It
// runs when the prepared models directory is there (CI prepares it;
// VERTEBRAE_REQUIRE_MODELS makes its absence a failure).
func TestDemoCNN(t *testing.T) {
	root := modelstest.Root(t)
	requireONNXRuntime(t)
	demoDataHook = func(d *demo.Data) {
		d.QueryImages, d.QueryLabels, d.QueryIDs = d.QueryImages[:200], d.QueryLabels[:200], d.QueryIDs[:200]
		d.GalleryImages, d.GalleryLabels, d.GalleryIDs = d.GalleryImages[:1000], d.GalleryLabels[:1000], d.GalleryIDs[:1000]
	}
	t.Cleanup(func() { demoDataHook = nil })
	jsonPath := filepath.Join(t.TempDir(), "demo.json")
	code, stdout, stderr := run(t, "demo", "--onnx", "--models", root, "--json", jsonPath)
	if code != 0 {
		t.Fatal(stderr)
	}
	if !strings.Contains(stdout, "| "+demoCNNName+" |") || !strings.Contains(stdout, "n_queries: 200") {
		t.Fatalf("report lacks the MobileNetV2 row or the subset:\n%s", stdout)
	}
	rep := reportOf(t, mustRead(t, jsonPath))
	results := rep["extractor_results"].([]any)
	if len(results) != 6 {
		t.Fatalf("%d results, want 6", len(results))
	}
	var cnn map[string]any
	scores := map[string]float64{}
	for _, r := range results {
		m := r.(map[string]any)
		scores[m["name"].(string)] = m["primary_score"].(float64)
		if m["name"] == demoCNNName {
			cnn = m
		}
	}
	// Measured on this subset with ONNX Runtime 1.30.0 on x86-64: 0.5960
	// (hog 0.7742, raw-pixels 0.7199). Other CPUs may round the features
	// differently and reorder near-ties slightly.
	if got := math.Round(scores["hog"]*1e4) / 1e4; got != 0.7742 {
		t.Errorf("hog ndcg@10 on the subset = %v, want 0.7742 (pure Go, exact)", got)
	}
	if s := scores[demoCNNName]; math.Abs(s-0.596) > 0.01 {
		t.Errorf("%s ndcg@10 = %v, want 0.596 ± 0.01", demoCNNName, s)
	}
	if cnn["extractor_type"] != "onnx_image" {
		t.Errorf("extractor_type %v", cnn["extractor_type"])
	}
	// The recipe carries the prepared files' SHA-256, as the manifest lists
	// them (SPEC §9.5).
	man, err := pretrained.ReadManifest(root)
	if err != nil {
		t.Fatal(err)
	}
	digest := map[string]string{}
	for _, e := range man.Models {
		for _, f := range e.Files {
			digest[f.Path] = "sha256:" + f.SHA256
		}
	}
	recipe := cnn["recipe"].(map[string]any)
	ids := recipe["path_identities"].(map[string]any)
	if recipe["cache_safe"] != true || ids["model"] != digest[pretrained.NSFWJSMobileNetV2+"/model.onnx"] ||
		ids["preprocessor_config"] != digest[pretrained.NSFWJSMobileNetV2+"/preprocessor_config.json"] {
		t.Errorf("recipe identities %v, manifest %v", ids, digest)
	}
}

// The demo row applies exactly the onnx_image adapter to the demo images:
// its features for in-memory 28×28 images equal the adapter's for the same
// images written as PNG files (a subset, so it is fast).
func TestDemoCNNMatchesAdapter(t *testing.T) {
	root := modelstest.Root(t)
	requireONNXRuntime(t)
	ctx := context.Background()
	bb, closeFn, err := demoCNNBackbone(ctx, root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	data, err := demo.Load()
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	got, err := bb.Encode(ctx, "query", imageItems(data.QueryImages[:n]))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths := make(retrieval.Images, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, strconv.Itoa(i)+".png")
		f, err := os.Create(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		img := &image.Gray{Pix: data.QueryImages[i], Stride: demo.ImageSide, Rect: image.Rect(0, 0, demo.ImageSide, demo.ImageSide)}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	enc, err := onnx.NewImageEncoder(ctx, onnx.ImageConfig{Name: demoCNNName, ModelDir: filepath.Join(root, pretrained.NSFWJSMobileNetV2), BatchSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	want, err := enc.Encode(ctx, extract.Batch{Side: "query", Items: paths})
	if err != nil {
		t.Fatal(err)
	}
	g, w := got.(*matrix.Dense), want.(*matrix.Dense)
	if g.Rows() != n || g.Cols() != pretrained.NSFWJSDim || w.Cols() != g.Cols() {
		t.Fatalf("shapes %dx%d and %dx%d", g.Rows(), g.Cols(), w.Rows(), w.Cols())
	}
	nonzero := 0
	for i, v := range w.Float32Data() {
		if g.Float32Data()[i] != v {
			t.Fatalf("value %d: demo row %v, adapter on PNG files %v", i, g.Float32Data()[i], v)
		}
		if v != 0 {
			nonzero++
		}
	}
	if nonzero < n*100 {
		t.Fatalf("only %d non-zero features", nonzero)
	}
}

func TestDemoModelsFlag(t *testing.T) {
	// --models without --onnx is a usage error.
	code, _, stderr := run(t, "demo", "--models", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "--models is for --text, or for the MobileNetV2 row of --onnx") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// A models directory without the prepared model fails, saying how to
	// prepare it.
	requireONNXRuntime(t)
	code, _, stderr = run(t, "demo", "--onnx", "--models", t.TempDir(), "--markdown", "-")
	if code != 1 || !strings.Contains(stderr, "manifest.json") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
