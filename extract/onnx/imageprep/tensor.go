package imageprep

import (
	"errors"
	"fmt"
	"image"
)

// Tensor runs the pipeline on img and returns a C×H×W float32 tensor
// (channel-major, C = c.Channels()) with its height and width.
func (c Config) Tensor(img image.Image) (data []float32, h, w int, err error) {
	if img == nil {
		return nil, 0, 0, errors.New("imageprep: nil image")
	}
	if err := c.validate(); err != nil {
		return nil, 0, 0, err
	}
	b := img.Bounds()
	if b.Empty() {
		return nil, 0, 0, fmt.Errorf("imageprep: empty image (%dx%d)", b.Dx(), b.Dy())
	}
	if b.Dx() > MaxPixels || b.Dy() > MaxPixels || b.Dx()*b.Dy() > MaxPixels {
		return nil, 0, 0, fmt.Errorf("imageprep: %w: %dx%d exceeds %d pixels", ErrTooLarge, b.Dx(), b.Dy(), MaxPixels)
	}
	buf := toPixbuf(img, c.DoConvertGrayscale)
	if c.DoResize {
		outH, outW := c.resizeTarget(buf.h, buf.w)
		if outH*outW > MaxPixels {
			return nil, 0, 0, fmt.Errorf("imageprep: %w: resizing %dx%d gives %dx%d, more than %d pixels", ErrTooLarge, buf.w, buf.h, outW, outH, MaxPixels)
		}
		f, err := filterFor(c.Resample)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("imageprep: field resample: %w", err)
		}
		buf = resize(buf, outW, outH, f)
	}
	if c.DoCenterCrop {
		buf = centerCrop(buf, c.CropHeight, c.CropWidth)
	}
	return c.toFloat(buf), buf.h, buf.w, nil
}

// resizeTarget returns the (height, width) the image is resized to. For
// shortest_edge S the long side is floor(long·S/short), computed exactly in
// integers; this equals Python's int(S*long/short) in transformers'
// get_resize_output_image_size for all sizes below 2^53.
func (c Config) resizeTarget(h, w int) (int, int) {
	s := c.Size.ShortestEdge
	if s == 0 {
		return c.Size.Height, c.Size.Width
	}
	if w <= h {
		return s * h / w, s
	}
	return s, s * w / h
}

// centerCrop reproduces transformers' image_transforms.center_crop on the
// uint8 image: per axis, when the image is at least as large as the crop
// the window starts at floor((size − crop)/2); when it is smaller the image
// is placed at offset ceil((crop − size)/2) inside a zero-filled crop.
func centerCrop(src pixbuf, ch, cw int) pixbuf {
	if src.h == ch && src.w == cw {
		return src
	}
	nc := src.nc
	out := pixbuf{w: cw, h: ch, nc: nc, pix: make([]uint8, cw*ch*nc)}
	// src offset (>= 0) or destination offset (>= 0) per axis.
	srcY, dstY, n := cropAxis(src.h, ch)
	srcX, dstX, m := cropAxis(src.w, cw)
	for y := 0; y < n; y++ {
		si := ((srcY+y)*src.w + srcX) * nc
		di := ((dstY+y)*cw + dstX) * nc
		copy(out.pix[di:di+m*nc], src.pix[si:si+m*nc])
	}
	return out
}

// cropAxis returns the source start, destination start and length of the
// copied span along one axis.
func cropAxis(size, crop int) (src, dst, n int) {
	if size >= crop {
		return (size - crop) / 2, 0, crop
	}
	return 0, (crop - size + 1) / 2, size
}

// toFloat produces the CHW float32 tensor. Rescaling follows transformers'
// rescale: the uint8 value times rescale_factor in float64, rounded once to
// float32. Normalisation follows transformers' normalize: mean and std are
// cast to float32 and (x − mean)/std is evaluated in float32.
func (c Config) toFloat(buf pixbuf) []float32 {
	nc, plane := buf.nc, buf.w*buf.h
	out := make([]float32, nc*plane)
	var lut [256]float32
	for ch := 0; ch < nc; ch++ {
		var mean, std float32
		if c.DoNormalize {
			mean, std = float32(pick(c.ImageMean, ch)), float32(pick(c.ImageStd, ch))
		}
		for v := range lut {
			x := float32(v)
			if c.DoRescale {
				x = float32(float64(v) * c.RescaleFactor)
			}
			if c.DoNormalize {
				x = float32(x-mean) / std
			}
			lut[v] = x
		}
		dst := out[ch*plane : (ch+1)*plane]
		for i := range dst {
			dst[i] = lut[buf.pix[i*nc+ch]]
		}
	}
	return out
}

func pick(v []float64, i int) float64 {
	if len(v) == 1 {
		return v[0]
	}
	return v[i]
}
