package imageprep

import "image"

// Lossy WebP (VP8) colour conversion as libwebp's default decoder does it,
// which is what PIL uses: WebPDecode / WebPAnimDecoder with default options
// (no_fancy_upsampling = 0, no scaling) emit RGB through EmitFancyRGB
// (src/dec/io_dec.c), which upsamples the 4:2:0 chroma with
// UpsampleRgbLinePair (src/dsp/upsampling.c) and converts each pixel with
// VP8YuvToRgb (src/dsp/yuv.h).
//
// UpsampleRgbLinePair interpolates the chroma of every pixel from the 2×2
// chroma samples around it:
//
//	(9·near + 3·nearRowFarColumn + 3·farRowNearColumn + far + 8) >> 4
//
// where "near" is the sample the pixel belongs to (column x>>1, row y>>1)
// and the far column (row) is the neighbouring one on the side of the pixel
// within its 2×2 block: x−1's column for even x, x+1's for odd x (likewise
// rows). libwebp evaluates this on u | v<<16 packed in 32 bits, as
// (((a + 3b + 3c + d + 8) >> 3) + a) >> 1, which is the same number
// (floor(floor(s/8)/2) = floor(s/16); the lanes cannot carry into each
// other). Its edge cases reduce to the same formula with the far sample
// clamped to the plane:
//
//   - the first column, and the last one when the width is even, use
//     (3·near + farRow + 2) >> 2, which is the formula with the far column
//     equal to the near one;
//   - EmitFancyRGB runs the first image row, and the last one when the
//     height is even, through the line-pair function with the same chroma
//     row as "top" and "current", i.e. the far row equal to the near one;
//     every other row is one half of a pair of rows (2k−1, 2k) between
//     chroma rows k−1 and k, the odd row nearer to k−1 and the even row
//     nearer to k. With an odd height the last row is the bottom of a pair.
//
// The chroma plane is ceil(width/2) × ceil(height/2) samples, like VP8's
// (Go's decoder stores whole macroblocks; the padding is ignored). Unlike
// libjpeg-turbo, libwebp interpolates at every size (a single chroma column
// or row simply clamps to itself) and always rounds with +8.
//
// libwebp only samples chroma at the nearest position (EmitSampledRGB) when
// fancy upsampling is switched off or the decoder scales the picture, which
// PIL never asks for. Nearest sampling is kept here only for image.YCbCr
// values the WebP decoder never returns (a ratio other than 4:2:0 or a
// Rect not at the origin), where it is the plain sampling of COffset.

// webpClip8 and webpMultHi reproduce libwebp's VP8YuvToRgb (src/dsp/yuv.h),
// limited-range BT.601 with 14-bit coefficients.
func webpClip8(v int) uint8 {
	const mask = (256 << 6) - 1
	if v&^mask == 0 {
		return uint8(v >> 6)
	}
	if v < 0 {
		return 0
	}
	return 255
}

func webpMultHi(v, coeff int) int { return (v * coeff) >> 8 }

// webpYUVToRGB is VP8YuvToRgb.
func webpYUVToRGB(y, u, v uint8, dst []uint8) {
	yy := webpMultHi(int(y), 19077)
	dst[0] = webpClip8(yy + webpMultHi(int(v), 26149) - 14234)
	dst[1] = webpClip8(yy - webpMultHi(int(u), 6419) - webpMultHi(int(v), 13320) + 8708)
	dst[2] = webpClip8(yy + webpMultHi(int(u), 33050) - 17685)
}

// webpToNRGBA converts a decoded lossy WebP frame to straight RGBA (alpha
// kept from a when non-nil) with libwebp's fancy chroma upsampling and
// colour arithmetic.
func webpToNRGBA(m *image.YCbCr, a *image.NYCbCrA) *image.NRGBA {
	b := m.Rect
	out := image.NewNRGBA(b)
	if b.Empty() {
		return out
	}
	if !webpFancyOK(m) {
		webpNearest(m, out)
	} else {
		webpFancy(m, out)
	}
	if a != nil {
		for y := b.Min.Y; y < b.Max.Y; y++ {
			ao, o := a.AOffset(b.Min.X, y), out.PixOffset(b.Min.X, y)
			for x, av := range a.A[ao : ao+b.Dx()] {
				out.Pix[o+4*x+3] = av
			}
		}
	}
	return out
}

// webpFancyOK reports whether m has the layout the VP8 decoder produces:
// 4:2:0 with Rect at the origin and planes covering it.
func webpFancyOK(m *image.YCbCr) bool {
	b := m.Rect
	if m.SubsampleRatio != image.YCbCrSubsampleRatio420 || b.Min != (image.Point{}) {
		return false
	}
	w, h := b.Dx(), b.Dy()
	cw, ch := (w+1)/2, (h+1)/2
	return m.YStride >= w && m.CStride >= cw &&
		len(m.Y) >= (h-1)*m.YStride+w &&
		len(m.Cb) >= (ch-1)*m.CStride+cw && len(m.Cr) >= (ch-1)*m.CStride+cw
}

// webpFancy converts m (see webpFancyOK) with libwebp's fancy upsampling.
func webpFancy(m *image.YCbCr, out *image.NRGBA) {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	cw, ch := (w+1)/2, (h+1)/2
	plane := func(p []uint8, r int) []uint8 {
		r = min(max(r, 0), ch-1)
		return p[r*m.CStride : r*m.CStride+cw]
	}
	uRow, vRow := make([]uint8, w), make([]uint8, w)
	for y := range h {
		near, far := y>>1, y>>1-1
		if y&1 == 1 {
			far = y>>1 + 1
		}
		webpUpsampleRow(uRow, plane(m.Cb, near), plane(m.Cb, far))
		webpUpsampleRow(vRow, plane(m.Cr, near), plane(m.Cr, far))
		yRow := m.Y[y*m.YStride : y*m.YStride+w]
		dst := out.Pix[y*out.Stride : y*out.Stride+4*w]
		for x, yv := range yRow {
			webpYUVToRGB(yv, uRow[x], vRow[x], dst[4*x:4*x+3])
			dst[4*x+3] = 0xff
		}
	}
}

// webpUpsampleRow writes one row of upsampled chroma to dst from the chroma
// row the image row belongs to (near) and its neighbouring row on the side
// of the image row (far, equal to near on the first row and on the last row
// of an even height).
func webpUpsampleRow(dst, near, far []uint8) {
	last := len(near) - 1
	for x := range dst {
		c := x >> 1
		c2 := c - 1
		if x&1 == 1 {
			c2 = c + 1
		}
		c2 = min(max(c2, 0), last)
		s := 9*int(near[c]) + 3*int(near[c2]) + 3*int(far[c]) + int(far[c2]) + 8
		dst[x] = uint8(s >> 4)
	}
}

// webpNearest converts m with chroma sampled at COffset (no upsampling).
func webpNearest(m *image.YCbCr, out *image.NRGBA) {
	b := m.Rect
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			ci := m.COffset(x, y)
			o := out.PixOffset(x, y)
			webpYUVToRGB(m.Y[m.YOffset(x, y)], m.Cb[ci], m.Cr[ci], out.Pix[o:o+3])
			out.Pix[o+3] = 0xff
		}
	}
}
