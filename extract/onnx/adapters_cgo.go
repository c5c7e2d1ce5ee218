//go:build cgo

package onnx

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/extract/onnx/imageprep"
	"github.com/vertebrae-eval/vertebrae/extract/onnx/tokenize"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// DualEncoder is an onnx_dual_encoder: a BranchEncoder with a text and an
// image tower. Close releases its sessions.
type DualEncoder struct {
	name   string
	text   *textTower
	image  *imageTower
	recipe map[string]any
	stream bool
}

var _ extract.BranchEncoder = (*DualEncoder)(nil)

// NewDualEncoder loads both towers of a CLIP, OpenCLIP, SigLIP or Hugging
// Face dual-encoder export.
func NewDualEncoder(ctx context.Context, cfg DualEncoderConfig) (*DualEncoder, error) {
	if err := checkCommon(cfg.Name, cfg.ModelDir, cfg.Text.Padding, cfg.Pooling, cfg.BatchSize, cfg.Runtime); err != nil {
		return nil, err
	}
	l, err := dualLayout(cfg)
	if err != nil {
		return nil, err
	}
	tok, maxLen, err := loadTokenizer(cfg.Name, l.tokenizer, l.config, cfg.Text.MaxLength)
	if err != nil {
		return nil, err
	}
	prep, err := l.loadPreprocessor()
	if err != nil {
		return nil, fmt.Errorf("extractor %s: %w", cfg.Name, err)
	}
	batch := batchOr(cfg.BatchSize)
	textSess, err := OpenSession(ctx, l.textModel, cfg.Runtime)
	if err != nil {
		return nil, fmt.Errorf("extractor %s: %w", cfg.Name, err)
	}
	visionSess, err := OpenSession(ctx, l.visionModel, cfg.Runtime)
	if err != nil {
		textSess.Close()
		return nil, fmt.Errorf("extractor %s: %w", cfg.Name, err)
	}
	d := &DualEncoder{name: cfg.Name, stream: cfg.Text.Padding != PadLongest}
	fail := func(err error) (*DualEncoder, error) {
		textSess.Close()
		visionSess.Close()
		return nil, fmt.Errorf("extractor %s: %w", cfg.Name, err)
	}
	if d.text, err = newTextTower(textSess, tok, maxLen, cfg.Text.MaxLength > 0, cfg.Text.Padding, cfg.TextOutput, cfg.Pooling, cfg.Normalize, batch,
		"text_embeds", "pooler_output"); err != nil {
		return fail(fmt.Errorf("%s: %w", l.textModel, err))
	}
	if d.image, err = newImageTower(visionSess, prep, cfg.ImageOutput, cfg.Pooling, cfg.Normalize, batch,
		"image_embeds", "pooler_output"); err != nil {
		return fail(fmt.Errorf("%s: %w", l.visionModel, err))
	}
	ids, err := identities(l.files())
	if err != nil {
		return fail(err)
	}
	d.recipe = recipe(cfg.Name, runTypeDual, cfg.Normalize, batch, cfg.Runtime, textSess, ids, cfg.CacheIdentity)
	d.recipe["layout"] = l.kind
	d.recipe["text"] = d.text.recipe()
	d.recipe["image"] = d.image.recipe()
	return d, nil
}

func (d *DualEncoder) Name() string           { return d.name }
func (d *DualEncoder) Type() string           { return runTypeDual }
func (d *DualEncoder) Recipe() map[string]any { return cloneMap(d.recipe) }
func (d *DualEncoder) StreamingSafe() bool    { return d.stream }

// Branches implements extract.BranchEncoder.
func (d *DualEncoder) Branches() map[string]string {
	return map[string]string{TextBranch: "text", ImageBranch: "image"}
}

// EncodeBranch implements extract.BranchEncoder.
func (d *DualEncoder) EncodeBranch(ctx context.Context, b extract.Batch, branch string) (matrix.Matrix, error) {
	switch branch {
	case TextBranch:
		return encodeTexts(ctx, d.name, d.text, b)
	case ImageBranch:
		return encodeImages(ctx, d.name, d.image, b)
	}
	return nil, fmt.Errorf("Extractor %s has no branch %q", d.name, branch)
}

// Close releases both sessions.
func (d *DualEncoder) Close() error {
	return errors.Join(d.text.sess.Close(), d.image.sess.Close())
}

// TextEncoder is an onnx_text extractor.
type TextEncoder struct {
	name   string
	tower  *textTower
	recipe map[string]any
	stream bool
}

var _ extract.Encoder = (*TextEncoder)(nil)

// NewTextEncoder loads a single-tower text model (model.onnx +
// tokenizer.json).
func NewTextEncoder(ctx context.Context, cfg TextConfig) (*TextEncoder, error) {
	if err := checkCommon(cfg.Name, cfg.ModelDir, cfg.Text.Padding, cfg.Pooling, cfg.BatchSize, cfg.Runtime); err != nil {
		return nil, err
	}
	model, err := requireFile(cfg.Name, cfg.ModelDir, "model.onnx", "", "model.onnx", filepath.Join("onnx", "model.onnx"))
	if err != nil {
		return nil, err
	}
	tokPath, err := requireFile(cfg.Name, cfg.ModelDir, "tokenizer.json", "", "tokenizer.json", USELiteVocabFile)
	if err != nil {
		return nil, err
	}
	configPath, _ := firstExisting(cfg.ModelDir, "config.json")
	tok, maxLen, err := loadTokenizer(cfg.Name, tokPath, configPath, cfg.Text.MaxLength)
	if err != nil {
		return nil, err
	}
	sess, err := OpenSession(ctx, model, cfg.Runtime)
	if err != nil {
		return nil, fmt.Errorf("extractor %s: %w", cfg.Name, err)
	}
	// sentence_embedding when the model has it, else last_hidden_state; a
	// 3-D output is mean-pooled over the attention mask unless told otherwise.
	pooling, output := cfg.Pooling, cfg.Output
	if output == "" {
		output = "last_hidden_state"
		if _, ok := findInfo(sess.Outputs(), "sentence_embedding"); ok {
			output = "sentence_embedding"
		}
	}
	if out, ok := findInfo(sess.Outputs(), output); ok && len(out.Shape) == 3 && pooling == PoolNone {
		pooling = PoolMean
	}
	batch := batchOr(cfg.BatchSize)
	tower, err := newTextTower(sess, tok, maxLen, cfg.Text.MaxLength > 0, cfg.Text.Padding, output, pooling, cfg.Normalize, batch)
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("extractor %s: %s: %w", cfg.Name, model, err)
	}
	files := map[string]string{"model": model, "tokenizer": tokPath, "config": configPath}
	addTokenizerSidecars(files, tokPath)
	ids, err := identities(files)
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("extractor %s: %w", cfg.Name, err)
	}
	e := &TextEncoder{name: cfg.Name, tower: tower, stream: cfg.Text.Padding != PadLongest && tower.batchIndependent()}
	e.recipe = recipe(cfg.Name, runTypeText, cfg.Normalize, batch, cfg.Runtime, sess, ids, cfg.CacheIdentity)
	e.recipe["text"] = tower.recipe()
	return e, nil
}

func (e *TextEncoder) Name() string           { return e.name }
func (e *TextEncoder) Type() string           { return runTypeText }
func (e *TextEncoder) Recipe() map[string]any { return cloneMap(e.recipe) }
func (e *TextEncoder) StreamingSafe() bool    { return e.stream }
func (e *TextEncoder) Modality() string       { return "text" }

// Encode implements extract.Encoder.
func (e *TextEncoder) Encode(ctx context.Context, b extract.Batch) (matrix.Matrix, error) {
	return encodeTexts(ctx, e.name, e.tower, b)
}

// Close releases the session.
func (e *TextEncoder) Close() error { return e.tower.sess.Close() }

// ImageEncoder is an onnx_image extractor.
type ImageEncoder struct {
	name   string
	tower  *imageTower
	recipe map[string]any
}

var _ extract.Encoder = (*ImageEncoder)(nil)

// NewImageEncoder loads a single-tower image model (model.onnx +
// preprocessor_config.json).
func NewImageEncoder(ctx context.Context, cfg ImageConfig) (*ImageEncoder, error) {
	if err := checkCommon(cfg.Name, cfg.ModelDir, "", cfg.Pooling, cfg.BatchSize, cfg.Runtime); err != nil {
		return nil, err
	}
	model, err := requireFile(cfg.Name, cfg.ModelDir, "model.onnx", "", "model.onnx", filepath.Join("onnx", "model.onnx"))
	if err != nil {
		return nil, err
	}
	prepPath, err := requireFile(cfg.Name, cfg.ModelDir, "preprocessor_config.json", "", "preprocessor_config.json")
	if err != nil {
		return nil, err
	}
	prep, err := imageprep.LoadConfig(prepPath)
	if err != nil {
		return nil, fmt.Errorf("extractor %s: %w", cfg.Name, err)
	}
	sess, err := OpenSession(ctx, model, cfg.Runtime)
	if err != nil {
		return nil, fmt.Errorf("extractor %s: %w", cfg.Name, err)
	}
	batch := batchOr(cfg.BatchSize)
	tower, err := newImageTower(sess, prep, cfg.Output, cfg.Pooling, cfg.Normalize, batch, "image_embeds", "pooler_output")
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("extractor %s: %s: %w", cfg.Name, model, err)
	}
	ids, err := identities(map[string]string{"model": model, "preprocessor_config": prepPath})
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("extractor %s: %w", cfg.Name, err)
	}
	e := &ImageEncoder{name: cfg.Name, tower: tower}
	e.recipe = recipe(cfg.Name, runTypeImage, cfg.Normalize, batch, cfg.Runtime, sess, ids, cfg.CacheIdentity)
	e.recipe["image"] = tower.recipe()
	return e, nil
}

func (e *ImageEncoder) Name() string           { return e.name }
func (e *ImageEncoder) Type() string           { return runTypeImage }
func (e *ImageEncoder) Recipe() map[string]any { return cloneMap(e.recipe) }
func (e *ImageEncoder) StreamingSafe() bool    { return true }
func (e *ImageEncoder) Modality() string       { return "image" }

// Encode implements extract.Encoder.
func (e *ImageEncoder) Encode(ctx context.Context, b extract.Batch) (matrix.Matrix, error) {
	return encodeImages(ctx, e.name, e.tower, b)
}

// Close releases the session.
func (e *ImageEncoder) Close() error { return e.tower.sess.Close() }

func encodeTexts(ctx context.Context, name string, t *textTower, b extract.Batch) (matrix.Matrix, error) {
	texts, ok := b.Items.(retrieval.Texts)
	if !ok {
		return nil, fmt.Errorf("Extractor %s does not support retrieval modality %s", name, b.Items.Modality())
	}
	data, width, err := t.encode(ctx, texts, b.Row)
	if err != nil {
		return nil, fmt.Errorf("extractor %s, %s side: %w", name, b.Side, err)
	}
	return matrix.NewDense32(len(texts), width, data)
}

func encodeImages(ctx context.Context, name string, t *imageTower, b extract.Batch) (matrix.Matrix, error) {
	paths, ok := b.Items.(retrieval.Images)
	if !ok {
		return nil, fmt.Errorf("Extractor %s does not support retrieval modality %s", name, b.Items.Modality())
	}
	data, width, err := t.encode(ctx, paths, b.Row)
	if err != nil {
		return nil, fmt.Errorf("extractor %s, %s side: %w", name, b.Side, err)
	}
	return matrix.NewDense32(len(paths), width, data)
}

// loadTokenizer loads tokenizer.json and resolves the text length: the
// option, else the tokenizer's truncation, else config.json, else 77.
func loadTokenizer(name, path, configPath string, option int) (*tokenize.Tokenizer, int, error) {
	tok, err := loadTokenizerFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("extractor %s: %w", name, err)
	}
	maxLen := option
	if maxLen <= 0 {
		maxLen = tok.MaxLength()
	}
	if maxLen <= 0 {
		if maxLen, err = contextLengthFromConfig(configPath); err != nil {
			return nil, 0, fmt.Errorf("extractor %s: %w", name, err)
		}
	}
	if maxLen <= 0 {
		maxLen = DefaultContextLength
	}
	return tok, maxLen, nil
}

func (t *textTower) recipe() map[string]any {
	pad := PadMaxLength
	if t.opts.Padding == tokenize.PadLongest {
		pad = PadLongest
	}
	r := map[string]any{
		"output": t.output.Name, "max_length": t.opts.MaxLength, "padding": pad, "pad_id": t.opts.PadID,
		"pooling": poolingOrNil(t.pooling),
	}
	if t.sparse {
		r["input_layout"] = sparseLayout
	}
	return r
}

func (t *imageTower) recipe() map[string]any {
	return map[string]any{
		"output": t.output.Name, "input": t.input.Name, "pooling": poolingOrNil(t.pooling),
		"preprocessing": t.prep.Identity(),
	}
}

// recipe holds the fields every ONNX adapter records (SPEC §9.5). Every
// model file has a content identity, so the extractor is cache-safe.
func recipe(name, typ string, normalize bool, batch int, rt Runtime, sess *Session, ids map[string]any, cacheIdentity string) map[string]any {
	return map[string]any{
		"name": name, "extractor_type": typ, "normalize": normalize, "batch_size": batch,
		"execution_provider": rt.provider(), "runtime_version": sess.RuntimeVersion(),
		"path_identities": ids, "cache_identity": identityOrNil(cacheIdentity), "cache_safe": true,
	}
}

func poolingOrNil(p string) any {
	if p == PoolNone {
		return nil
	}
	return p
}

func batchOr(n int) int {
	if n <= 0 {
		return DefaultBatchSize
	}
	return n
}
