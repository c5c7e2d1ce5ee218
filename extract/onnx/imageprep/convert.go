package imageprep

import (
	"image"
	"image/color"
)

// toPixbuf converts img to an interleaved 8-bit buffer with straight
// (un-premultiplied) colour, dropping alpha like PIL's convert("RGB"). With
// gray, the result has one channel holding PIL's convert("L") luma.
func toPixbuf(img image.Image, gray bool) pixbuf {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	rgb := make([]uint8, w*h*3)
	put := func(i int, r, g, bl uint8) {
		rgb[3*i], rgb[3*i+1], rgb[3*i+2] = r, g, bl
	}
	switch m := img.(type) {
	case *image.NRGBA:
		for y := 0; y < h; y++ {
			row := m.Pix[(y)*m.Stride:]
			for x := 0; x < w; x++ {
				put(y*w+x, row[4*x], row[4*x+1], row[4*x+2])
			}
		}
	case *image.RGBA:
		// PNG decodes opaque RGB as RGBA; only translucent pixels need
		// un-premultiplying.
		for y := 0; y < h; y++ {
			row := m.Pix[(y)*m.Stride:]
			for x := 0; x < w; x++ {
				q := row[4*x : 4*x+4 : 4*x+4]
				if q[3] == 0xff {
					put(y*w+x, q[0], q[1], q[2])
					continue
				}
				r, g, bl := straightRGB(color.RGBA{q[0], q[1], q[2], q[3]})
				put(y*w+x, r, g, bl)
			}
		}
	case *image.NRGBA64:
		for y := 0; y < h; y++ {
			row := m.Pix[(y)*m.Stride:]
			for x := 0; x < w; x++ {
				// High byte, as PIL does when reading 16-bit RGB(A) PNGs.
				put(y*w+x, row[8*x], row[8*x+2], row[8*x+4])
			}
		}
	case *image.Gray:
		for y := 0; y < h; y++ {
			row := m.Pix[(y)*m.Stride:]
			for x := 0; x < w; x++ {
				v := row[x]
				put(y*w+x, v, v, v)
			}
		}
	case *image.Gray16:
		for y := 0; y < h; y++ {
			row := m.Pix[(y)*m.Stride:]
			for x := 0; x < w; x++ {
				v := row[2*x]
				put(y*w+x, v, v, v)
			}
		}
	case *image.Paletted:
		var pal [256][3]uint8
		for i, c := range m.Palette {
			if i >= 256 {
				break
			}
			r, g, bl := straightRGB(c)
			pal[i] = [3]uint8{r, g, bl}
		}
		// Out-of-range indices (possible in hand-built images) map to black,
		// which is what the zero palette entries above give.
		for y := 0; y < h; y++ {
			row := m.Pix[(y)*m.Stride:]
			for x := 0; x < w; x++ {
				p := pal[row[x]]
				put(y*w+x, p[0], p[1], p[2])
			}
		}
	case *image.YCbCr:
		ycbcrToRGB(m, w, h, rgb)
	case *image.NYCbCrA:
		ycbcrToRGB(&m.YCbCr, w, h, rgb)
	case *image.CMYK:
		for y := 0; y < h; y++ {
			row := m.Pix[(y)*m.Stride:]
			for x := 0; x < w; x++ {
				c, mm, yy, k := row[4*x], row[4*x+1], row[4*x+2], row[4*x+3]
				nk := 255 - int(k)
				put(y*w+x, cmykChan(c, nk), cmykChan(mm, nk), cmykChan(yy, nk))
			}
		}
	default:
		i := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl := straightRGB(img.At(x, y))
				put(i, r, g, bl)
				i++
			}
		}
	}
	if !gray {
		return pixbuf{w: w, h: h, nc: 3, pix: rgb}
	}
	l := make([]uint8, w*h)
	for i := range l {
		l[i] = luma(rgb[3*i], rgb[3*i+1], rgb[3*i+2])
	}
	return pixbuf{w: w, h: h, nc: 1, pix: l}
}

// luma is PIL's RGB → L conversion (ITU-R 601-2, 16-bit fixed point).
func luma(r, g, b uint8) uint8 {
	return uint8((uint32(r)*19595 + uint32(g)*38470 + uint32(b)*7471 + 0x8000) >> 16)
}

// cmykChan is Pillow's cmyk2rgb for one channel: nk − c·nk/255 with
// Pillow's MULDIV255 rounding.
func cmykChan(c uint8, nk int) uint8 {
	t := int(c)*nk + 128
	v := nk - ((t>>8)+t)>>8
	if v < 0 {
		return 0
	}
	return uint8(v)
}

// straightRGB returns the un-premultiplied 8-bit colour channels of c.
func straightRGB(c color.Color) (r, g, b uint8) {
	switch c := c.(type) {
	case color.NRGBA:
		return c.R, c.G, c.B
	case color.NRGBA64:
		return uint8(c.R >> 8), uint8(c.G >> 8), uint8(c.B >> 8)
	case color.RGBA:
		if c.A == 0xff {
			return c.R, c.G, c.B
		}
	case color.Gray:
		return c.Y, c.Y, c.Y
	case color.Gray16:
		v := uint8(c.Y >> 8)
		return v, v, v
	}
	n := color.NRGBA64Model.Convert(c).(color.NRGBA64)
	return uint8(n.R >> 8), uint8(n.G >> 8), uint8(n.B >> 8)
}

// libjpeg's jdcolor.c YCbCr → RGB tables (SCALEBITS = 16), which PIL's
// JPEG decoder (libjpeg / libjpeg-turbo) uses.
var (
	crR, cbB [256]int32
	crG, cbG [256]int32
)

func init() {
	const scaleBits = 16
	const oneHalf = 1 << (scaleBits - 1)
	fix := func(x float64) int32 { return int32(x*(1<<scaleBits) + 0.5) }
	for i := 0; i < 256; i++ {
		x := int32(i - 128)
		crR[i] = (fix(1.40200)*x + oneHalf) >> scaleBits
		cbB[i] = (fix(1.77200)*x + oneHalf) >> scaleBits
		crG[i] = -fix(0.71414) * x
		cbG[i] = -fix(0.34414)*x + oneHalf
	}
}

func clamp255(v int32) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// ycbcrToRGB converts full-range (JFIF) YCbCr with libjpeg's arithmetic,
// after upsampling subsampled chroma like libjpeg-turbo (see upsample.go).
func ycbcrToRGB(m *image.YCbCr, w, h int, rgb []uint8) {
	u := newChromaUpsampler(m)
	cbRow, crRow := make([]uint8, w), make([]uint8, w)
	b := m.Rect
	i := 0
	for y := b.Min.Y; y < b.Min.Y+h; y++ {
		u.row(cbRow, m.Cb, y)
		u.row(crRow, m.Cr, y)
		yo := m.YOffset(b.Min.X, y)
		for x, yv := range m.Y[yo : yo+w] {
			yy := int32(yv)
			cb, cr := cbRow[x], crRow[x]
			rgb[3*i] = clamp255(yy + crR[cr])
			rgb[3*i+1] = clamp255(yy + (cbG[cb]+crG[cr])>>16)
			rgb[3*i+2] = clamp255(yy + cbB[cb])
			i++
		}
	}
}
