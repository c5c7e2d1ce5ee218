package imageprep

import (
	"fmt"
	"math"
)

// This file is an independent Go implementation of the algorithm of Pillow's
// ImagingResample (libImaging/Resample.c) for 8-bit images: two separable
// convolution passes (horizontal first, then vertical), filter support
// widened by the scale factor when downscaling (antialiasing), coefficients
// normalised to sum 1 and then quantised to fixed point with
// precisionBits = 32-8-2 fractional bits, accumulation in 32-bit integers
// starting from one half, and clipping of (acc >> precisionBits) to 0..255.
//
// Floating-point products are wrapped in explicit float64 conversions so that
// the Go compiler cannot fuse them into FMA instructions: Pillow's x86-64
// build evaluates every operation with separate IEEE double rounding, and the
// fixed-point coefficients depend on those last bits.

// Pillow's resampling filter identifiers, as used by Hugging Face's
// "resample" field (PIL.Image.Resampling).
const (
	ResampleBilinear = 2
	ResampleBicubic  = 3
)

const precisionBits = 32 - 8 - 2

type resampleFilter struct {
	name    string
	support float64
	eval    func(x float64) float64
}

func bilinearFilter(x float64) float64 {
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return 1 - x
	}
	return 0
}

// bicubicFilter is the Keys cubic convolution kernel with a = -0.5, written
// with the same operation order as Pillow's bicubic_filter.
func bicubicFilter(x float64) float64 {
	const a = -0.5
	if x < 0 {
		x = -x
	}
	if x < 1 {
		p := float64(float64(a+2)*x) - (a + 3)
		return float64(float64(p*x)*x) + 1
	}
	if x < 2 {
		p := float64((x-5)*x) + 8
		p = float64(p*x) - 4
		return float64(p * a)
	}
	return 0
}

var (
	filterBilinear = resampleFilter{name: "bilinear", support: 1, eval: bilinearFilter}
	filterBicubic  = resampleFilter{name: "bicubic", support: 2, eval: bicubicFilter}
)

func filterFor(resample int) (resampleFilter, error) {
	switch resample {
	case ResampleBilinear:
		return filterBilinear, nil
	case ResampleBicubic:
		return filterBicubic, nil
	}
	return resampleFilter{}, fmt.Errorf("unsupported resample filter %d (supported: 2 = bilinear, 3 = bicubic)", resample)
}

// coeffs holds, for each output position, the first contributing input index,
// the number of contributing inputs, and ksize fixed-point weights.
type coeffs struct {
	ksize  int
	bounds []int // 2 per output: xmin, count
	k      []int32
}

// precomputeCoeffs mirrors Pillow's precompute_coeffs + normalize_coeffs_8bpc
// for the full-image box (in0 = 0, in1 = inSize).
func precomputeCoeffs(inSize, outSize int, f resampleFilter) coeffs {
	scale := float64(inSize) / float64(outSize)
	filterscale := scale
	if filterscale < 1 {
		filterscale = 1
	}
	support := float64(f.support * filterscale)
	ksize := int(math.Ceil(support))*2 + 1
	c := coeffs{
		ksize:  ksize,
		bounds: make([]int, outSize*2),
		k:      make([]int32, outSize*ksize),
	}
	w := make([]float64, ksize)
	ss := 1 / filterscale
	for xx := 0; xx < outSize; xx++ {
		center := 0 + float64((float64(xx)+0.5)*scale)
		xmin := int(center - support + 0.5)
		if xmin < 0 {
			xmin = 0
		}
		xmax := int(center + support + 0.5)
		if xmax > inSize {
			xmax = inSize
		}
		xmax -= xmin
		ww := 0.0
		for x := 0; x < xmax; x++ {
			v := f.eval(float64((float64(x+xmin) - center + 0.5) * ss))
			w[x] = v
			ww += v
		}
		kk := c.k[xx*ksize : (xx+1)*ksize]
		for x := 0; x < xmax; x++ {
			v := w[x]
			if ww != 0 {
				v /= ww
			}
			p := float64(v * (1 << precisionBits))
			if v < 0 {
				kk[x] = int32(-0.5 + p)
			} else {
				kk[x] = int32(0.5 + p)
			}
		}
		c.bounds[2*xx] = xmin
		c.bounds[2*xx+1] = xmax
	}
	return c
}

func clip8(acc int32) uint8 {
	v := acc >> precisionBits
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// pixbuf is an interleaved 8-bit image with nc channels.
type pixbuf struct {
	w, h, nc int
	pix      []uint8
}

// resize resamples src to outW×outH with Pillow's algorithm. Like Pillow, a
// pass whose size does not change is skipped, and a no-op resize copies.
func resize(src pixbuf, outW, outH int, f resampleFilter) pixbuf {
	needH := outW != src.w
	needV := outH != src.h
	if !needH && !needV {
		out := src
		out.pix = append([]uint8(nil), src.pix...)
		return out
	}
	ch := precomputeCoeffs(src.w, outW, f)
	cv := precomputeCoeffs(src.h, outH, f)
	cur := src
	if needH {
		// Only the rows the vertical pass will read are computed, as in Pillow.
		first := cv.bounds[0]
		last := cv.bounds[2*outH-2] + cv.bounds[2*outH-1]
		if !needV {
			first, last = 0, src.h
		}
		cur = resampleHorizontal(src, ch, outW, first, last)
		if needV {
			for i := 0; i < outH; i++ {
				cv.bounds[2*i] -= first
			}
		}
	}
	if needV {
		cur = resampleVertical(cur, cv, outH)
	}
	return cur
}

func resampleHorizontal(src pixbuf, c coeffs, outW, y0, y1 int) pixbuf {
	nc := src.nc
	out := pixbuf{w: outW, h: y1 - y0, nc: nc, pix: make([]uint8, outW*(y1-y0)*nc)}
	const half = 1 << (precisionBits - 1)
	for y := y0; y < y1; y++ {
		row := src.pix[y*src.w*nc : (y+1)*src.w*nc]
		orow := out.pix[(y-y0)*outW*nc : (y-y0+1)*outW*nc]
		for xx := 0; xx < outW; xx++ {
			xmin, n := c.bounds[2*xx], c.bounds[2*xx+1]
			k := c.k[xx*c.ksize : xx*c.ksize+n]
			// The common channel counts get straight-line loops; the
			// arithmetic (and so the result) is the same as the general one.
			switch nc {
			case 3:
				p := row[xmin*3 : (xmin+n)*3]
				r, g, b := int32(half), int32(half), int32(half)
				for x, kx := range k {
					q := p[3*x : 3*x+3 : 3*x+3]
					r += int32(q[0]) * kx
					g += int32(q[1]) * kx
					b += int32(q[2]) * kx
				}
				o := orow[3*xx : 3*xx+3 : 3*xx+3]
				o[0], o[1], o[2] = clip8(r), clip8(g), clip8(b)
			case 1:
				p := row[xmin : xmin+n]
				acc := int32(half)
				for x, kx := range k {
					acc += int32(p[x]) * kx
				}
				orow[xx] = clip8(acc)
			default:
				var acc [4]int32
				for ci := 0; ci < nc; ci++ {
					acc[ci] = half
				}
				p := row[xmin*nc : (xmin+n)*nc]
				for x, kx := range k {
					for ci := 0; ci < nc; ci++ {
						acc[ci] += int32(p[x*nc+ci]) * kx
					}
				}
				for ci := 0; ci < nc; ci++ {
					orow[xx*nc+ci] = clip8(acc[ci])
				}
			}
		}
	}
	return out
}

// resampleVertical accumulates whole rows tap by tap, so every inner loop
// runs along contiguous memory.
func resampleVertical(src pixbuf, c coeffs, outH int) pixbuf {
	nc := src.nc
	stride := src.w * nc
	out := pixbuf{w: src.w, h: outH, nc: nc, pix: make([]uint8, stride*outH)}
	acc := make([]int32, stride)
	for yy := 0; yy < outH; yy++ {
		ymin, n := c.bounds[2*yy], c.bounds[2*yy+1]
		k := c.k[yy*c.ksize : yy*c.ksize+n]
		for i := range acc {
			acc[i] = 1 << (precisionBits - 1)
		}
		for y, ky := range k {
			in := src.pix[(ymin+y)*stride : (ymin+y+1)*stride]
			in = in[:len(acc)]
			for i, v := range in {
				acc[i] += int32(v) * ky
			}
		}
		orow := out.pix[yy*stride : (yy+1)*stride]
		for i, a := range acc {
			orow[i] = clip8(a)
		}
	}
	return out
}
