package tinymodels

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/vertebrae-eval/vertebrae/internal/atomicfile"
)

// Files returns every generated testdata file keyed by its slash-separated
// path relative to extract/onnx/testdata. testdata/README.md is written by
// hand and is not part of it.
func Files() map[string][]byte {
	// tiny-text with its weights in an external data file, as exports of
	// models over 2 GB have them.
	textExternal, textExternalData := TextModel().WithExternalData("model.onnx_data")
	files := map[string][]byte{
		"tiny-clip/onnx/text_model.onnx":     CLIPTextModel().Marshal(),
		"tiny-clip/onnx/vision_model.onnx":   CLIPVisionModel().Marshal(),
		"tiny-clip/tokenizer.json":           CLIPTokenizerJSON(),
		"tiny-clip/tokenizer_config.json":    clipTokenizerConfig(),
		"tiny-clip/preprocessor_config.json": clipPreprocessorConfig(),
		"tiny-clip/config.json":              clipConfig(),

		"tiny-siglip/text_model.onnx":          SigLIPTextModel().Marshal(),
		"tiny-siglip/vision_model.onnx":        SigLIPVisionModel().Marshal(),
		"tiny-siglip/tokenizer.json":           SigLIPTokenizerJSON(),
		"tiny-siglip/preprocessor_config.json": sigLIPPreprocessorConfig(),
		"tiny-siglip/config.json":              sigLIPConfig(),

		"tiny-text/model.onnx":     TextModel().Marshal(),
		"tiny-text/tokenizer.json": TextTokenizerJSON(),

		"tiny-text-external/model.onnx":      textExternal.Marshal(),
		"tiny-text-external/model.onnx_data": textExternalData,
		"tiny-text-external/tokenizer.json":  TextTokenizerJSON(),

		"tiny-text-st/model.onnx":     TextSTModel().Marshal(),
		"tiny-text-st/tokenizer.json": TextTokenizerJSON(),

		"tiny-image/model.onnx":               ImageModel().Marshal(),
		"tiny-image/preprocessor_config.json": clipPreprocessorConfig(),
	}
	for name, b := range imageFiles() {
		files["images/"+name] = b
	}
	return files
}

// WriteAll writes Files under dir, creating directories as needed.
func WriteAll(dir string) error {
	files := Files()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("tinymodels: %w", err)
		}
		if err := atomicfile.Write(path, files[name]); err != nil {
			return fmt.Errorf("tinymodels: %w", err)
		}
	}
	return nil
}
