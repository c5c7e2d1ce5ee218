package demo

import "math"

// HOG parameters (Dalal & Triggs style, sized for 28x28 images).
const (
	hogBins      = 9 // unsigned orientation bins over [0, π)
	hogCell      = 4 // pixels per cell side
	hogCells     = ImageSide / hogCell
	hogBlock     = 2                       // cells per block side
	hogBlocks    = hogCells - hogBlock + 1 // stride 1 cell
	hogBlockDim  = hogBlock * hogBlock * hogBins
	hogDim       = hogBlocks * hogBlocks * hogBlockDim
	hogEps       = 1e-5 // keeps blank blocks at 0 instead of 0/0
	hogClip      = 0.2  // L2-Hys clipping threshold
	hogBinPerRad = hogBins / math.Pi
)

func hogRecipe(input string) map[string]any {
	return map[string]any{
		"version":           1,
		"input":             input,
		"gradient":          "central difference [-1, 0, 1] on pixel values; a component is 0 on its own image border",
		"magnitude_scale":   "1/255",
		"orientations":      hogBins,
		"orientation_range": "unsigned [0, pi), angle from +x (column) toward +y (row)",
		"bin_centers":       "k*pi/9 for k = 0..8 (bin 0 = horizontal gradient, i.e. vertical edges)",
		"bin_interpolation": "linear between the two nearest bin centres, circular",
		"pixels_per_cell":   hogCell,
		"cells":             map[string]any{"rows": hogCells, "cols": hogCells},
		"cells_per_block":   hogBlock,
		"block_stride":      1,
		"blocks":            map[string]any{"rows": hogBlocks, "cols": hogBlocks},
		"block_norm":        map[string]any{"method": "L2-Hys", "epsilon": hogEps, "clip": hogClip},
		"layout":            "block row, block col, cell row, cell col, orientation",
		"dim":               hogDim,
		"dtype":             "float32",
	}
}

// hog writes the hogDim-long descriptor of img to dst.
func hog(img []byte, dst []float32) {
	var hist [hogCells * hogCells * hogBins]float64
	atan := atanTable()
	for y := range ImageSide {
		for x := range ImageSide {
			var gx, gy int
			if x > 0 && x < ImageSide-1 {
				gx = int(img[y*ImageSide+x+1]) - int(img[y*ImageSide+x-1])
			}
			if y > 0 && y < ImageSide-1 {
				gy = int(img[(y+1)*ImageSide+x]) - int(img[(y-1)*ImageSide+x])
			}
			if gx == 0 && gy == 0 {
				continue // most of a Fashion-MNIST image is flat background
			}
			// gx*gx+gy*gy is an exact integer and Sqrt is correctly rounded.
			mag := math.Sqrt(float64(gx*gx+gy*gy)) / 255
			pos := float64(unsignedAngleFrom(atan, gx, gy) * hogBinPerRad)
			b := int(pos) // pos >= 0
			frac := pos - float64(b)
			b %= hogBins // pos may round up to exactly hogBins
			h := hist[((y/hogCell)*hogCells+x/hogCell)*hogBins:][:hogBins]
			h[b] += float64(mag * (1 - frac))
			h[(b+1)%hogBins] += float64(mag * frac)
		}
	}

	var v [hogBlockDim]float64
	for by := range hogBlocks {
		for bx := range hogBlocks {
			k := 0
			for cy := by; cy < by+hogBlock; cy++ {
				for cx := bx; cx < bx+hogBlock; cx++ {
					k += copy(v[k:], hist[(cy*hogCells+cx)*hogBins:][:hogBins])
				}
			}
			// L2-Hys: normalise, clip, renormalise. Values are >= 0.
			n := l2(v[:])
			for i := range v {
				v[i] = min(v[i]/n, hogClip)
			}
			n = l2(v[:])
			out := dst[(by*hogBlocks+bx)*hogBlockDim:][:hogBlockDim]
			for i, x := range v {
				out[i] = float32(x / n)
			}
		}
	}
}

// l2 returns sqrt(Σv² + ε²), summing in index order.
func l2(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x * x)
	}
	return math.Sqrt(s + hogEps*hogEps)
}

// unsignedAngle returns the orientation of the gradient (gx, gy) ≠ (0, 0)
// folded into [0, π]. It uses atanUnit rather than math.Atan2, whose
// polynomial the compiler may evaluate with fused multiply-adds on some
// architectures and so round differently from amd64.
func unsignedAngle(gx, gy int) float64 { return unsignedAngleFrom(atanTable(), gx, gy) }

// unsignedAngleFrom is unsignedAngle with the atanRatio table at hand.
func unsignedAngleFrom(atan *[1 << 16]float64, gx, gy int) float64 {
	if gy < 0 || (gy == 0 && gx < 0) {
		gx, gy = -gx, -gy // opposite gradients share an orientation
	}
	// Now gy >= 0, so the angle is in [0, π).
	ax, y := max(gx, -gx), gy
	if y <= ax {
		a := atan[y<<8|ax] // atanRatio(y, ax); ax > 0 here
		if gx > 0 {
			return a
		}
		return math.Pi - a
	}
	a := atan[ax<<8|y] // atanRatio(ax, y)
	if gx >= 0 {
		return math.Pi/2 - a
	}
	return math.Pi/2 + a
}

// atanUnit returns atan(t) for t in [0, 1], accurate to a few ulp, using
// only exactly rounded operations.
func atanUnit(t float64) float64 {
	const tanPi8 = 0.41421356237309504880 // √2 − 1
	if t <= tanPi8 {
		return atanSeries(t)
	}
	// atan(t) = π/4 + atan((t−1)/(t+1)) maps (tan(π/8), 1] into (−tan(π/8), 0].
	return math.Pi/4 + atanSeries((t-1)/(t+1))
}

// atanCoef[k] = (−1)^k / (2k+1), the Taylor coefficients of atan(u)/u.
// With |u| ≤ tan(π/8), u² ≤ 0.172 and the truncation error after 18 terms
// is below 0.172^18/37 ≈ 5e-16.
var atanCoef = func() (c [18]float64) {
	for k := range c {
		c[k] = 1 / float64(2*k+1)
		if k%2 == 1 {
			c[k] = -c[k]
		}
	}
	return c
}()

func atanSeries(u float64) float64 {
	z := float64(u * u)
	s := 0.0
	for k := len(atanCoef) - 1; k >= 0; k-- {
		s = atanCoef[k] + float64(z*s)
	}
	return float64(u * s)
}
