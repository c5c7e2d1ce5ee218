//go:build cgo

package onnx

import (
	"context"
	"fmt"
	"image"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// EncodeImages runs images the caller has already decoded (or built in
// memory) through the same preprocessing and model as Encode does for image
// files: row i of the result is what Encode returns for a file holding
// imgs[i]. firstRow numbers the rows in error messages.
func (e *ImageEncoder) EncodeImages(ctx context.Context, imgs []image.Image, firstRow int) (matrix.Matrix, error) {
	data, width, err := e.tower.encodeFrom(ctx, len(imgs), func(i int) (image.Image, string, error) {
		if imgs[i] == nil {
			return nil, "", fmt.Errorf("nil image")
		}
		return imgs[i], "", nil
	}, func(i int) int { return firstRow + i })
	if err != nil {
		return nil, fmt.Errorf("extractor %s: %w", e.name, err)
	}
	return matrix.NewDense32(len(imgs), width, data)
}
