package imageprep

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"testing"
)

func FuzzConfig(f *testing.F) {
	f.Add([]byte(clipJSON))
	f.Add([]byte(`{"size": 224, "crop_size": 224, "resample": 3, "image_mean": 0.5, "image_std": [0.5]}`))
	f.Add([]byte(`{"size": {"height": 8, "width": 9}, "resample": 2, "do_normalize": false, "do_convert_grayscale": true}`))
	f.Add([]byte(`{"size": [3, 4], "crop_size": {"height": 5, "width": 2}, "resample": 2, "do_rescale": false, "do_normalize": false}`))
	f.Add([]byte(`{"size": {"shortest_edge": 1e400}, "resample": -0, "image_mean": [null]}`))
	f.Add([]byte(`nul`))
	img := solid(3, 2, color.NRGBA{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "fuzz.json")
		if err != nil {
			return
		}
		if _, err := json.Marshal(c.Identity()); err != nil {
			t.Fatalf("Identity not JSON-compatible: %v", err)
		}
		if c.Channels() != 1 && c.Channels() != 3 {
			t.Fatalf("Channels() = %d", c.Channels())
		}
		fh, fw, fixed := c.FixedSize()
		// Run the pipeline when the output stays small.
		small := (!c.DoResize || (c.Size.ShortestEdge <= 32 && c.Size.Height <= 64 && c.Size.Width <= 64)) &&
			(!c.DoCenterCrop || (c.CropHeight <= 64 && c.CropWidth <= 64))
		if !small {
			return
		}
		d, h, w, err := c.Tensor(img)
		if err != nil {
			t.Fatalf("valid config failed on a valid image: %v", err)
		}
		if len(d) != c.Channels()*h*w {
			t.Fatalf("len %d for %dx%dx%d", len(d), c.Channels(), h, w)
		}
		if fixed && (h != fh || w != fw) {
			t.Fatalf("FixedSize %dx%d but output %dx%d", fh, fw, h, w)
		}
	})
}

func FuzzDecodeTensor(f *testing.F) {
	for _, data := range encodeAll(f) {
		f.Add(data)
	}
	// Colour JPEGs of every subsampling ratio and lossy WebPs with and
	// without alpha (the pilref fixtures).
	jpegs, err := filepath.Glob("testdata/pil_jpeg/*.jpg")
	if err != nil || len(jpegs) == 0 {
		f.Fatalf("no JPEG seeds: %v", err)
	}
	webps, err := filepath.Glob("testdata/pil_webp/*.webp")
	if err != nil || len(webps) == 0 {
		f.Fatalf("no WebP seeds: %v", err)
	}
	for _, p := range append(jpegs, webps...) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("GIF89a\x60\xea\x60\xea\x00\x00\x00"))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "))
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	cfg, err := ParseConfig([]byte(`{"size": {"shortest_edge": 8}, "crop_size": 8, "resample": 3,
		"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}`), "fuzz.json")
	if err != nil {
		f.Fatal(err)
	}
	gray := cfg
	gray.DoConvertGrayscale = true
	gray.Resample = ResampleBilinear
	gray.ImageMean, gray.ImageStd = []float64{0.5}, []float64{0.5}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A low pixel bound keeps every input's work small.
		img, err := decodeLimited(bytes.NewReader(data), "fuzz", 1<<16)
		if err != nil {
			return
		}
		if b := img.Bounds(); b.Dx()*b.Dy() > 1<<16 {
			t.Fatalf("decoded %v past the pixel limit", b)
		}
		for _, c := range []Config{cfg, gray} {
			d, h, w, err := c.Tensor(img)
			if err != nil {
				t.Fatalf("tensor: %v", err)
			}
			if h != 8 || w != 8 || len(d) != c.Channels()*64 {
				t.Fatalf("got %dx%d len %d", h, w, len(d))
			}
		}
		_ = image.Image(img)
	})
}
