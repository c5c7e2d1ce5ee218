package imageprep

import "image"

// Chroma upsampling as libjpeg-turbo's decoder does it by default
// (jdsample.c with do_fancy_upsampling = TRUE, which PIL uses), chosen per
// subsampling ratio the way jinit_upsampler chooses:
//
//   - 4:2:2 (h2v1) and 4:2:0 (h2v2): the "fancy" triangle filter when the
//     chroma plane is more than 2 samples wide, plain replication otherwise;
//   - 4:4:0 (h1v2): the vertical triangle filter (h1v2_fancy_upsample);
//   - 4:1:1 and 4:1:0: replication (int_upsample), which is what nearest
//     sampling through image.YCbCr.COffset already gives.
//
// Each output sample is 3/4 of the nearer chroma sample plus 1/4 of the
// next nearer one per subsampled axis. Samples outside the chroma plane are
// the edge sample repeated: libjpeg's first/last column special cases, and
// the context rows jdmainct.c manufactures above the first and below the
// last row. The plane is ceil(width/h) × ceil(height/v) samples
// (libjpeg's downsampled_width/height); Go's decoder may store more (the
// padding of partial MCUs), which is ignored.
//
// Rounding follows libjpeg's ordered dither: h2v1 adds 1 to output columns
// whose further neighbour is on the left and 2 to those whose further
// neighbour is on the right before >>2, h2v2 adds 8 and 7 before >>4 (the
// vertical pass is exact: 3·near + far), and h1v2 adds 1 on rows whose
// further neighbour is above and 2 on rows whose further neighbour is below.

type upsampleMode uint8

const (
	upNearest upsampleMode = iota // replication, through COffset
	upH2V1                        // 4:2:2 fancy
	upH1V2                        // 4:4:0 fancy
	upH2V2                        // 4:2:0 fancy
)

// chromaUpsampler produces rows of full-resolution chroma for an
// image.YCbCr. Positions are taken relative to the subsampling grid of
// absolute coordinates, like image.YCbCr.COffset, so sub-images keep the
// grid; a sub-image's chroma plane is treated as if it were the whole plane.
type chromaUpsampler struct {
	m        *image.YCbCr
	mode     upsampleMode
	hf, vf   int // subsampling factors of the fancy modes
	cx0, cy0 int // chroma column and row of Rect.Min
	cw, ch   int // chroma plane size covering Rect
	base     int // offset of chroma sample (cx0, cy0)
	colsum   []int32
}

func newChromaUpsampler(m *image.YCbCr) *chromaUpsampler {
	u := &chromaUpsampler{m: m, mode: upNearest}
	r := m.Rect
	// Fancy upsampling relies on truncating division matching floor
	// division, i.e. non-negative coordinates (always the case for decoded
	// images). Other images keep nearest sampling.
	if r.Empty() || r.Min.X < 0 || r.Min.Y < 0 {
		return u
	}
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio422:
		u.mode, u.hf, u.vf = upH2V1, 2, 1
	case image.YCbCrSubsampleRatio440:
		u.mode, u.hf, u.vf = upH1V2, 1, 2
	case image.YCbCrSubsampleRatio420:
		u.mode, u.hf, u.vf = upH2V2, 2, 2
	default:
		// 4:4:4 needs no upsampling; 4:1:1 and 4:1:0 are replicated by
		// libjpeg too.
		return u
	}
	u.cx0, u.cy0 = r.Min.X/u.hf, r.Min.Y/u.vf
	u.cw = (r.Max.X-1)/u.hf - u.cx0 + 1
	u.ch = (r.Max.Y-1)/u.vf - u.cy0 + 1
	if u.hf == 2 && u.cw <= 2 {
		// jinit_upsampler uses the box filter when downsampled_width <= 2,
		// for h2v2 in both directions.
		u.mode = upNearest
		return u
	}
	u.base = m.COffset(r.Min.X, r.Min.Y)
	u.colsum = make([]int32, u.cw)
	return u
}

// row writes the upsampled chroma of image row y (absolute coordinate) of
// plane (m.Cb or m.Cr) to dst, one sample per pixel of Rect.
func (u *chromaUpsampler) row(dst, plane []uint8, y int) {
	m := u.m
	r := m.Rect
	if u.mode == upNearest {
		for x := r.Min.X; x < r.Max.X; x++ {
			dst[x-r.Min.X] = plane[m.COffset(x, y)]
		}
		return
	}
	clampRow := func(cy int) []uint8 {
		cy = min(max(cy, 0), u.ch-1)
		o := u.base + cy*m.CStride
		return plane[o : o+u.cw]
	}
	cy := y/u.vf - u.cy0
	near := clampRow(cy)
	if u.mode == upH2V1 {
		u.h2v1(dst, near)
		return
	}
	// Vertical pass for h1v2 and h2v2: the further row is the one above for
	// the first output row of a pair and the one below for the second.
	up := y%2 == 0
	var far []uint8
	if up {
		far = clampRow(cy - 1)
	} else {
		far = clampRow(cy + 1)
	}
	if u.mode == upH1V2 {
		bias := int32(2)
		if up {
			bias = 1
		}
		for i := range near {
			dst[i] = uint8((3*int32(near[i]) + int32(far[i]) + bias) >> 2)
		}
		return
	}
	cs := u.colsum
	for i := range cs {
		cs[i] = 3*int32(near[i]) + int32(far[i])
	}
	last := u.cw - 1
	for x := r.Min.X; x < r.Max.X; x++ {
		cx := x/2 - u.cx0
		this := 3 * cs[cx]
		var v int32
		if x%2 == 0 {
			v = (this + cs[max(cx-1, 0)] + 8) >> 4
		} else {
			v = (this + cs[min(cx+1, last)] + 7) >> 4
		}
		dst[x-r.Min.X] = uint8(v)
	}
}

// h2v1 is the horizontal triangle filter of h2v1_fancy_upsample.
func (u *chromaUpsampler) h2v1(dst, in []uint8) {
	r := u.m.Rect
	last := u.cw - 1
	for x := r.Min.X; x < r.Max.X; x++ {
		cx := x/2 - u.cx0
		this := 3 * int32(in[cx])
		var v int32
		if x%2 == 0 {
			v = (this + int32(in[max(cx-1, 0)]) + 1) >> 2
		} else {
			v = (this + int32(in[min(cx+1, last)]) + 2) >> 2
		}
		dst[x-r.Min.X] = uint8(v)
	}
}
