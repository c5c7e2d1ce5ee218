package cli

import (
	"context"
	"fmt"
	"image"
	"io"
	"os"

	"github.com/vertebrae-eval/vertebrae/demo"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/pretrained"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// demoCNNName is the demo row of the real CNN.
const demoCNNName = "mobilenet-v2-nsfwjs"

// demoDataHook, when set (by tests only), may shrink the demo data before
// the dataset is built, so the MobileNetV2 row's end-to-end test runs on a
// subset instead of encoding 6,000 images.
var demoDataHook func(*demo.Data)

// demoModelsDir resolves --models (shared with --text), else
// $VERTEBRAE_MODELS_DIR; "" when neither is set.
func demoModelsDir(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(ModelsDirEnv)
}

// demoCNNUnavailable is printed by `demo --onnx` when no models directory
// is known: the run goes on without the MobileNetV2 row.
func demoCNNUnavailable(stderr io.Writer) {
	fmt.Fprintf(stderr, "demo --onnx: no %s row: no prepared models directory. To add it: npm pack nsfwjs@4.4.0, "+
		"vertebrae models prepare DIR --from <dir of the tarball> --only %s, then pass --models DIR (or set %s=DIR)\n",
		demoCNNName, pretrained.NSFWJSMobileNetV2, ModelsDirEnv)
}

// demoCNNBackbone is the MobileNetV2 row of `demo --onnx`: the flatten_1
// features (1280-d) of nsfwjs@4.4.0's MobileNetV2, converted to ONNX by
// `vertebrae models prepare`, run as an onnx_image extractor. Each 28×28
// grey image goes through the directory's preprocessor_config.json like an
// image file would: grey replicated to RGB, bilinear resize to 224×224,
// ÷255. The files are checked against the models manifest first, and the
// recipe carries their SHA-256 (SPEC §9.5).
func demoCNNBackbone(ctx context.Context, modelsDir, library string) (evaluate.Backbone, func() error, error) {
	dir, err := pretrained.Verify(modelsDir, pretrained.NSFWJSMobileNetV2)
	if err != nil {
		return evaluate.Backbone{}, nil, fmt.Errorf("demo --onnx: %w", err)
	}
	enc, err := onnx.NewImageEncoder(ctx, onnx.ImageConfig{Name: demoCNNName, ModelDir: dir, BatchSize: 32, Runtime: onnx.Runtime{Library: library}})
	if err != nil {
		return evaluate.Backbone{}, nil, fmt.Errorf("demo --onnx: %w", err)
	}
	recipe := enc.Recipe()
	recipe["model"] = "nsfwjs@4.4.0 MobileNetV2 1.0 @224 (ImageNet backbone fine-tuned for NSFW detection), layer flatten_1"
	recipe["input"] = "28x28 uint8 grayscale, replicated to RGB, bilinear resize to 224x224, pixel/255"
	bb := evaluate.Backbone{
		Name: demoCNNName, Type: enc.Type(), Recipe: recipe,
		Encode: func(ctx context.Context, side string, items retrieval.Items) (matrix.Matrix, error) {
			im, ok := items.(imageItems)
			if !ok {
				return nil, fmt.Errorf("Extractor %s does not support retrieval modality %s", demoCNNName, items.Modality())
			}
			imgs := make([]image.Image, len(im))
			for i, px := range im {
				if len(px) != demo.ImageSide*demo.ImageSide {
					return nil, fmt.Errorf("%s image %d: %d bytes, want %d", side, i, len(px), demo.ImageSide*demo.ImageSide)
				}
				imgs[i] = &image.Gray{Pix: px, Stride: demo.ImageSide, Rect: image.Rect(0, 0, demo.ImageSide, demo.ImageSide)}
			}
			m, err := enc.EncodeImages(ctx, imgs, 0)
			if err != nil {
				return nil, fmt.Errorf("%s side: %w", side, err)
			}
			return m, nil
		},
	}
	return bb, enc.Close, nil
}
