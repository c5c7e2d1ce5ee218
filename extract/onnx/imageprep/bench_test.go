package imageprep

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"testing"
)

// BenchmarkCLIPPipeline measures the CLIP preprocessing of a 640×480 photo
// (decode, RGB conversion, bicubic resize to 298×224, crop, normalise):
//
//	go test -run '^$' -bench CLIPPipeline ./extract/imageprep
func BenchmarkCLIPPipeline(b *testing.B) {
	img := image.NewRGBA(image.Rect(0, 0, 640, 480))
	for y := 0; y < 480; y++ {
		for x := 0; x < 640; x++ {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x ^ y), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		b.Fatal(err)
	}
	cfg, err := ParseConfig([]byte(`{"do_resize": true, "size": {"shortest_edge": 224}, "resample": 3,
		"do_center_crop": true, "crop_size": {"height": 224, "width": 224},
		"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}`), "clip")
	if err != nil {
		b.Fatal(err)
	}
	decoded, err := Decode(bytes.NewReader(buf.Bytes()), "photo.jpg")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(bytes.NewReader(buf.Bytes()), "photo.jpg"); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name string
		img  image.Image
	}{{"tensor-jpeg", decoded}, {"tensor-rgba", img}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, _, err := cfg.Tensor(c.img); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
