package imageprep

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"os"
	"sort"
	"strconv"
	"testing"
)

// pilLCG mirrors lcg() in internal/pilref/pilref.py.
type pilLCG uint32

func (s *pilLCG) next() uint8 {
	*s = *s*1664525 + 1013904223
	return uint8(*s >> 24)
}

// pilImage mirrors image() in internal/pilref/pilref.py.
func pilImage(kind, w, h int, seed uint32) *image.NRGBA {
	g := pilLCG(seed)
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	if kind == 0 {
		for i := 0; i < w*h; i++ {
			img.Pix[4*i], img.Pix[4*i+1], img.Pix[4*i+2], img.Pix[4*i+3] = g.next(), g.next(), g.next(), 255
		}
		return img
	}
	bw, bh := (w+2)/3, (h+2)/3
	blocks := make([]uint8, bw*bh*3)
	for i := range blocks {
		if g.next() >= 128 {
			blocks[i] = 255
		}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := img.PixOffset(x, y)
			for c := 0; c < 3; c++ {
				img.Pix[o+c] = blocks[((y/3)*bw+x/3)*3+c]
			}
			img.Pix[o+3] = 255
		}
	}
	return img
}

type pilResizeCase struct {
	filter, kind         int
	inW, inH, outW, outH int
	seed                 uint32
	want                 []uint8
}

func loadPILResize(t *testing.T) []pilResizeCase {
	t.Helper()
	data, err := os.ReadFile("testdata/pil_resize.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 12 || string(data[:8]) != "PILRSZ1\n" {
		t.Fatal("pil_resize.bin: bad magic")
	}
	n := int(binary.LittleEndian.Uint32(data[8:]))
	data = data[12:]
	cases := make([]pilResizeCase, 0, n)
	for i := 0; i < n; i++ {
		if len(data) < 14 {
			t.Fatalf("pil_resize.bin: truncated at case %d", i)
		}
		c := pilResizeCase{
			filter: int(data[0]), kind: int(data[1]),
			inW: int(binary.LittleEndian.Uint16(data[2:])), inH: int(binary.LittleEndian.Uint16(data[4:])),
			outW: int(binary.LittleEndian.Uint16(data[6:])), outH: int(binary.LittleEndian.Uint16(data[8:])),
			seed: binary.LittleEndian.Uint32(data[10:]),
		}
		size := c.outW * c.outH * 3
		if len(data) < 14+size {
			t.Fatalf("pil_resize.bin: truncated pixels at case %d", i)
		}
		c.want = data[14 : 14+size]
		data = data[14+size:]
		cases = append(cases, c)
	}
	if len(data) != 0 {
		t.Fatalf("pil_resize.bin: %d trailing bytes", len(data))
	}
	return cases
}

func direction(c pilResizeCase) string {
	switch {
	case c.outW >= c.inW && c.outH >= c.inH:
		return "up"
	case c.outW <= c.inW && c.outH <= c.inH:
		return "down"
	}
	return "mixed"
}

type parityStat struct {
	cases, values, differing, maxAbs int
}

// TestPILResizeParity compares the resampler with Pillow's Image.resize on
// the fixture from internal/pilref/pilref.py. The outputs must be identical
// (max abs uint8 difference 0); the per-category figures are logged with -v.
func TestPILResizeParity(t *testing.T) {
	cases := loadPILResize(t)
	if len(cases) < 100 {
		t.Fatalf("fixture has only %d cases", len(cases))
	}
	stats := map[string]*parityStat{}
	for _, c := range cases {
		f, err := filterFor(c.filter)
		if err != nil {
			t.Fatal(err)
		}
		src := toPixbuf(pilImage(c.kind, c.inW, c.inH, c.seed), false)
		got := resize(src, c.outW, c.outH, f)
		if got.w != c.outW || got.h != c.outH || len(got.pix) != len(c.want) {
			t.Fatalf("%s %dx%d->%dx%d: got %dx%d", f.name, c.inW, c.inH, c.outW, c.outH, got.w, got.h)
		}
		key := f.name + " " + direction(c)
		s := stats[key]
		if s == nil {
			s = &parityStat{}
			stats[key] = s
		}
		s.cases++
		for i, w := range c.want {
			d := int(got.pix[i]) - int(w)
			if d < 0 {
				d = -d
			}
			s.values++
			if d != 0 {
				s.differing++
				if d > s.maxAbs {
					s.maxAbs = d
				}
			}
		}
	}
	keys := make([]string, 0, len(stats))
	for k := range stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := stats[k]
		t.Logf("%-15s cases=%3d values=%6d differing=%d (%.4f%%) max|diff|=%d",
			k, s.cases, s.values, s.differing, 100*float64(s.differing)/float64(s.values), s.maxAbs)
		if s.maxAbs != 0 {
			t.Errorf("%s: %d of %d uint8 values differ from Pillow (max |diff| %d), want exact parity",
				k, s.differing, s.values, s.maxAbs)
		}
	}
}

type pilClipDoc struct {
	ImageMean     []float64 `json:"image_mean"`
	ImageStd      []float64 `json:"image_std"`
	RescaleFactor float64   `json:"rescale_factor"`
	Cases         []struct {
		Kind         int      `json:"kind"`
		W            int      `json:"w"`
		H            int      `json:"h"`
		Seed         uint32   `json:"seed"`
		ShortestEdge int      `json:"shortest_edge"`
		Crop         int      `json:"crop"`
		Shape        []int    `json:"shape"`
		SHA256       string   `json:"sha256"`
		Values       []string `json:"values"`
		SampleStep   int      `json:"sample_step"`
		Sample       []string `json:"sample"`
	} `json:"cases"`
}

// TestPILCLIPPipeline runs the CLIP preprocessing (shortest edge, bicubic,
// centre crop, rescale, normalise) and compares with the numpy/PIL reference:
// every stored value within 1e-6 and the SHA-256 of the whole float32 tensor
// equal, i.e. bit-identical tensors.
func TestPILCLIPPipeline(t *testing.T) {
	data, err := os.ReadFile("testdata/pil_clip.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc pilClipDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc.Cases {
		name := fmt.Sprintf("kind%d_%dx%d_se%d_crop%d", c.Kind, c.W, c.H, c.ShortestEdge, c.Crop)
		t.Run(name, func(t *testing.T) {
			cfgJSON := fmt.Sprintf(`{"do_resize":true,"size":{"shortest_edge":%d},"resample":3,
				"do_center_crop":true,"crop_size":%d,"do_rescale":true,"rescale_factor":%v,
				"do_normalize":true,"image_mean":%s,"image_std":%s,"do_convert_rgb":true}`,
				c.ShortestEdge, c.Crop, doc.RescaleFactor, floats(doc.ImageMean), floats(doc.ImageStd))
			cfg, err := ParseConfig([]byte(cfgJSON), "clip.json")
			if err != nil {
				t.Fatal(err)
			}
			got, h, w, err := cfg.Tensor(pilImage(c.Kind, c.W, c.H, c.Seed))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Shape) != 3 || c.Shape[0] != 3 || c.Shape[1] != h || c.Shape[2] != w || len(got) != 3*h*w {
				t.Fatalf("shape: got 3x%dx%d (len %d), want %v", h, w, len(got), c.Shape)
			}
			step, ref := 1, c.Values
			if len(ref) == 0 {
				step, ref = c.SampleStep, c.Sample
			}
			maxDiff := 0.0
			for i, s := range ref {
				v, err := strconv.ParseFloat(s, 32)
				if err != nil {
					t.Fatal(err)
				}
				maxDiff = math.Max(maxDiff, math.Abs(float64(got[i*step])-v))
			}
			if maxDiff > 1e-6 {
				t.Errorf("max |diff| %g over %d compared values, want <= 1e-6", maxDiff, len(ref))
			}
			buf := make([]byte, 4*len(got))
			for i, v := range got {
				binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
			}
			sum := sha256.Sum256(buf)
			if hex.EncodeToString(sum[:]) != c.SHA256 {
				t.Errorf("float32 tensor is not bit-identical to numpy's (sampled max |diff| %g)", maxDiff)
			}
		})
	}
}

func floats(v []float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
