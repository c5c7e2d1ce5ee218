package imageprep

import (
	"bytes"
	"image"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/image/webp"
)

// webpNearestRGB is the conversion used before libwebp's fancy upsampling
// was reproduced: libwebp's colour arithmetic with chroma sampled at
// COffset.
func webpNearestRGB(m *image.YCbCr) []uint8 {
	out := image.NewNRGBA(m.Rect)
	webpNearest(m, out)
	return toPixbuf(out, false).pix
}

// TestPILWebPParity decodes the lossy WebP fixtures written by
// internal/pilref/pilref.py with DecodeFile, converts them to RGB and
// requires PIL's decoded pixels (libwebp, fancy upsampling) exactly. Where
// fancy upsampling changes anything, the old nearest-chroma conversion of
// the same YUV must differ from PIL. The figures are logged with -v.
func TestPILWebPParity(t *testing.T) {
	cases := loadPILRGB(t, "testdata/pil_webp.bin", "PILWEB1\n")
	if len(cases) < 10 {
		t.Fatalf("fixture has only %d cases", len(cases))
	}
	for _, c := range cases {
		path := filepath.Join("testdata", "pil_webp", c.name)
		img, err := DecodeFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := img.(*image.NRGBA); !ok {
			t.Fatalf("%s: decoded as %T, want *image.NRGBA", c.name, img)
		}
		got := toPixbuf(img, false)
		if got.w != c.w || got.h != c.h || len(got.pix) != len(c.want) {
			t.Fatalf("%s: got %dx%d, want %dx%d", c.name, got.w, got.h, c.w, c.h)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := webp.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var m *image.YCbCr
		switch r := raw.(type) {
		case *image.YCbCr:
			m = r
		case *image.NYCbCrA:
			m = &r.YCbCr
		default:
			t.Fatalf("%s: webp.Decode returned %T", c.name, raw)
		}
		nearest := webpNearestRGB(m)
		s := compareRGB(got.pix, c.want)
		old := compareRGB(nearest, c.want)
		t.Logf("%-24s %s   nearest chroma: %s", c.name, s, old)
		if s.differing != 0 {
			t.Errorf("%s: %v; want exact equality with PIL", c.name, s)
		}
		if !bytes.Equal(nearest, got.pix) && old.differing == 0 {
			t.Errorf("%s: nearest chroma sampling matches PIL too; the fixture does not exercise upsampling", c.name)
		}
	}
}

// refWebPLinePair transcribes libwebp's UpsampleRgbLinePair_C chroma
// arithmetic (src/dsp/upsampling.c): u and v packed as u | v<<16, diagonal
// averages, first-column and even-width last-column special cases. It
// writes the upsampled u and v of the top row (and of the bottom row when
// botU is not nil) for a row of n pixels.
func refWebPLinePair(topU, topV, curU, curV []uint8, n int, tU, tV, botU, botV []uint8) {
	load := func(u, v uint8) uint32 { return uint32(u) | uint32(v)<<16 }
	put := func(du, dv []uint8, i int, uv uint32) {
		du[i], dv[i] = uint8(uv&0xff), uint8(uv>>16)
	}
	lastPair := (n - 1) >> 1
	tl := load(topU[0], topV[0])
	l := load(curU[0], curV[0])
	put(tU, tV, 0, (3*tl+l+0x00020002)>>2)
	if botU != nil {
		put(botU, botV, 0, (3*l+tl+0x00020002)>>2)
	}
	for x := 1; x <= lastPair; x++ {
		t := load(topU[x], topV[x])
		uv := load(curU[x], curV[x])
		avg := tl + t + l + uv + 0x00080008
		diag12 := (avg + 2*(t+l)) >> 3
		diag03 := (avg + 2*(tl+uv)) >> 3
		put(tU, tV, 2*x-1, (diag12+tl)>>1)
		put(tU, tV, 2*x, (diag03+t)>>1)
		if botU != nil {
			put(botU, botV, 2*x-1, (diag03+l)>>1)
			put(botU, botV, 2*x, (diag12+uv)>>1)
		}
		tl, l = t, uv
	}
	if n&1 == 0 {
		put(tU, tV, n-1, (3*tl+l+0x00020002)>>2)
		if botU != nil {
			put(botU, botV, n-1, (3*l+tl+0x00020002)>>2)
		}
	}
}

// refWebPFancy follows EmitFancyRGB's row pairing over a whole picture
// (first row alone with its chroma row as both top and current, then pairs
// of rows (2k−1, 2k) between chroma rows k−1 and k, then the last row alone
// when the height is even) and converts with VP8YuvToRgb.
func refWebPFancy(m *image.YCbCr) []uint8 {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	cu := func(r int) []uint8 { return m.Cb[r*m.CStride:] }
	cv := func(r int) []uint8 { return m.Cr[r*m.CStride:] }
	U, V := make([][]uint8, h), make([][]uint8, h)
	for y := range U {
		U[y], V[y] = make([]uint8, w), make([]uint8, w)
	}
	refWebPLinePair(cu(0), cv(0), cu(0), cv(0), w, U[0], V[0], nil, nil)
	r := 0
	y := 0
	for ; y+2 < h; y += 2 {
		refWebPLinePair(cu(r), cv(r), cu(r+1), cv(r+1), w, U[y+1], V[y+1], U[y+2], V[y+2])
		r++
	}
	if h&1 == 0 {
		refWebPLinePair(cu(r), cv(r), cu(r), cv(r), w, U[h-1], V[h-1], nil, nil)
	}
	rgb := make([]uint8, 3*w*h)
	for y := range h {
		for x := range w {
			i := y*w + x
			webpYUVToRGB(m.Y[y*m.YStride+x], U[y][x], V[y][x], rgb[3*i:3*i+3])
		}
	}
	return rgb
}

func TestWebPFancyReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for w := 1; w <= 19; w++ {
		for h := 1; h <= 9; h++ {
			// Planes as the VP8 decoder lays them out: whole macroblocks,
			// then a sub-image of the picture size.
			full := image.NewYCbCr(image.Rect(0, 0, (w+15)&^15, (h+15)&^15), image.YCbCrSubsampleRatio420)
			for i := range full.Y {
				full.Y[i] = uint8(rng.IntN(256))
			}
			for i := range full.Cb {
				full.Cb[i], full.Cr[i] = uint8(rng.IntN(256)), uint8(rng.IntN(256))
			}
			m := full.SubImage(image.Rect(0, 0, w, h)).(*image.YCbCr)
			want := refWebPFancy(m)
			got := toPixbuf(webpToNRGBA(m, nil), false).pix
			if !bytes.Equal(got, want) {
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%dx%d: value %d (pixel %d,%d) = %d, want %d", w, h, i, i/3%w, i/3/w, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestWebPNonDecoderLayouts checks that YCbCr images the VP8 decoder never
// returns (other ratios, offset rectangles) convert with nearest sampling
// and without going out of range, and that alpha is carried over.
func TestWebPNonDecoderLayouts(t *testing.T) {
	for _, r := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420} {
		for _, rect := range []image.Rectangle{image.Rect(0, 0, 5, 3), image.Rect(1, 3, 12, 8), image.Rect(-3, -5, 6, 4)} {
			m := image.NewNYCbCrA(rect, r)
			for i := range m.Cb {
				m.Cb[i], m.Cr[i] = 90, 170
			}
			for i := range m.Y {
				m.Y[i] = 100
			}
			for i := range m.A {
				m.A[i] = uint8(i)
			}
			out := webpToNRGBA(&m.YCbCr, m)
			var want [3]uint8
			webpYUVToRGB(100, 90, 170, want[:])
			for y := rect.Min.Y; y < rect.Max.Y; y++ {
				for x := rect.Min.X; x < rect.Max.X; x++ {
					o := out.PixOffset(x, y)
					if !bytes.Equal(out.Pix[o:o+3], want[:]) || out.Pix[o+3] != m.A[m.AOffset(x, y)] {
						t.Fatalf("%v %v: (%d,%d) = %v, want %v alpha %d", r, rect, x, y, out.Pix[o:o+4], want, m.A[m.AOffset(x, y)])
					}
				}
			}
		}
	}
}
