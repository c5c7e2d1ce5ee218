package onnx

import (
	"maps"
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/imageprep"
)

// Run-file / reported extractor types.
const (
	runTypeDual  = "onnx_dual_encoder"
	runTypeText  = "onnx_text"
	runTypeImage = "onnx_image"
)

// Branch names of a DualEncoder (SPEC §9.4).
const (
	TextBranch  = "text_branch"
	ImageBranch = "image_branch"
)

// Dual-encoder directory layouts.
const (
	layoutHF       = "huggingface"
	layoutOpenCLIP = "openclip"
)

// dualFiles are the files of a dual-encoder export.
type dualFiles struct {
	kind                   string // layoutHF or layoutOpenCLIP
	textModel, visionModel string
	tokenizer              string
	preprocessor           string // preprocessor_config.json or OpenCLIP preprocess_cfg.json
	config                 string // "" when absent
}

// dualLayout finds a dual encoder's files: the Hugging Face layout (towers
// at the top level or under onnx/), else the OpenCLIP (Immich) layout.
func dualLayout(cfg DualEncoderConfig) (dualFiles, error) {
	dir := cfg.ModelDir
	hfText := []string{"text_model.onnx", filepath.Join("onnx", "text_model.onnx")}
	ocText := filepath.Join("textual", "model.onnx")
	if _, ok := firstExisting(dir, hfText...); !ok && cfg.TextModel == "" {
		if _, ok := firstExisting(dir, ocText); ok {
			return openCLIPLayout(cfg)
		}
	}
	var f dualFiles
	var err error
	f.kind = layoutHF
	if f.textModel, err = requireFile(cfg.Name, dir, "text model", cfg.TextModel, hfText...); err != nil {
		return f, err
	}
	if f.visionModel, err = requireFile(cfg.Name, dir, "vision model", cfg.VisionModel,
		"vision_model.onnx", filepath.Join("onnx", "vision_model.onnx")); err != nil {
		return f, err
	}
	if f.tokenizer, err = requireFile(cfg.Name, dir, "tokenizer.json", "", "tokenizer.json"); err != nil {
		return f, err
	}
	if f.preprocessor, err = requireFile(cfg.Name, dir, "preprocessor_config.json", "", "preprocessor_config.json"); err != nil {
		return f, err
	}
	f.config, _ = firstExisting(dir, "config.json")
	return f, nil
}

func openCLIPLayout(cfg DualEncoderConfig) (dualFiles, error) {
	dir := cfg.ModelDir
	f := dualFiles{kind: layoutOpenCLIP}
	var err error
	if f.textModel, err = requireFile(cfg.Name, dir, "text model", "", filepath.Join("textual", "model.onnx")); err != nil {
		return f, err
	}
	if f.visionModel, err = requireFile(cfg.Name, dir, "vision model", cfg.VisionModel, filepath.Join("visual", "model.onnx")); err != nil {
		return f, err
	}
	if f.tokenizer, err = requireFile(cfg.Name, dir, "tokenizer.json", "",
		filepath.Join("textual", "tokenizer.json"), "tokenizer.json"); err != nil {
		return f, err
	}
	if f.preprocessor, err = requireFile(cfg.Name, dir, "preprocess_cfg.json", "",
		filepath.Join("visual", "preprocess_cfg.json"), "preprocess_cfg.json"); err != nil {
		return f, err
	}
	f.config, _ = firstExisting(dir, "config.json")
	return f, nil
}

// files maps identity roles to paths.
func (f dualFiles) files() map[string]string {
	m := map[string]string{
		"text_model": f.textModel, "vision_model": f.visionModel, "tokenizer": f.tokenizer,
		"preprocessor": f.preprocessor, "config": f.config,
	}
	addTokenizerSidecars(m, f.tokenizer)
	return m
}

// addTokenizerSidecars adds the files next to tokenizer.json that can
// change the pad token.
func addTokenizerSidecars(m map[string]string, tokenizer string) {
	dir := filepath.Dir(tokenizer)
	if p, ok := firstExisting(dir, "tokenizer_config.json"); ok {
		m["tokenizer_config"] = p
	}
	if p, ok := firstExisting(dir, "special_tokens_map.json"); ok {
		m["special_tokens_map"] = p
	}
}

func (f dualFiles) loadPreprocessor() (imageprep.Config, error) {
	if f.kind == layoutOpenCLIP {
		return openCLIPPreprocessor(f.preprocessor)
	}
	return imageprep.LoadConfig(f.preprocessor)
}

func identityOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func cloneMap(m map[string]any) map[string]any { return maps.Clone(m) }
