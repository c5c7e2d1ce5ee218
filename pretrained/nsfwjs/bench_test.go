//go:build cgo

package nsfwjs_test

import (
	"context"
	"image"
	"testing"

	"github.com/vertebrae-eval/vertebrae/demo"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
	"github.com/vertebrae-eval/vertebrae/pretrained"
)

// BenchmarkMobileNetV2 measures the demo row's cost per image: 32 demo
// images (28×28 grey → RGB 224×224) through the prepared model as one
// onnx_image batch; ns/op ÷ 32 is the time per image.
//
//	go test -run='^$' -bench=MobileNetV2 ./extract/onnx/keras/nsfwjs
func BenchmarkMobileNetV2(b *testing.B) {
	dir := modelstest.Dir(b, pretrained.NSFWJSMobileNetV2)
	if _, err := onnx.ResolveLibrary(""); err != nil {
		b.Skip(err)
	}
	ctx := context.Background()
	enc, err := onnx.NewImageEncoder(ctx, onnx.ImageConfig{Name: "mobilenet-v2", ModelDir: dir, BatchSize: 32})
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	data, err := demo.Load()
	if err != nil {
		b.Fatal(err)
	}
	imgs := make([]image.Image, 32)
	for i := range imgs {
		imgs[i] = &image.Gray{Pix: data.QueryImages[i], Stride: demo.ImageSide, Rect: image.Rect(0, 0, demo.ImageSide, demo.ImageSide)}
	}
	for b.Loop() {
		if _, err := enc.EncodeImages(ctx, imgs, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*len(imgs)), "ms/image")
}
