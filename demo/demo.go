package demo

//go:generate go run ./internal/gen
//go:generate go run ./internal/mnistgen

import (
	_ "embed"
	"fmt"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/demo/internal/subset"
)

// ImageSide is the width and height of every image; images are
// ImageSide*ImageSide bytes, row-major, 0 = background.
const ImageSide = 28

const imageSize = ImageSide * ImageSide

//go:embed data/fashion-mnist-subset.bin
var subsetFile []byte

// classNames are the Fashion-MNIST label names, indexed by label.
var classNames = [subset.NumClasses]string{
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
}

// ClassNames returns the ten Fashion-MNIST class names in label order.
func ClassNames() []string { return append([]string(nil), classNames[:]...) }

// Data is the demo retrieval task. Images are 784 bytes each (28x28,
// row-major); labels are class names; IDs name the image's index in the
// original split ("test-17", "train-4999").
type Data struct {
	QueryImages, GalleryImages [][]byte
	QueryLabels, GalleryLabels []string
	QueryIDs, GalleryIDs       []string
}

// Load decodes the embedded subset. Each call returns fresh slices that the
// caller may modify.
func Load() (*Data, error) {
	s, err := subset.Decode(subsetFile)
	if err != nil {
		return nil, fmt.Errorf("demo: embedded data: %w", err)
	}
	if s.Rows != ImageSide || s.Cols != ImageSide {
		return nil, fmt.Errorf("demo: embedded data: %w: images are %dx%d, want %dx%d",
			subset.ErrFormat, s.Rows, s.Cols, ImageSide, ImageSide)
	}
	d := &Data{}
	d.QueryImages, d.QueryLabels, d.QueryIDs = split(s.QueryPixels, s.QueryLabels, "test-")
	d.GalleryImages, d.GalleryLabels, d.GalleryIDs = split(s.GalleryPixels, s.GalleryLabels, "train-")
	return d, nil
}

// split cuts pixels into per-image slices (capacity-limited so that an
// append to one cannot overwrite the next) and names labels and IDs.
func split(pixels, labels []byte, idPrefix string) (images [][]byte, names, ids []string) {
	n := len(labels)
	images = make([][]byte, n)
	names = make([]string, n)
	ids = make([]string, n)
	for i, l := range labels {
		images[i] = pixels[i*imageSize : (i+1)*imageSize : (i+1)*imageSize]
		names[i] = classNames[l] // subset.Decode checked l < NumClasses
		ids[i] = idPrefix + strconv.Itoa(i)
	}
	return images, names, ids
}

//go:embed data/mnist-8.onnx
var mnistModel []byte

// MNISTModel returns the ONNX model zoo's MNIST digit classifier (mnist-8,
// MIT; see data/LICENSE-mnist-onnx.txt): input Input3 float32[1,1,28,28]
// with pixel values 0..255, output Plus214_Output_0 float32[1,10] logits.
// `vertebrae demo --onnx` uses its logits as a fourth image backbone.
func MNISTModel() []byte { return append([]byte(nil), mnistModel...) }
