package imageprep

import (
	"encoding/binary"
	"fmt"
	"image"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pilRGBCase is one decoded image of a pilref fixture (pil_jpeg.bin,
// pil_webp.bin): the file name and PIL's RGB pixels.
type pilRGBCase struct {
	name string
	w, h int
	want []uint8
}

func loadPILJPEG(t *testing.T) []pilRGBCase {
	t.Helper()
	return loadPILRGB(t, "testdata/pil_jpeg.bin", "PILJPG1\n")
}

// loadPILRGB reads a fixture in pilref.py's decoded-RGB layout: magic, u32
// case count, then per case u8 name length, name, u16 width, u16 height and
// width*height*3 bytes of RGB.
func loadPILRGB(t *testing.T, path, magic string) []pilRGBCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(path)
	if len(data) < len(magic)+4 || string(data[:len(magic)]) != magic {
		t.Fatalf("%s: bad magic", base)
	}
	n := int(binary.LittleEndian.Uint32(data[len(magic):]))
	data = data[len(magic)+4:]
	cases := make([]pilRGBCase, 0, n)
	for i := 0; i < n; i++ {
		if len(data) < 1 || len(data) < 1+int(data[0])+4 {
			t.Fatalf("%s: truncated at case %d", base, i)
		}
		c := pilRGBCase{name: string(data[1 : 1+data[0]])}
		data = data[1+len(c.name):]
		c.w, c.h = int(binary.LittleEndian.Uint16(data)), int(binary.LittleEndian.Uint16(data[2:]))
		size := c.w * c.h * 3
		if len(data) < 4+size {
			t.Fatalf("%s: truncated pixels at case %d", base, i)
		}
		c.want = data[4 : 4+size]
		data = data[4+size:]
		cases = append(cases, c)
	}
	if len(data) != 0 {
		t.Fatalf("%s: %d trailing bytes", base, len(data))
	}
	return cases
}

type diffStat struct {
	values, differing, maxAbs int
	mean                      float64
}

func (s diffStat) String() string {
	return fmt.Sprintf("values=%5d differing=%5d (%5.1f%%) max|diff|=%2d mean|diff|=%.3f",
		s.values, s.differing, 100*float64(s.differing)/float64(s.values), s.maxAbs, s.mean)
}

func compareRGB(got, want []uint8) diffStat {
	s := diffStat{values: len(want)}
	sum := 0
	for i, w := range want {
		d := int(got[i]) - int(w)
		if d < 0 {
			d = -d
		}
		sum += d
		if d != 0 {
			s.differing++
			s.maxAbs = max(s.maxAbs, d)
		}
	}
	s.mean = float64(sum) / float64(len(want))
	return s
}

// nearestYCbCrToRGB is the conversion used before libjpeg-turbo's fancy
// upsampling was reproduced: chroma sampled at COffset.
func nearestYCbCrToRGB(m *image.YCbCr) []uint8 {
	b := m.Rect
	rgb := make([]uint8, 0, 3*b.Dx()*b.Dy())
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			yy := int32(m.Y[m.YOffset(x, y)])
			ci := m.COffset(x, y)
			cb, cr := m.Cb[ci], m.Cr[ci]
			rgb = append(rgb, clamp255(yy+crR[cr]), clamp255(yy+(cbG[cb]+crG[cr])>>16), clamp255(yy+cbB[cb]))
		}
	}
	return rgb
}

// TestPILJPEGParity decodes the JPEG fixtures written by
// internal/pilref/pilref.py with DecodeFile, converts them to RGB and
// compares with Pillow's decoded pixels (libjpeg-turbo). Flat-block images
// (DC-only blocks, exact IDCT in both decoders) must match exactly; the
// others may differ only by the IDCT residual. For fixtures where
// libjpeg-turbo interpolates chroma, the old nearest-chroma conversion must
// fail the same bounds. The figures are logged with -v.
func TestPILJPEGParity(t *testing.T) {
	cases := loadPILJPEG(t)
	if len(cases) < 20 {
		t.Fatalf("fixture has only %d cases", len(cases))
	}
	for _, c := range cases {
		img, err := DecodeFile(filepath.Join("testdata", "pil_jpeg", c.name))
		if err != nil {
			t.Fatal(err)
		}
		m, ok := img.(*image.YCbCr)
		if !ok {
			t.Fatalf("%s: decoded as %T, want *image.YCbCr", c.name, img)
		}
		got := toPixbuf(img, false)
		if got.w != c.w || got.h != c.h || len(got.pix) != len(c.want) {
			t.Fatalf("%s: got %dx%d, want %dx%d", c.name, got.w, got.h, c.w, c.h)
		}
		maxAbs, maxMean := 3, 0.08 // IDCT residual
		if strings.HasPrefix(c.name, "blocks_") {
			maxAbs, maxMean = 0, 0
		}
		s := compareRGB(got.pix, c.want)
		fancy := newChromaUpsampler(m).mode != upNearest
		old := compareRGB(nearestYCbCrToRGB(m), c.want)
		t.Logf("%-22s %-26v %s   nearest chroma: max|diff|=%2d mean|diff|=%.3f",
			c.name, m.SubsampleRatio, s, old.maxAbs, old.mean)
		if s.maxAbs > maxAbs || s.mean > maxMean {
			t.Errorf("%s: %v; want max|diff| <= %d and mean|diff| <= %g", c.name, s, maxAbs, maxMean)
		}
		if fancy && old.maxAbs <= maxAbs && old.mean <= maxMean {
			t.Errorf("%s: nearest chroma sampling passes the bounds too (%v); the fixture does not exercise upsampling", c.name, old)
		}
	}
}

// refUpsample is a structural transcription of libjpeg-turbo's jdsample.c
// loops (first/last column special cases, context rows duplicated at the
// top and bottom as jdmainct.c does), used to check chromaUpsampler on
// random planes. in is ch rows of cw samples; the result has
// ch·vf rows of cw·hf samples.
func refUpsample(in [][]uint8, hf, vf int) [][]uint8 {
	ch, cw := len(in), len(in[0])
	ctx := func(i int) []uint8 { return in[min(max(i, 0), ch-1)] }
	var out [][]uint8
	for r := 0; r < ch; r++ {
		if vf == 1 { // h2v1_fancy_upsample
			p, o := in[r], make([]uint8, 0, 2*cw)
			v := int(p[0])
			o = append(o, uint8(v), uint8((v*3+int(p[1])+2)>>2))
			for i := 1; i < cw-1; i++ {
				v = int(p[i]) * 3
				o = append(o, uint8((v+int(p[i-1])+1)>>2), uint8((v+int(p[i+1])+2)>>2))
			}
			v = int(p[cw-1])
			o = append(o, uint8((v*3+int(p[cw-2])+1)>>2), uint8(v))
			out = append(out, o)
			continue
		}
		for v := 0; v < 2; v++ {
			p0, p1, bias := in[r], ctx(r+1), 2
			if v == 0 {
				p1, bias = ctx(r-1), 1
			}
			o := make([]uint8, 0, hf*cw)
			if hf == 1 { // h1v2_fancy_upsample
				for i := 0; i < cw; i++ {
					o = append(o, uint8((int(p0[i])*3+int(p1[i])+bias)>>2))
				}
				out = append(out, o)
				continue
			}
			// h2v2_fancy_upsample
			sum := func(i int) int { return int(p0[i])*3 + int(p1[i]) }
			this, next := sum(0), sum(1)
			o = append(o, uint8((this*4+8)>>4), uint8((this*3+next+7)>>4))
			last := this
			this = next
			for i := 2; i < cw; i++ {
				next = sum(i)
				o = append(o, uint8((this*3+last+8)>>4), uint8((this*3+next+7)>>4))
				last, this = this, next
			}
			o = append(o, uint8((this*3+last+8)>>4), uint8((this*4+7)>>4))
			out = append(out, o)
		}
	}
	return out
}

func TestChromaUpsamplerReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ratios := []struct {
		r      image.YCbCrSubsampleRatio
		hf, vf int
	}{
		{image.YCbCrSubsampleRatio422, 2, 1},
		{image.YCbCrSubsampleRatio440, 1, 2},
		{image.YCbCrSubsampleRatio420, 2, 2},
	}
	for _, rt := range ratios {
		for w := 1; w <= 19; w++ {
			for h := 1; h <= 9; h++ {
				m := image.NewYCbCr(image.Rect(0, 0, w, h), rt.r)
				for i := range m.Cb {
					m.Cb[i], m.Cr[i] = uint8(rng.IntN(256)), uint8(rng.IntN(256))
				}
				u := newChromaUpsampler(m)
				cw, ch := (w+rt.hf-1)/rt.hf, (h+rt.vf-1)/rt.vf
				if fancy := rt.hf == 1 || cw > 2; fancy != (u.mode != upNearest) {
					t.Fatalf("%v %dx%d: mode %d", rt.r, w, h, u.mode)
				}
				for _, plane := range [][]uint8{m.Cb, m.Cr} {
					in := make([][]uint8, ch)
					for r := range in {
						in[r] = plane[r*m.CStride : r*m.CStride+cw]
					}
					var ref [][]uint8
					if u.mode != upNearest {
						ref = refUpsample(in, rt.hf, rt.vf)
					}
					got := make([]uint8, w)
					for y := 0; y < h; y++ {
						u.row(got, plane, y)
						for x := 0; x < w; x++ {
							want := plane[m.COffset(x, y)] // box filter
							if ref != nil {
								want = ref[y][x]
							}
							if got[x] != want {
								t.Fatalf("%v %dx%d: (%d,%d) = %d, want %d", rt.r, w, h, x, y, got[x], want)
							}
						}
					}
				}
			}
		}
	}
}

// TestChromaUpsamplerSubImage checks that sub-images (odd or negative
// origins, every ratio) convert without going out of range and that flat
// chroma stays flat.
func TestChromaUpsamplerSubImage(t *testing.T) {
	ratios := []image.YCbCrSubsampleRatio{
		image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420,
		image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410,
	}
	for _, r := range ratios {
		for _, rect := range []image.Rectangle{
			image.Rect(0, 0, 13, 7), image.Rect(1, 3, 12, 8), image.Rect(-3, -5, 6, 4),
		} {
			m := image.NewYCbCr(rect, r)
			for i := range m.Cb {
				m.Cb[i], m.Cr[i] = 77, 201
			}
			for _, sub := range []image.Rectangle{rect, image.Rect(rect.Min.X+1, rect.Min.Y+1, rect.Max.X-2, rect.Max.Y), image.Rect(rect.Min.X+3, rect.Min.Y+2, rect.Min.X+4, rect.Min.Y+3)} {
				s := m.SubImage(sub).(*image.YCbCr)
				w := sub.Dx()
				u := newChromaUpsampler(s)
				cb, cr := make([]uint8, w), make([]uint8, w)
				for y := sub.Min.Y; y < sub.Max.Y; y++ {
					u.row(cb, s.Cb, y)
					u.row(cr, s.Cr, y)
					for x := range cb {
						if cb[x] != 77 || cr[x] != 201 {
							t.Fatalf("%v %v sub %v: (%d,%d) = %d,%d", r, rect, sub, x, y, cb[x], cr[x])
						}
					}
				}
				_ = toPixbuf(s, false)
			}
		}
	}
}
