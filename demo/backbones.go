package demo

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Backbone is a frozen image descriptor. Embed maps each 28x28 image to one
// float32 row and is deterministic bit for bit on every platform: each image
// is computed independently, sums run in a fixed order, and every product is
// rounded by an explicit conversion so that no compiler may fuse it into a
// multiply-add (which arm64, ppc64 and s390x would otherwise do).
type Backbone struct {
	Name string
	Type string
	// Recipe records the parameters; values are JSON-compatible (strings,
	// numbers, bools, nested maps).
	Recipe map[string]any
	Embed  func(images [][]byte) (*matrix.Dense, error)
}

// ErrImageSize reports an image that is not ImageSide*ImageSide bytes.
var ErrImageSize = errors.New("demo: wrong image size")

const (
	rawDim  = imageSize
	poolWin = 4
	poolN   = ImageSide / poolWin // 7x7 pooled grid
	poolDim = poolN * poolN
)

// Backbones returns the three demo backbones in a fixed order: raw-pixels
// (784-d), avg-pool-4x4 (49-d, a blurred low-resolution view) and hog
// (1296-d gradient-orientation histograms). Each call returns fresh Recipe
// maps.
func Backbones() []Backbone {
	const input = "28x28 uint8 grayscale, row-major"
	return []Backbone{
		{
			Name: "raw-pixels",
			Type: "pixels",
			Recipe: map[string]any{
				"version": 1,
				"input":   input,
				"scale":   "pixel/255",
				"dim":     rawDim,
				"dtype":   "float32",
			},
			Embed: func(images [][]byte) (*matrix.Dense, error) {
				return embedAll(images, rawDim, rawPixels)
			},
		},
		{
			Name: "avg-pool-4x4",
			Type: "pooled-pixels",
			Recipe: map[string]any{
				"version": 1,
				"input":   input,
				"pool":    "mean",
				"window":  poolWin,
				"stride":  poolWin,
				"grid":    map[string]any{"rows": poolN, "cols": poolN},
				"scale":   "mean/255",
				"dim":     poolDim,
				"dtype":   "float32",
			},
			Embed: func(images [][]byte) (*matrix.Dense, error) {
				return embedAll(images, poolDim, avgPool)
			},
		},
		{
			Name:   "hog",
			Type:   "hog",
			Recipe: hogRecipe(input),
			Embed: func(images [][]byte) (*matrix.Dense, error) {
				return embedAll(images, hogDim, hog)
			},
		},
	}
}

// embedAll checks the images, then fills one dim-wide row per image.
// Images are split between goroutines in contiguous ranges; since rows do
// not interact, the result does not depend on scheduling.
func embedAll(images [][]byte, dim int, fn func(img []byte, dst []float32)) (*matrix.Dense, error) {
	for i, img := range images {
		if len(img) != imageSize {
			return nil, fmt.Errorf("%w: image %d has %d bytes, want %d", ErrImageSize, i, len(img), imageSize)
		}
	}
	out := make([]float32, len(images)*dim)
	parallel(len(images), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			fn(images[i], out[i*dim:(i+1)*dim])
		}
	})
	return matrix.NewDense32(len(images), dim, out)
}

// parallel calls fn on contiguous ranges covering [0, n), handed out to
// the workers in order as they finish the previous ones (image costs vary:
// fixed halves would leave one core idle at the end).
func parallel(n int, fn func(lo, hi int)) {
	const minChunk = 128 // below this, goroutines cost more than they save
	workers := min(runtime.GOMAXPROCS(0), n/minChunk)
	if workers <= 1 {
		fn(0, n)
		return
	}
	const chunk = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= n {
					return
				}
				fn(lo, min(lo+chunk, n))
			}
		})
	}
	wg.Wait()
}

// unit[v] is v/255 rounded to float32 (one correctly rounded division).
var unit = func() (t [256]float32) {
	for v := range t {
		t[v] = float32(v) / 255
	}
	return t
}()

func rawPixels(img []byte, dst []float32) {
	for j, p := range img {
		dst[j] = unit[p]
	}
}

func avgPool(img []byte, dst []float32) {
	for by := range poolN {
		for bx := range poolN {
			sum := 0 // exact integer sum: the mean is one rounding away
			for y := by * poolWin; y < (by+1)*poolWin; y++ {
				row := img[y*ImageSide+bx*poolWin:]
				for _, p := range row[:poolWin] {
					sum += int(p)
				}
			}
			dst[by*poolN+bx] = float32(sum) / (poolWin * poolWin * 255)
		}
	}
}
