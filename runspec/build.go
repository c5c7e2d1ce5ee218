package runspec

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/command"
	"github.com/vertebrae-eval/vertebrae/extract/hosted"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/formats/files"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// buildExtractor builds a run file's extractor (SPEC §9.4, buildBackbone)
// with its text_prefix, which is part of its recipe.
func buildExtractor(ctx context.Context, spec *Spec, e *Extractor, tables endpointTables, onnxLib string, closers *files.Closers) (extract.Extractor, error) {
	x, err := buildBackbone(ctx, spec, e, tables, onnxLib, closers)
	if err != nil {
		return nil, err
	}
	q, g := e.TextPrefix()
	return extract.WithTextPrefix(x, q, g), nil
}

func buildBackbone(ctx context.Context, spec *Spec, e *Extractor, tables endpointTables, onnxLib string, closers *files.Closers) (extract.Extractor, error) {
	switch e.Type {
	case TypePrecomputed:
		// The tables' digests come from the digest cache while their files
		// are unchanged (tableFiles.digest): the dataset's own files share
		// the entries of its endpoint digests.
		tf := tables.files
		if tf == nil {
			tf = newTableFiles(nil)
		}
		p := &extract.Precomputed{ExtractorName: e.Name, Query: tables.query, Gallery: tables.gallery, Digest: tf.digest}
		if path := e.Str("queries"); path != "" {
			tensor := e.Str("queries_tensor")
			snap := digestSnap(tf.cache, path, tensor)
			m, _, err := files.ReadEndpoint(ctx, path, tensor, "", closers)
			if err != nil {
				return nil, err
			}
			tf.add(m, snap)
			p.Query = m
		}
		if path := e.Str("gallery"); path != "" {
			tensor := e.Str("gallery_tensor")
			snap := digestSnap(tf.cache, path, tensor)
			m, _, err := files.ReadEndpoint(ctx, path, tensor, "", closers)
			if err != nil {
				return nil, err
			}
			tf.add(m, snap)
			p.Gallery = m
		}
		if p.Query == nil || p.Gallery == nil {
			return nil, e.Errorf("queries", "a precomputed extractor needs queries and gallery tables (options queries/gallery or dataset paths)")
		}
		// Its recipe carries the tables' digests: hashed here, where an
		// interrupt can stop it, rather than on the first Recipe call.
		if err := p.HashTables(ctx); err != nil {
			return nil, err
		}
		return p, nil
	case TypeOpenAI, TypeOllama, TypeTEI:
		// The per-text vector cache is reuse across runs, so it exists only
		// under an explicit cache_identity (SPEC §9.5); without one every
		// run asks the server, and a changed model gives its new numbers.
		cacheDir, identity := "", e.Str("cache_identity")
		if e.Cache && strings.TrimSpace(identity) != "" {
			cacheDir = filepath.Join(spec.Dir, ".vertebrae_cache", "hosted")
		}
		c, err := hosted.New(hosted.Config{
			Provider: e.Type, BaseURL: e.Str("base_url"), Model: e.Str("model"), Dimensions: e.Int("dimensions", 0),
			APIKeyEnv: e.Str("api_key_env"), Headers: e.StringMap("headers"), BatchSize: e.Int("batch_size", 0),
			Concurrency: e.Int("max_concurrency", 0), MaxRetries: maxRetries(e),
			BackoffBase: e.Duration("initial_backoff", 0), BackoffMax: e.Duration("max_backoff", 0),
			Timeout: e.Duration("request_timeout", 0), CacheDir: cacheDir, CacheIdentity: identity,
		})
		if err != nil {
			return nil, e.Errorf("base_url", "%v", err)
		}
		recipe := c.Recipe()
		return &extract.Func{
			ExtractorName: e.Name, ExtractorType: e.Type, Serves: "text", Streaming: true, RecipeValues: recipe,
			EncodeFunc: func(ctx context.Context, b extract.Batch) (matrix.Matrix, error) {
				texts, ok := b.Items.(retrieval.Texts)
				if !ok {
					return nil, fmt.Errorf("Extractor %s does not support retrieval modality %s", e.Name, b.Items.Modality())
				}
				return c.Embed(ctx, texts)
			},
		}, nil
	case TypeCommand:
		env := []string{}
		for k, v := range e.StringMap("env") {
			env = append(env, k+"="+v)
		}
		x, err := command.New(command.Config{
			Name: e.Name, Argv: e.Strings("command"), Dir: e.Str("dir"), Env: env,
			Modality: e.Str("modality"), Branches: e.StringMap("branches"), BatchSize: e.Int("batch_size", 0),
			Timeout: e.Duration("timeout", command.DefaultTimeout), BatchDependent: !e.Bool("streaming_safe", true),
			CacheIdentity: e.Str("cache_identity"), Persistent: e.Bool("persistent", false),
		})
		if err != nil {
			return nil, e.Errorf("command", "%v", err)
		}
		// A persistent worker still running when the command ends (an
		// error, an interrupt) is stopped: stdin closed, or killed at once
		// once ctx is done. The normal end is evaluate.Benchmark's Shutdown.
		closers.Add(func() error { return x.Shutdown(ctx) })
		return x.AsExtractor(), nil
	case TypeONNXDualEncoder, TypeONNXText, TypeONNXImage:
		return onnxExtractor(ctx, e, onnxLib, closers)
	}
	return nil, e.Errorf("type", "unknown extractor type %s", e.Type)
}

// maxRetries maps the run file's max_retries (0 = no retries) onto the
// client's convention (0 = default).
func maxRetries(e *Extractor) int {
	if _, set := e.Options["max_retries"]; !set {
		return 0
	}
	if n := e.Int("max_retries", 0); n > 0 {
		return n
	}
	return hosted.NoRetries
}

// onnxExtractor builds an onnx_dual_encoder, onnx_text or onnx_image entry.
// library is --onnxruntime-lib; the entry's onnxruntime_library wins over it.
func onnxExtractor(ctx context.Context, e *Extractor, library string, closers *files.Closers) (extract.Extractor, error) {
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
	case TypeONNXDualEncoder:
		x, err = onnx.NewDualEncoder(ctx, onnx.DualEncoderConfig{
			Name: e.Name, ModelDir: common.dir, TextModel: e.Str("text_model"), VisionModel: e.Str("vision_model"),
			TextOutput: e.Str("text_output"), ImageOutput: e.Str("image_output"), Text: text,
			Pooling: common.pooling, Normalize: common.normalize, BatchSize: common.batch, Runtime: rt,
			CacheIdentity: common.identity,
		})
	case TypeONNXText:
		x, err = onnx.NewTextEncoder(ctx, onnx.TextConfig{
			Name: e.Name, ModelDir: common.dir, Text: text, Output: e.Str("output"),
			Pooling: common.pooling, Normalize: common.normalize, BatchSize: common.batch, Runtime: rt,
			CacheIdentity: common.identity,
		})
	case TypeONNXImage:
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
	closers.Add(x.Close)
	return x, nil
}
