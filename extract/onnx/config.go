package onnx

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Runtime configures ONNX Runtime for one extractor.
type Runtime struct {
	// Library is the shared library path; "" = $ONNXRUNTIME_LIB, then
	// standard locations (see ResolveLibrary).
	Library string
	// IntraOpThreads is ONNX Runtime's intra-op thread count; 0 = its
	// default (one per physical core).
	IntraOpThreads int
	// ExecutionProvider is "cpu" (default) or "cuda".
	ExecutionProvider string
}

func (r Runtime) provider() string {
	if r.ExecutionProvider == "" {
		return "cpu"
	}
	return r.ExecutionProvider
}

func (r Runtime) validate() error {
	if r.IntraOpThreads < 0 {
		return fmt.Errorf("intra_op_threads must be ≥ 0, got %d", r.IntraOpThreads)
	}
	switch r.provider() {
	case "cpu", "cuda":
		return nil
	}
	return fmt.Errorf("execution_provider must be cpu or cuda, got %q", r.ExecutionProvider)
}

// Text padding modes.
const (
	PadMaxLength = "max_length" // every row padded to MaxLength: batch-independent
	PadLongest   = "longest"    // rows padded to the longest row of their ONNX batch
)

// Pooling modes for 3-D ([batch, sequence, hidden]) outputs.
const (
	PoolNone = ""
	PoolCLS  = "cls"  // the first position
	PoolMean = "mean" // mean over positions (text: over the attention mask)
)

// DefaultBatchSize is the ONNX batch size when none is configured.
const DefaultBatchSize = 16

// DefaultContextLength is the text length used when neither the option,
// tokenizer.json nor config.json gives one (CLIP's 77).
const DefaultContextLength = 77

// TextOptions are the text tower's settings.
type TextOptions struct {
	MaxLength int    // 0 = tokenizer.json truncation, else config.json, else 77
	Padding   string // PadMaxLength (default) or PadLongest
}

// DualEncoderConfig configures an onnx_dual_encoder.
type DualEncoderConfig struct {
	Name     string
	ModelDir string
	// TextModel and VisionModel override the tower files (relative to
	// ModelDir unless absolute).
	TextModel, VisionModel string
	// TextOutput defaults to the first present of text_embeds, pooler_output;
	// ImageOutput to image_embeds, pooler_output.
	TextOutput, ImageOutput string
	Text                    TextOptions
	Pooling                 string // for 3-D outputs: PoolCLS or PoolMean
	Normalize               bool   // L2-normalise output rows
	BatchSize               int    // rows per ONNX run; 0 = DefaultBatchSize
	Runtime                 Runtime
	CacheIdentity           string
}

// TextConfig configures an onnx_text extractor.
type TextConfig struct {
	Name, ModelDir string
	Text           TextOptions
	// Output defaults to sentence_embedding when the model has it, else
	// last_hidden_state pooled by Pooling (default mean).
	Output        string
	Pooling       string
	Normalize     bool
	BatchSize     int
	Runtime       Runtime
	CacheIdentity string
}

// ImageConfig configures an onnx_image extractor.
type ImageConfig struct {
	Name, ModelDir string
	// Output defaults to the first present of image_embeds, pooler_output,
	// else the model's only output.
	Output        string
	Pooling       string
	Normalize     bool
	BatchSize     int
	Runtime       Runtime
	CacheIdentity string
}

func checkCommon(name, modelDir, padding, pooling string, batch int, rt Runtime) error {
	if name == "" {
		return fmt.Errorf("onnx: extractor name is required")
	}
	if modelDir == "" {
		return fmt.Errorf("extractor %s: model_dir is required", name)
	}
	switch padding {
	case "", PadMaxLength, PadLongest:
	default:
		return fmt.Errorf("extractor %s: padding must be max_length or longest, got %q", name, padding)
	}
	switch pooling {
	case PoolNone, PoolCLS, PoolMean:
	default:
		return fmt.Errorf("extractor %s: pooling must be cls or mean, got %q", name, pooling)
	}
	if batch < 0 {
		return fmt.Errorf("extractor %s: batch_size must be ≥ 1, got %d", name, batch)
	}
	if err := rt.validate(); err != nil {
		return fmt.Errorf("extractor %s: %w", name, err)
	}
	return nil
}

// firstExisting returns the first candidate (relative to dir) that is a
// regular file.
func firstExisting(dir string, candidates ...string) (string, bool) {
	for _, c := range candidates {
		p := c
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, c)
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

// requireFile resolves an explicitly configured file or the first present
// default, failing with every location tried.
func requireFile(name, dir, what, configured string, defaults ...string) (string, error) {
	cands := defaults
	if configured != "" {
		cands = []string{configured}
	}
	if p, ok := firstExisting(dir, cands...); ok {
		return p, nil
	}
	tried := make([]string, len(cands))
	for i, c := range cands {
		if filepath.IsAbs(c) {
			tried[i] = c
		} else {
			tried[i] = filepath.Join(dir, c)
		}
	}
	return "", fmt.Errorf("extractor %s: %s not found (looked for %s)", name, what, strings.Join(tried, ", "))
}

// fileDigest is the SHA-256 of a file's content (symlinks followed: the
// identity is what the runtime reads).
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// identities hashes every file an extractor's outputs depend on, keyed by
// role ("text_model", "tokenizer", ...). An ONNX model's external weight
// files count too, as "<role>_data:<location>".
func identities(files map[string]string) (map[string]any, error) {
	out := make(map[string]any, len(files))
	for role, p := range files {
		if p == "" {
			continue
		}
		d, err := fileDigest(p)
		if err != nil {
			return nil, fmt.Errorf("hashing %s: %w", role, err)
		}
		out[role] = "sha256:" + d
		if !strings.HasSuffix(p, ".onnx") {
			continue
		}
		ext, err := externalDataFiles(p)
		if err != nil {
			return nil, err
		}
		for _, e := range ext {
			d, err := fileDigest(e)
			if err != nil {
				return nil, fmt.Errorf("hashing the external data of %s: %w", role, err)
			}
			rel, _ := filepath.Rel(filepath.Dir(p), e)
			out[role+"_data:"+filepath.ToSlash(rel)] = "sha256:" + d
		}
	}
	return out, nil
}

// contextLengthFromConfig reads the text context length from a Hugging Face
// config.json (text_config.max_position_embeddings, or top-level
// max_position_embeddings) or an OpenCLIP config (text_cfg.context_length).
// 0 when the file is absent or has none.
func contextLengthFromConfig(path string) (int, error) {
	if path == "" {
		return 0, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var c struct {
		MaxPos     int `json:"max_position_embeddings"`
		TextConfig struct {
			MaxPos int `json:"max_position_embeddings"`
		} `json:"text_config"`
		ModelCfg struct {
			TextCfg struct {
				ContextLength int `json:"context_length"`
			} `json:"text_cfg"`
		} `json:"model_cfg"`
		TextCfg struct {
			ContextLength int `json:"context_length"`
		} `json:"text_cfg"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	for _, v := range []int{c.TextConfig.MaxPos, c.TextCfg.ContextLength, c.ModelCfg.TextCfg.ContextLength, c.MaxPos} {
		if v > 0 {
			return v, nil
		}
	}
	return 0, nil
}
