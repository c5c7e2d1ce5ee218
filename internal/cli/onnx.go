package cli

import (
	"context"
	"strings"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/runspec"
)

// onnxExtractor builds an onnx_dual_encoder, onnx_text or onnx_image entry.
// library is --onnxruntime-lib; the entry's onnxruntime_library wins over it.
func onnxExtractor(ctx context.Context, e *runspec.Extractor, library string, closers *[]func() error) (extract.Extractor, error) {
	rt := onnx.Runtime{
		Library:           e.Str("onnxruntime_library"),
		IntraOpThreads:    e.Int("intra_op_threads", 0),
		ExecutionProvider: e.Str("execution_provider"),
	}
	if rt.Library == "" {
		rt.Library = library
	}
	text := onnx.TextOptions{MaxLength: e.Int("max_length", 0), Padding: e.Str("padding")}
	common := struct {
		dir, pooling, identity string
		normalize              bool
		batch                  int
	}{e.Str("model_dir"), e.Str("pooling"), e.Str("cache_identity"), e.Bool("normalize", false), e.Int("batch_size", 0)}
	var x interface {
		extract.Extractor
		Close() error
	}
	var err error
	switch e.Type {
	case runspec.TypeONNXDualEncoder:
		x, err = onnx.NewDualEncoder(ctx, onnx.DualEncoderConfig{
			Name: e.Name, ModelDir: common.dir, TextModel: e.Str("text_model"), VisionModel: e.Str("vision_model"),
			TextOutput: e.Str("text_output"), ImageOutput: e.Str("image_output"), Text: text,
			Pooling: common.pooling, Normalize: common.normalize, BatchSize: common.batch, Runtime: rt,
			CacheIdentity: common.identity,
		})
	case runspec.TypeONNXText:
		x, err = onnx.NewTextEncoder(ctx, onnx.TextConfig{
			Name: e.Name, ModelDir: common.dir, Text: text, Output: e.Str("output"),
			Pooling: common.pooling, Normalize: common.normalize, BatchSize: common.batch, Runtime: rt,
			CacheIdentity: common.identity,
		})
	case runspec.TypeONNXImage:
		x, err = onnx.NewImageEncoder(ctx, onnx.ImageConfig{
			Name: e.Name, ModelDir: common.dir, Output: e.Str("output"),
			Pooling: common.pooling, Normalize: common.normalize, BatchSize: common.batch, Runtime: rt,
			CacheIdentity: common.identity,
		})
	default:
		return nil, e.Errorf("type", "type %s is not an ONNX adapter", e.Type)
	}
	if err != nil {
		// Positioned at the entry's model_dir; the adapter's own
		// "extractor <name>: " prefix would repeat the one Errorf adds.
		return nil, e.Errorf("model_dir", "%s", strings.TrimPrefix(err.Error(), "extractor "+e.Name+": "))
	}
	*closers = append(*closers, x.Close)
	return x, nil
}
