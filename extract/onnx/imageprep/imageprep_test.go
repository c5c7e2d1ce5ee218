package imageprep

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
)

// raw is a config that only converts to floats: no resize, crop, rescale or
// normalisation, so the tensor holds the converted uint8 values.
var raw = Config{DoConvertRGB: true}

func solid(w, h int, c color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		copy(img.Pix[4*i:], []uint8{c.R, c.G, c.B, c.A})
	}
	return img
}

func mustTensor(t *testing.T, c Config, img image.Image) ([]float32, int, int) {
	t.Helper()
	d, h, w, err := c.Tensor(img)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != c.Channels()*h*w {
		t.Fatalf("len %d, want %d×%d×%d", len(d), c.Channels(), h, w)
	}
	return d, h, w
}

func TestConversion(t *testing.T) {
	pal := image.NewPaletted(image.Rect(0, 0, 2, 1), color.Palette{
		color.NRGBA{10, 20, 30, 0}, // fully transparent: colour kept, alpha dropped
		color.RGBA{1, 2, 3, 255},
	})
	pal.Pix = []uint8{0, 1}
	gray16 := image.NewGray16(image.Rect(0, 0, 1, 1))
	gray16.SetGray16(0, 0, color.Gray16{Y: 0xabcd})
	gray := image.NewGray(image.Rect(0, 0, 1, 1))
	gray.Pix[0] = 77
	premul := image.NewRGBA(image.Rect(0, 0, 1, 1))
	premul.Pix = []uint8{100, 50, 25, 128} // straight ≈ (199, 99, 49)
	n64 := image.NewNRGBA64(image.Rect(0, 0, 1, 1))
	n64.SetNRGBA64(0, 0, color.NRGBA64{R: 0x1234, G: 0xfedc, B: 0x00ff, A: 0})
	ycc := image.NewYCbCr(image.Rect(0, 0, 1, 1), image.YCbCrSubsampleRatio444)
	ycc.Y[0], ycc.Cb[0], ycc.Cr[0] = 100, 128, 200
	cmyk := image.NewCMYK(image.Rect(0, 0, 3, 1))
	cmyk.Pix = []uint8{0, 0, 0, 0, 255, 0, 0, 0, 100, 100, 100, 50}
	sub := solid(4, 4, color.NRGBA{9, 8, 7, 255}).SubImage(image.Rect(1, 1, 3, 2))

	tests := []struct {
		name string
		img  image.Image
		want [][3]float32 // per pixel, row-major
	}{
		{"nrgba alpha dropped", solid(1, 1, color.NRGBA{200, 100, 50, 10}), [][3]float32{{200, 100, 50}}},
		{"palette", pal, [][3]float32{{10, 20, 30}, {1, 2, 3}}},
		{"gray replicated", gray, [][3]float32{{77, 77, 77}}},
		{"gray16 high byte", gray16, [][3]float32{{0xab, 0xab, 0xab}}},
		{"rgba premultiplied", premul, [][3]float32{{199, 99, 49}}},
		{"nrgba64 high byte", n64, [][3]float32{{0x12, 0xfe, 0x00}}},
		// libjpeg: R = 100 + ((91881·72 + 32768) >> 16) = 201,
		// G = 100 + ((32768 − 46802·72) >> 16) = 49, B = 100.
		{"ycbcr libjpeg arithmetic", ycc, [][3]float32{{201, 49, 100}}},
		// Pillow cmyk2rgb: nk − MULDIV255(c, nk); c=100,k=50: 205 − 80 = 125.
		{"cmyk", cmyk, [][3]float32{{255, 255, 255}, {0, 255, 255}, {125, 125, 125}}},
		{"sub-image", sub, [][3]float32{{9, 8, 7}, {9, 8, 7}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, h, w := mustTensor(t, raw, tc.img)
			if h*w != len(tc.want) {
				t.Fatalf("got %dx%d, want %d pixels", h, w, len(tc.want))
			}
			for i, px := range tc.want {
				for c := 0; c < 3; c++ {
					if got := d[c*h*w+i]; got != px[c] {
						t.Errorf("pixel %d channel %d = %v, want %v", i, c, got, px[c])
					}
				}
			}
		})
	}
}

func TestGrayscaleExtension(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 4, 1))
	copy(img.Pix, []uint8{255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 0, 90, 90, 90, 255})
	c := raw
	c.DoConvertGrayscale = true
	d, h, w := mustTensor(t, c, img)
	// PIL convert("L"): red 76, green 150, blue 29, grey unchanged.
	want := []float32{76, 150, 29, 90}
	if h != 1 || w != 4 || !reflect.DeepEqual(d, want) {
		t.Fatalf("got %v (%dx%d), want %v", d, h, w, want)
	}
	if c.Channels() != 1 {
		t.Fatal("Channels() != 1")
	}
}

func TestRescaleNormalize(t *testing.T) {
	img := image.NewGray(image.Rect(0, 0, 4, 1))
	copy(img.Pix, []uint8{0, 51, 255, 128})
	c := Config{DoConvertRGB: true, DoRescale: true, RescaleFactor: 1.0 / 255, DoNormalize: true,
		ImageMean: []float64{0.5}, ImageStd: []float64{0.5}}
	d, _, _ := mustTensor(t, c, img)
	// 0 → −1; 51/255 = 0.2 → −0.6; 255 → 1; 128/255 → 0.003921628 (float32 steps).
	want := []float32{-1, -0.6, 1, float32(float32(float32(128.0/255)-0.5) / 0.5)}
	for i, v := range want {
		if diff := d[i] - v; diff > 1e-7 || diff < -1e-7 {
			t.Errorf("value %d = %v, want %v", i, d[i], v)
		}
	}
	// Channel-major layout with per-channel mean/std.
	c.ImageMean = []float64{0, 1, 2}
	c.ImageStd = []float64{1, 2, 4}
	c.DoRescale = false
	rgb := solid(2, 1, color.NRGBA{10, 20, 30, 255})
	d, _, _ = mustTensor(t, c, rgb)
	if w := []float32{10, 10, 9.5, 9.5, 7, 7}; !reflect.DeepEqual(d, w) {
		t.Fatalf("got %v, want %v", d, w)
	}
}

func TestResizeAndCrop(t *testing.T) {
	g := func(w, h int) *image.Gray {
		img := image.NewGray(image.Rect(0, 0, w, h))
		for i := range img.Pix {
			img.Pix[i] = uint8(i + 1)
		}
		return img
	}
	short := func(s int) Config {
		return Config{DoConvertRGB: true, DoResize: true, Size: Size{ShortestEdge: s}, Resample: ResampleBicubic}
	}
	crop := func(h, w int) Config {
		return Config{DoConvertRGB: true, DoCenterCrop: true, CropHeight: h, CropWidth: w}
	}
	tests := []struct {
		name   string
		cfg    Config
		img    image.Image
		h, w   int
		plane0 []float32 // first channel, when checked
	}{
		{"shortest edge landscape", short(224), g(640, 480), 224, 298, nil},
		{"shortest edge portrait", short(224), g(480, 640), 298, 224, nil},
		{"shortest edge upscale", short(10), g(3, 7), 23, 10, nil},
		{"exact size", Config{DoResize: true, Size: Size{Height: 5, Width: 6}, Resample: ResampleBilinear}, g(200, 100), 5, 6, nil},
		{"solid stays solid", short(3), solid(1, 1, color.NRGBA{7, 7, 7, 255}), 3, 3, []float32{7, 7, 7, 7, 7, 7, 7, 7, 7}},
		{"crop odd offset floor", crop(1, 2), g(5, 1), 1, 2, []float32{2, 3}},
		{"crop pads at ceil offset", crop(2, 2), g(1, 1), 2, 2, []float32{0, 0, 0, 1}},
		{"crop pads centre", crop(3, 3), g(1, 1), 3, 3, []float32{0, 0, 0, 0, 1, 0, 0, 0, 0}},
		{"crop pads one axis", crop(2, 3), g(4, 1), 2, 3, []float32{0, 0, 0, 1, 2, 3}},
		{"crop noop", crop(2, 2), g(2, 2), 2, 2, []float32{1, 2, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, h, w := mustTensor(t, tc.cfg, tc.img)
			if h != tc.h || w != tc.w {
				t.Fatalf("got %dx%d (h×w), want %dx%d", h, w, tc.h, tc.w)
			}
			if tc.plane0 != nil && !reflect.DeepEqual(d[:h*w], tc.plane0) {
				t.Fatalf("plane 0 = %v, want %v", d[:h*w], tc.plane0)
			}
		})
	}
}

const clipJSON = `{
  "crop_size": {"height": 224, "width": 224},
  "do_center_crop": true, "do_convert_rgb": true, "do_normalize": true,
  "do_rescale": true, "do_resize": true,
  "image_mean": [0.48145466, 0.4578275, 0.40821073],
  "image_processor_type": "CLIPImageProcessor",
  "image_std": [0.26862954, 0.26130258, 0.27577711],
  "resample": 3, "rescale_factor": 0.00392156862745098,
  "size": {"shortest_edge": 224}
}`

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(clipJSON), "clip.json")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		DoConvertRGB: true, DoResize: true, Size: Size{ShortestEdge: 224}, Resample: 3,
		DoCenterCrop: true, CropHeight: 224, CropWidth: 224,
		DoRescale: true, RescaleFactor: 0.00392156862745098, DoNormalize: true,
		ImageMean: []float64{0.48145466, 0.4578275, 0.40821073},
		ImageStd:  []float64{0.26862954, 0.26130258, 0.27577711},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	if h, w, ok := c.FixedSize(); !ok || h != 224 || w != 224 {
		t.Fatalf("FixedSize = %d, %d, %v", h, w, ok)
	}

	// Legacy feature-extractor form and defaults.
	legacy, err := ParseConfig([]byte(`{"size": 224, "crop_size": 224, "resample": 3,
		"image_mean": 0.5, "image_std": [0.5], "do_convert_rgb": null}`), "legacy.json")
	if err != nil {
		t.Fatal(err)
	}
	if legacy.Size.ShortestEdge != 224 || !legacy.DoCenterCrop || legacy.CropHeight != 224 ||
		!legacy.DoRescale || legacy.RescaleFactor != 1.0/255 || !legacy.DoConvertRGB ||
		!reflect.DeepEqual(legacy.ImageMean, []float64{0.5, 0.5, 0.5}) ||
		!reflect.DeepEqual(legacy.ImageStd, []float64{0.5, 0.5, 0.5}) {
		t.Fatalf("legacy: %+v", legacy)
	}

	// SigLIP-like: exact size, no crop key → no crop, fixed size from resize.
	sig, err := ParseConfig([]byte(`{"size": {"height": 384, "width": 384}, "resample": 2,
		"image_mean": [0.5,0.5,0.5], "image_std": [0.5,0.5,0.5]}`), "siglip.json")
	if err != nil {
		t.Fatal(err)
	}
	if h, w, ok := sig.FixedSize(); sig.DoCenterCrop || !ok || h != 384 || w != 384 {
		t.Fatalf("siglip FixedSize = %d, %d, %v (crop %v)", h, w, ok, sig.DoCenterCrop)
	}
	nofix, err := ParseConfig([]byte(`{"size": 224, "resample": 3, "do_normalize": false}`), "x.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := nofix.FixedSize(); ok {
		t.Fatal("shortest-edge resize without crop reported a fixed size")
	}
	gray, err := ParseConfig([]byte(`{"do_resize": false, "do_convert_grayscale": true,
		"image_mean": [0.5], "image_std": 0.25}`), "gray.json")
	if err != nil || gray.Channels() != 1 || !reflect.DeepEqual(gray.ImageStd, []float64{0.25}) {
		t.Fatalf("gray: %+v, %v", gray, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	norm := `"image_mean": [0.5,0.5,0.5], "image_std": [0.5,0.5,0.5]`
	tests := []struct {
		name, json string
		want       []string
	}{
		{"resample lanczos", `{"size": 224, "resample": 1, ` + norm + `}`, []string{"cfg.json: field resample", "1", "bilinear"}},
		{"resample string", `{"size": 224, "resample": "bicubic", ` + norm + `}`, []string{"field resample", "number"}},
		{"resample missing", `{"size": 224, ` + norm + `}`, []string{"field resample", "missing"}},
		{"mean missing", `{"size": 224, "resample": 3, "image_std": [0.5,0.5,0.5]}`, []string{"field image_mean", "missing"}},
		{"std missing", `{"do_resize": false, "image_mean": [0.5,0.5,0.5]}`, []string{"field image_std", "missing"}},
		{"std zero", `{"do_resize": false, "image_mean": 0, "image_std": [0.5, 0, 0.5]}`, []string{"field image_std", "positive"}},
		{"mean two values", `{"do_resize": false, "image_mean": [1,2], "image_std": 1}`, []string{"field image_mean", "2 values"}},
		{"gray with rgb mean", `{"do_resize": false, "do_convert_grayscale": true, ` + norm + `}`, []string{"field image_mean", "want 1 (do_convert_grayscale"}},
		{"size zero", `{"size": 0, "resample": 3, "do_normalize": false}`, []string{"field size", "positive"}},
		{"size height zero", `{"size": {"height": 0, "width": 3}, "resample": 3, "do_normalize": false}`, []string{"field size.height", "positive"}},
		{"size huge", `{"size": 1000000, "resample": 3, "do_normalize": false}`, []string{"field size", "limit"}},
		{"size longest edge", `{"size": {"shortest_edge": 3, "longest_edge": 9}, "resample": 3, "do_normalize": false}`, []string{"field size", "longest_edge"}},
		{"size fraction", `{"size": 22.5, "resample": 3, "do_normalize": false}`, []string{"field size", "integer"}},
		{"crop zero", `{"do_resize": false, "crop_size": 0, "do_normalize": false}`, []string{"field crop_size", "positive"}},
		{"crop missing", `{"do_resize": false, "do_center_crop": true, "do_normalize": false}`, []string{"field crop_size", "missing"}},
		{"crop bad keys", `{"do_resize": false, "crop_size": {"h": 3}, "do_normalize": false}`, []string{"field crop_size", "height"}},
		{"bool as string", `{"do_resize": "yes"}`, []string{"field do_resize", "true or false"}},
		{"rescale negative", `{"do_resize": false, "do_normalize": false, "rescale_factor": -1}`, []string{"field rescale_factor", "positive"}},
		{"not an object", `[1,2]`, []string{"cfg.json", "JSON object"}},
		{"null", `null`, []string{"cfg.json", "JSON object"}},
		{"garbage", `{"size":`, []string{"cfg.json", "invalid JSON"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.json), "cfg.json")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "preprocessor_config.json")
	if err := os.WriteFile(p, []byte(`{"size": 224, "resample": 7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(p)
	if err == nil || !strings.Contains(err.Error(), p+": field resample") {
		t.Fatalf("error %v does not name file and field", err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestIdentity(t *testing.T) {
	c, err := ParseConfig([]byte(clipJSON), "clip.json")
	if err != nil {
		t.Fatal(err)
	}
	a, err := json.Marshal(c.Identity())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c.Identity())
	if !bytes.Equal(a, b) {
		t.Fatal("Identity is not deterministic")
	}
	for _, k := range []string{`"resample":3`, `"resample_name":"bicubic"`, `"crop_size":{"height":224,"width":224}`,
		`"size":{"shortest_edge":224}`, `"channels":3`, `"rescale_factor":0.00392156862745098`, `"implementation":`} {
		if !bytes.Contains(a, []byte(k)) {
			t.Errorf("identity %s lacks %s", a, k)
		}
	}
	c.DoNormalize = false
	c.DoCenterCrop = false
	id, _ := json.Marshal(c.Identity())
	if bytes.Contains(id, []byte("image_mean")) || bytes.Contains(id, []byte("crop_size")) {
		t.Fatalf("disabled steps leak settings: %s", id)
	}
}

func TestTensorErrors(t *testing.T) {
	img := solid(2, 2, color.NRGBA{1, 2, 3, 255})
	tests := []struct {
		name string
		cfg  Config
		img  image.Image
		want string
	}{
		{"nil image", raw, nil, "nil image"},
		{"empty image", raw, image.NewGray(image.Rect(0, 0, 0, 5)), "empty image"},
		{"zero resize target", Config{DoResize: true, Size: Size{Height: 0, Width: 3}, Resample: 3}, img, "size.height"},
		{"zero crop", Config{DoCenterCrop: true, CropHeight: 3}, img, "crop_size.width"},
		{"bad resample", Config{DoResize: true, Size: Size{ShortestEdge: 3}, Resample: 4}, img, "field resample"},
		{"mean missing", Config{DoNormalize: true, ImageStd: []float64{1}}, img, "image_mean"},
		{"too large after resize", Config{DoResize: true, Size: Size{ShortestEdge: 16384}, Resample: 2}, image.NewGray(image.Rect(0, 0, 1, 5000)), "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := tc.cfg.Tensor(tc.img)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func encodeAll(t testing.TB) map[string][]byte {
	t.Helper()
	src := image.NewNRGBA(image.Rect(0, 0, 5, 3))
	for i := range src.Pix {
		src.Pix[i] = uint8(i * 37)
	}
	pal := image.NewPaletted(src.Rect, color.Palette{color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}})
	for i := range pal.Pix {
		pal.Pix[i] = uint8(i % 2)
	}
	gray := image.NewGray(src.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i * 16)
	}
	out := map[string][]byte{}
	var b bytes.Buffer
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(png.Encode(&b, src))
	out["png"] = append([]byte(nil), b.Bytes()...)
	b.Reset()
	must(gif.Encode(&b, pal, nil))
	out["gif"] = append([]byte(nil), b.Bytes()...)
	b.Reset()
	must(jpeg.Encode(&b, gray, &jpeg.Options{Quality: 100}))
	out["jpeg"] = append([]byte(nil), b.Bytes()...)
	b.Reset()
	must(bmp.Encode(&b, pal))
	out["bmp"] = append([]byte(nil), b.Bytes()...)
	b.Reset()
	must(tiff.Encode(&b, src, nil))
	out["tiff"] = append([]byte(nil), b.Bytes()...)
	return out
}

func TestDecodeFile(t *testing.T) {
	dir := t.TempDir()
	files := encodeAll(t)
	for name, data := range files {
		p := filepath.Join(dir, "img."+name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		img, err := DecodeFile(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d, h, w := mustTensor(t, raw, img)
		if h != 3 || w != 5 {
			t.Fatalf("%s: %dx%d", name, h, w)
		}
		switch name {
		case "png", "tiff": // lossless straight RGBA: alpha dropped, colour kept
			for i := 0; i < 15; i++ {
				for c := 0; c < 3; c++ {
					if want := float32(uint8((4*i + c) * 37)); d[c*15+i] != want {
						t.Fatalf("%s: pixel %d channel %d = %v, want %v", name, i, c, d[c*15+i], want)
					}
				}
			}
		case "gif", "bmp": // palette expanded
			if d[0] != 255 || d[15] != 0 || d[30] != 0 || d[1] != 0 || d[31] != 255 {
				t.Fatalf("%s: palette not expanded: %v", name, d)
			}
		case "jpeg": // greyscale JPEG: three equal planes
			if !reflect.DeepEqual(d[:15], d[15:30]) || !reflect.DeepEqual(d[:15], d[30:]) {
				t.Fatalf("jpeg: grey planes differ")
			}
		}
	}

	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	corrupt := append([]byte(nil), files["png"][:40]...)
	hugeGIF := []byte("GIF89a\x60\xea\x60\xea\x00\x00\x00") // 60000×60000 logical screen
	tests := []struct {
		name, path string
		want       []string
		is         error
	}{
		{"corrupt", write("broken.png", corrupt), []string{"broken.png", "corrupt png"}, nil},
		{"unsupported", write("notes.txt", []byte("hello, world")), []string{"notes.txt", "unsupported image format", "PNG, JPEG, GIF, WebP"}, ErrUnsupportedFormat},
		{"empty file", write("empty.jpg", nil), []string{"empty.jpg", "unsupported"}, ErrUnsupportedFormat},
		{"too large", write("huge.gif", hugeGIF), []string{"huge.gif", "too large"}, ErrTooLarge},
		{"missing", filepath.Join(dir, "nope.png"), []string{"nope.png"}, os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeFile(tc.path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}

func TestWebPColour(t *testing.T) {
	// libwebp VP8YuvToRgb on limited-range values: Y=16 is black, Y=235 white.
	m := image.NewYCbCr(image.Rect(0, 0, 3, 1), image.YCbCrSubsampleRatio444)
	copy(m.Y, []uint8{16, 235, 128})
	copy(m.Cb, []uint8{128, 128, 128})
	copy(m.Cr, []uint8{128, 128, 128})
	got := webpToNRGBA(m, nil).Pix
	want := []uint8{0, 0, 0, 255, 255, 255, 255, 255, 130, 130, 130, 255}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
