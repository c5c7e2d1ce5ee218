package nsfwjs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/pretrained/convert/keras"
)

// Package identity and the tarball this preparer is pinned to.
const (
	Package = "nsfwjs"
	Version = "4.4.0"
	// TarballSHA256 is the SHA-256 of `npm pack nsfwjs@4.4.0`
	// (nsfwjs-4.4.0.tgz, the registry's bytes: its SHA-1 is the registry's
	// dist.shasum 706017d11e44de0803b73a568819f800a50ae470).
	TarballSHA256 = "585cd178f3b994337c4d10a87b080d342fc52f8b9bf0085c4d1f345a3a1c5382"
	// Tarball is the file name npm pack writes.
	Tarball = "nsfwjs-4.4.0.tgz"
	// DirName is the model directory's name under a models directory.
	DirName = "nsfwjs-mobilenet-v2"
	// Output is the embedding layer and ONNX output name; Dim its width.
	Output = "flatten_1"
	Dim    = 1280
	// Size is the model's input side.
	Size = 224
)

// Files of the package (relative to its root) and their pinned SHA-256:
// anything else is refused, so the converted model is always the one the
// parity test checks.
const (
	modelModule  = "dist/models/mobilenet_v2/model.min.js"
	weightModule = "dist/models/mobilenet_v2/group1-shard1of1.min.js"
	packageJSON  = "package.json"
	// LicenseFile is the package's licence, copied next to the model.
	LicenseFile = "LICENSE"
)

var pinned = map[string]string{
	modelModule:  "sha256:c32f104fd562b08cdff5ed69dfe1209643afa47e792fb12751d2949aa61a397a",
	weightModule: "sha256:ef2e0a63f7d2c4960b37b024b669313f65d3c45cd59e9042636c55b39de53517",
}

// ErrPackage reports package files that are not those of nsfwjs@4.4.0.
var ErrPackage = errors.New("nsfwjs: not the nsfwjs@4.4.0 package")

// PreprocessorConfig is the model directory's preprocessor_config.json:
// nsfwjs feeds RGB pixels ÷ 255 at 224×224 with no mean/std normalisation
// (NSFWJS.infer). Images of another size are resized with bilinear
// filtering (nsfwjs resizes with tf.image.resizeBilinear; vertebrae uses its
// PIL-exact bilinear filter, so off-size inputs are close, not identical).
// Grey images are replicated to RGB by the adapter.
const PreprocessorConfig = `{
  "do_convert_rgb": true,
  "do_resize": true,
  "size": {"height": 224, "width": 224},
  "resample": 2,
  "do_center_crop": false,
  "do_rescale": true,
  "rescale_factor": 0.00392156862745098,
  "do_normalize": false
}
`

// Conversion is conversion.json: what was converted, from which files, how.
type Conversion struct {
	Format    string    `json:"format"`
	Model     ModelInfo `json:"model"`
	Source    Source    `json:"source"`
	Converter Converter `json:"converter"`
	License   string    `json:"license"`
	// Files are the digests of the other files written ("sha256:<hex>").
	Files map[string]string `json:"files"`
}

// ModelInfo describes what the directory computes.
type ModelInfo struct {
	Architecture string `json:"architecture"`
	Output       string `json:"output"`
	Dim          int    `json:"dim"`
	Input        string `json:"input"`
	Note         string `json:"note"`
}

// Source records where the weights came from.
type Source struct {
	NPM   string            `json:"npm"`
	Files map[string]string `json:"files"` // package path → "sha256:<hex>"
}

// Converter records the conversion.
type Converter struct {
	Name                 string `json:"name"`
	Version              int    `json:"version"`
	BatchNormalization   string `json:"batch_normalization"`
	WeightDequantization string `json:"weight_dequantization"`
}

// ConversionFile is the conversion record's file name.
const ConversionFile = "conversion.json"

// ConversionFormat is conversion.json's format tag.
const ConversionFormat = "vertebrae-nsfwjs-conversion/1"

// Build converts the package unpacked at src (the tarball's package/
// directory) and writes the model directory's files into dst, which must
// exist.
func Build(ctx context.Context, src, dst string) error {
	files, _, err := Files(ctx, src)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dst, n), files[n], 0o644); err != nil {
			return fmt.Errorf("nsfwjs: %w", err)
		}
	}
	return nil
}

// Files converts the package unpacked at src and returns the model
// directory's files by name (LICENSE excluded) and their conversion record.
func Files(ctx context.Context, src string) (map[string][]byte, *Conversion, error) {
	read := map[string][]byte{}
	for _, name := range []string{packageJSON, modelModule, weightModule} {
		b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(name)))
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrPackage, err)
		}
		read[name] = b
	}
	var pj struct{ Name, Version string }
	if err := json.Unmarshal(read[packageJSON], &pj); err != nil || pj.Name != Package || pj.Version != Version {
		return nil, nil, fmt.Errorf("%w: %s names %q@%q", ErrPackage, filepath.Join(src, packageJSON), pj.Name, pj.Version)
	}
	for name, want := range pinned {
		if got := digest(read[name]); got != want {
			return nil, nil, fmt.Errorf("%w: %s has %s, want %s", ErrPackage, filepath.Join(src, filepath.FromSlash(name)), got, want)
		}
	}
	model, err := keras.ParseModelModule(read[modelModule])
	if err != nil {
		return nil, nil, fmt.Errorf("nsfwjs: %s: %w", modelModule, err)
	}
	if len(model.Manifest) != 1 || len(model.Manifest[0].Paths) != 1 || "dist/models/mobilenet_v2/"+model.Manifest[0].Paths[0]+".min.js" != weightModule {
		return nil, nil, fmt.Errorf("%w: unexpected weight files %v", ErrPackage, model.Manifest)
	}
	shard, err := keras.ParseWeightsModule(read[weightModule])
	if err != nil {
		return nil, nil, fmt.Errorf("nsfwjs: %s: %w", weightModule, err)
	}
	shards := [][]byte{shard}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := model.LoadWeights(shards); err != nil {
		return nil, nil, fmt.Errorf("nsfwjs: %w", err)
	}
	onnx, err := model.Convert(keras.Options{Output: Output, Metadata: map[string]string{
		"source":            Package + "@" + Version + " " + modelModule,
		"converter":         "vertebrae extract/onnx/keras v" + strconv.Itoa(keras.ConverterVersion),
		"embedding_layer":   Output,
		"license":           "MIT (nsfwjs, Infinite Red, Inc.)",
		"input_description": "RGB, NCHW, pixel/255, 224x224",
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("nsfwjs: converting %s: %w", modelModule, err)
	}
	files := map[string][]byte{
		"model.onnx":               onnx,
		"preprocessor_config.json": []byte(PreprocessorConfig),
	}
	m := &Conversion{
		Format: ConversionFormat,
		Model: ModelInfo{
			Architecture: "MobileNetV2 1.0 @224 (Keras " + model.KerasVersion + "), ImageNet backbone fine-tuned for NSFW detection",
			Output:       Output, Dim: Dim,
			Input: "pixel_values float32 [batch,3,224,224], RGB pixel/255, no normalisation",
			Note:  "fine for image similarity; not a CLIP substitute (no text tower, NSFW fine-tuning)",
		},
		Source:    Source{NPM: Package + "@" + Version, Files: map[string]string{}},
		Converter: Converter{Name: "vertebrae extract/onnx/keras", Version: keras.ConverterVersion, BatchNormalization: "kept as BatchNormalization nodes (not folded)", WeightDequantization: "float32(q*scale+min) in float64, as TF.js"},
		License:   "MIT",
		Files:     map[string]string{},
	}
	for _, name := range []string{modelModule, weightModule} {
		m.Source.Files[name] = digest(read[name])
	}
	for name, b := range files {
		m.Files[name] = digest(b)
	}
	mj, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	files[ConversionFile] = append(mj, '\n')
	return files, m, nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
