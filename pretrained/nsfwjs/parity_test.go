//go:build cgo

package nsfwjs_test

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/pretrained"
	"github.com/vertebrae-eval/vertebrae/pretrained/nsfwjs"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// requireRuntime is onnx's rule: skip without ONNX Runtime unless
// VERTEBRAE_REQUIRE_ONNXRUNTIME is set (CI).
func requireRuntime(t *testing.T) {
	t.Helper()
	if _, err := onnx.ResolveLibrary(""); err != nil {
		if os.Getenv("VERTEBRAE_REQUIRE_ONNXRUNTIME") != "" {
			t.Fatalf("VERTEBRAE_REQUIRE_ONNXRUNTIME is set but: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// readNpyF32 reads a little-endian float32 .npy array (v1 header).
func readNpyF32(t *testing.T, path string) (shape []int, data []float32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		t.Fatalf("%s: not a .npy file", path)
	}
	hlen := int(binary.LittleEndian.Uint16(b[8:]))
	header := string(b[10 : 10+hlen])
	if !strings.Contains(header, "'<f4'") {
		t.Fatalf("%s: not float32: %s", path, header)
	}
	dims := header[strings.Index(header, "(")+1 : strings.Index(header, ")")]
	for _, d := range strings.Split(dims, ",") {
		if d = strings.TrimSpace(d); d != "" {
			n := 0
			for _, c := range d {
				n = n*10 + int(c-'0')
			}
			shape = append(shape, n)
		}
	}
	raw := b[10+hlen:]
	data = make([]float32, len(raw)/4)
	for i := range data {
		data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return shape, data
}

// TestParityWithTFJS is the acceptance check of the converter: the
// prepared model directory (vertebrae models prepare), run as an
// onnx_image extractor on ONNX Runtime, reproduces the flatten_1 features
// TensorFlow.js computed with nsfwjs's own inference path
// (testdata/reference) on 12 real images within 5e-4.
func TestParityWithTFJS(t *testing.T) {
	dir := modelstest.Dir(t, pretrained.NSFWJSMobileNetV2)
	requireRuntime(t)
	ctx := context.Background()
	imgDir := filepath.Join("testdata", "images")
	entries, err := os.ReadDir(imgDir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".png") {
			paths = append(paths, filepath.Join(imgDir, e.Name()))
		}
	}
	sort.Strings(paths)
	shape, want := readNpyF32(t, filepath.Join("testdata", "mobilenet_v2_flatten_1.npy"))
	if len(shape) != 2 || shape[0] != len(paths) || shape[1] != nsfwjs.Dim || len(paths) < 10 {
		t.Fatalf("reference shape %v for %d images", shape, len(paths))
	}
	enc, err := onnx.NewImageEncoder(ctx, onnx.ImageConfig{Name: "mobilenet-v2", ModelDir: dir, BatchSize: 4, Runtime: onnx.Runtime{IntraOpThreads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	got, err := enc.Encode(ctx, extract.Batch{Side: "query", Items: retrieval.Images(paths)})
	if err != nil {
		t.Fatal(err)
	}
	d := got.(*matrix.Dense)
	rows, cols := d.Rows(), d.Cols()
	if rows != len(paths) || cols != nsfwjs.Dim {
		t.Fatalf("output %dx%d, want %dx%d", rows, cols, len(paths), nsfwjs.Dim)
	}
	const tol = 5e-4
	worst, nonzero := 0.0, 0
	for i := range rows {
		row := d.Float32Data()[i*cols : (i+1)*cols]
		for j := range cols {
			w := float64(want[i*cols+j])
			if w != 0 {
				nonzero++
			}
			d := math.Abs(float64(row[j]) - w)
			if d > worst {
				worst = d
			}
			if d > tol {
				t.Errorf("%s feature %d: got %v, TF.js %v (|Δ| %.3g > %g)", filepath.Base(paths[i]), j, row[j], w, d, tol)
			}
		}
	}
	// The features must carry signal (a broken graph could output zeros
	// and still match the many exact zeros ReLU6 leaves).
	if nonzero < rows*cols/4 {
		t.Fatalf("only %d of %d reference features are non-zero", nonzero, rows*cols)
	}
	t.Logf("max |Δ| = %.3g over %d images × %d features (tolerance %g)", worst, rows, cols, tol)

	// The recipe carries the content identity of the prepared files, equal
	// to the models manifest's digests (SPEC §9.5: cache-safe).
	man, err := pretrained.ReadManifest(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for _, e := range man.Models {
		for _, f := range e.Files {
			digests[f.Path] = "sha256:" + f.SHA256
		}
	}
	r := enc.Recipe()
	ids, _ := r["path_identities"].(map[string]any)
	name := pretrained.NSFWJSMobileNetV2
	if r["cache_safe"] != true || ids["model"] != digests[name+"/model.onnx"] || ids["preprocessor_config"] != digests[name+"/preprocessor_config.json"] || ids["model"] == "" {
		t.Fatalf("recipe identities %v, cache_safe %v; manifest %v", ids, r["cache_safe"], digests)
	}
}
