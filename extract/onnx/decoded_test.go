//go:build cgo

package onnx

import (
	"context"
	"image"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/onnx/imageprep"
)

// TestEncodeImages: images decoded by the caller give bit for bit the rows
// Encode gives for the same files, in any batch split, and a nil image is
// reported with its row.
func TestEncodeImages(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	paths := retrievalImagePaths()
	imgs := make([]image.Image, len(paths))
	for i, p := range paths {
		img, err := imageprep.DecodeFile(p)
		if err != nil {
			t.Fatal(err)
		}
		imgs[i] = img
	}
	e, err := NewImageEncoder(ctx, ImageConfig{Name: "img", ModelDir: filepath.Join(testdata, "tiny-image"), BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	want := mustDense(t)(e.Encode(ctx, extract.Batch{Items: paths}))
	got := mustDense(t)(e.EncodeImages(ctx, imgs, 0))
	if got.Rows() != len(paths) || got.Cols() != want.Cols() {
		t.Fatalf("shape %dx%d, want %dx%d", got.Rows(), got.Cols(), want.Rows(), want.Cols())
	}
	for i, v := range want.Float32Data() {
		if got.Float32Data()[i] != v {
			t.Fatalf("value %d: EncodeImages %v, Encode %v", i, got.Float32Data()[i], v)
		}
	}
	tail := mustDense(t)(e.EncodeImages(ctx, imgs[1:], 1))
	for i, v := range tail.Float32Data() {
		if v != want.Float32Data()[want.Cols()+i] {
			t.Fatalf("a different split changed value %d", i)
		}
	}
	_, err = e.EncodeImages(ctx, []image.Image{imgs[0], nil}, 10)
	if err == nil || !strings.Contains(err.Error(), "image row 11: nil image") || !strings.Contains(err.Error(), "extractor img") {
		t.Fatalf("nil image: %v", err)
	}
}
