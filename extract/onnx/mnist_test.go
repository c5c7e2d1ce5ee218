//go:build cgo

package onnx

import (
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/demo"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// TestMNISTImageAdapter runs the real MNIST classifier as an onnx_image
// extractor on real Fashion-MNIST images written as PNG files: decoding,
// the grayscale preprocessing extension and the fixed batch of 1 must give
// exactly the logits of feeding the raw pixels to the session directly.
func TestMNISTImageAdapter(t *testing.T) {
	requireRuntime(t)
	data, err := demo.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "model.onnx"), demo.MNISTModel(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "preprocessor_config.json"), []byte(`{
		"do_resize": false, "do_center_crop": false, "do_rescale": false, "do_normalize": false,
		"do_convert_grayscale": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 24
	paths := make([]string, n)
	for i := range paths {
		img := &image.Gray{Pix: data.QueryImages[i], Stride: demo.ImageSide, Rect: image.Rect(0, 0, demo.ImageSide, demo.ImageSide)}
		paths[i] = filepath.Join(dir, "img"+strconv.Itoa(i)+".png")
		f, err := os.Create(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	ctx := context.Background()
	enc, err := NewImageEncoder(ctx, ImageConfig{Name: "mnist", ModelDir: dir, BatchSize: 8, Runtime: Runtime{IntraOpThreads: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	got, err := enc.Encode(ctx, extract.Batch{Side: "query", Items: retrieval.Images(paths)})
	if err != nil {
		t.Fatal(err)
	}
	d := got.(*matrix.Dense)
	if d.Rows() != n || d.Cols() != 10 {
		t.Fatalf("shape %d×%d, want %d×10", d.Rows(), d.Cols(), n)
	}
	sess, err := OpenSessionBytes(ctx, "mnist", demo.MNISTModel(), Runtime{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	pix := make([]float32, 784)
	for i := 0; i < n; i++ {
		for j, p := range data.QueryImages[i] {
			pix[j] = float32(p)
		}
		want, err := sess.Run(ctx, []Feed{{Name: "Input3", Shape: []int64{1, 1, 28, 28}, Float32: pix}}, "Plus214_Output_0")
		if err != nil {
			t.Fatal(err)
		}
		for j, w := range want.Data {
			if g := d.Float32Data()[i*10+j]; g != w {
				t.Fatalf("image %d logit %d = %v, direct session %v", i, j, g, w)
			}
		}
	}
	r := enc.Recipe()
	if r["extractor_type"] != "onnx_image" || r["cache_safe"] != true || r["cache_identity"] != nil {
		t.Errorf("recipe %v", r)
	}
	if r["image"].(map[string]any)["output"] != "Plus214_Output_0" {
		t.Errorf("the model's only output is the default: %v", r["image"])
	}
	// A corrupt image is reported with its row and file.
	bad := filepath.Join(dir, "bad.png")
	os.WriteFile(bad, []byte("not a png"), 0o644)
	_, err = enc.Encode(ctx, extract.Batch{Side: "gallery", Start: 40, Items: retrieval.Images{paths[0], bad}})
	if err == nil || !strings.Contains(err.Error(), "image row 41") || !strings.Contains(err.Error(), bad) {
		t.Fatalf("corrupt image error: %v", err)
	}
	// Text is not this extractor's modality.
	if _, err := enc.Encode(ctx, extract.Batch{Items: retrieval.Texts{"a"}}); err == nil || !strings.Contains(err.Error(), "does not support retrieval modality text") {
		t.Fatalf("text batch: %v", err)
	}
}
