//go:build !cgo

package onnx

import (
	"context"
	"image"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// EncodeImages reports ErrNotCompiled.
func (*ImageEncoder) EncodeImages(context.Context, []image.Image, int) (matrix.Matrix, error) {
	return nil, ErrNotCompiled
}
