// Package nsfwjs prepares the MobileNetV2 image backbone shipped in the npm
// package nsfwjs@4.4.0 (MIT) as an onnx_image model directory (SPEC §9.4):
// it reads the package tarball (npm pack nsfwjs@4.4.0), converts the TF.js
// Keras layers model with package keras, and writes
//
//	DIR/
//	  model.onnx                 input pixel_values [batch,3,224,224], output flatten_1 [batch,1280]
//	  preprocessor_config.json   resize to 224×224 (bilinear), ×1/255, no normalisation
//	  LICENSE                    the package's MIT licence
//	  manifest.json              sources, converter version and the SHA-256 of every file
//
// The model is MobileNetV2 1.0 @224, an ImageNet backbone fine-tuned by
// nsfwjs's authors for five-class NSFW detection; flatten_1 is the
// 1280-d global-average-pooled feature before its classifier head. It is
// a real CNN for image similarity, not a CLIP substitute (no text tower).
//
// Nothing is downloaded: the tarball is an input. The output bytes are a
// pure function of the tarball (same bytes on every run).
package nsfwjs

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/keras"
)

// Package identity and the tarball this preparer is pinned to.
const (
	Package = "nsfwjs"
	Version = "4.4.0"
	// TarballSHA256 is the SHA-256 of `npm pack nsfwjs@4.4.0`
	// (nsfwjs-4.4.0.tgz); any other bytes are refused so the converted model
	// is always the one the parity test checks.
	TarballSHA256 = "585cd178f3b994337c4d10a87b080d342fc52f8b9bf0085c4d1f345a3a1c5382"
	// Tarball is the file name npm pack writes.
	Tarball = "nsfwjs-4.4.0.tgz"
	// DirName is the model directory's conventional name under a models
	// directory.
	DirName = "nsfwjs-mobilenet-v2"
	// Output is the embedding layer and ONNX output name; Dim its width.
	Output = "flatten_1"
	Dim    = 1280
	// Size is the model's input side.
	Size = 224
)

// Files inside the tarball.
const (
	modelModule   = "package/dist/models/mobilenet_v2/model.min.js"
	weightsPrefix = "package/dist/models/mobilenet_v2/"
	licenseFile   = "package/LICENSE"
	packageJSON   = "package/package.json"
)

// ErrTarball reports a tarball that is not the pinned nsfwjs package.
var ErrTarball = errors.New("nsfwjs: not the nsfwjs@4.4.0 npm tarball")

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

// Manifest is manifest.json.
type Manifest struct {
	Format    string            `json:"format"`
	Name      string            `json:"name"`
	Model     ModelInfo         `json:"model"`
	Source    Source            `json:"source"`
	Converter Converter         `json:"converter"`
	License   string            `json:"license"`
	Files     map[string]string `json:"files"` // file name → "sha256:<hex>"
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
	NPM           string            `json:"npm"`
	TarballSHA256 string            `json:"tarball_sha256"`
	Files         map[string]string `json:"files"` // tarball path → "sha256:<hex>"
}

// Converter records the conversion.
type Converter struct {
	Name                 string `json:"name"`
	Version              int    `json:"version"`
	BatchNormalization   string `json:"batch_normalization"`
	WeightDequantization string `json:"weight_dequantization"`
}

// ManifestFormat is the manifest's format tag.
const ManifestFormat = "vertebrae-model-manifest/1"

// Prepare converts the tarball into the model directory dir. dir is created
// or replaced only once everything has been written (a failed run leaves it
// as it was).
func Prepare(ctx context.Context, tarball, dir string) (*Manifest, error) {
	files, m, err := Build(ctx, tarball)
	if err != nil {
		return nil, err
	}
	if err := writeDir(dir, files); err != nil {
		return nil, fmt.Errorf("nsfwjs: %w", err)
	}
	return m, nil
}

// Build converts the tarball and returns the model directory's files by
// name, with the manifest they contain.
func Build(ctx context.Context, tarball string) (map[string][]byte, *Manifest, error) {
	src, sum, err := readTarball(ctx, tarball)
	if err != nil {
		return nil, nil, err
	}
	if sum != TarballSHA256 {
		return nil, nil, fmt.Errorf("%w: %s has SHA-256 %s, want %s (run npm pack %s@%s)", ErrTarball, tarball, sum, TarballSHA256, Package, Version)
	}
	var pj struct{ Name, Version string }
	if err := json.Unmarshal(src[packageJSON], &pj); err != nil || pj.Name != Package || pj.Version != Version {
		return nil, nil, fmt.Errorf("%w: %s: package.json names %q@%q", ErrTarball, tarball, pj.Name, pj.Version)
	}
	model, err := keras.ParseModelModule(src[modelModule])
	if err != nil {
		return nil, nil, fmt.Errorf("nsfwjs: %s: %w", modelModule, err)
	}
	var shards [][]byte
	used := map[string]bool{modelModule: true, licenseFile: true}
	for _, g := range model.Manifest {
		for _, p := range g.Paths {
			name := weightsPrefix + p + ".min.js"
			mod, ok := src[name]
			if !ok {
				return nil, nil, fmt.Errorf("%w: %s: %s is missing", ErrTarball, tarball, name)
			}
			b, err := keras.ParseWeightsModule(mod)
			if err != nil {
				return nil, nil, fmt.Errorf("nsfwjs: %s: %w", name, err)
			}
			shards = append(shards, b)
			used[name] = true
		}
	}
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
		"LICENSE":                  src[licenseFile],
	}
	m := &Manifest{
		Format: ManifestFormat,
		Name:   DirName,
		Model: ModelInfo{
			Architecture: "MobileNetV2 1.0 @224 (Keras " + model.KerasVersion + "), ImageNet backbone fine-tuned for NSFW detection",
			Output:       Output, Dim: Dim,
			Input: "pixel_values float32 [batch,3,224,224], RGB pixel/255, no normalisation",
			Note:  "fine for image similarity; not a CLIP substitute (no text tower, NSFW fine-tuning)",
		},
		Source:    Source{NPM: Package + "@" + Version, TarballSHA256: sum, Files: map[string]string{}},
		Converter: Converter{Name: "vertebrae extract/onnx/keras", Version: keras.ConverterVersion, BatchNormalization: "kept as BatchNormalization nodes (not folded)", WeightDequantization: "float32(q*scale+min) in float64, as TF.js"},
		License:   "MIT",
		Files:     map[string]string{},
	}
	for name := range used {
		m.Source.Files[name] = digest(src[name])
	}
	for name, b := range files {
		m.Files[name] = digest(b)
	}
	mj, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	files["manifest.json"] = append(mj, '\n')
	return files, m, nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// maxEntry bounds any one file read from the tarball (the largest nsfwjs
// file is under 6 MB).
const maxEntry = 64 << 20

// readTarball returns the regular files under package/ that the preparer
// needs (by tarball path) and the tarball's SHA-256.
func readTarball(ctx context.Context, path string) (map[string][]byte, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("nsfwjs: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	gz, err := gzip.NewReader(io.TeeReader(f, h))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", ErrTarball, path, err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("%w: %s: %v", ErrTarball, path, err)
		}
		if hdr.Typeflag != tar.TypeReg || !wanted(hdr.Name) {
			continue
		}
		if hdr.Size > maxEntry {
			return nil, "", fmt.Errorf("%w: %s: %s is %d bytes", ErrTarball, path, hdr.Name, hdr.Size)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %s: %s: %v", ErrTarball, path, hdr.Name, err)
		}
		out[hdr.Name] = b
	}
	// Hash the rest of the file too (gzip may stop before its end).
	if _, err := io.Copy(io.Discard, io.TeeReader(f, h)); err != nil {
		return nil, "", fmt.Errorf("nsfwjs: %s: %w", path, err)
	}
	for _, need := range []string{modelModule, licenseFile, packageJSON} {
		if _, ok := out[need]; !ok {
			return nil, "", fmt.Errorf("%w: %s has no %s", ErrTarball, path, need)
		}
	}
	return out, hex.EncodeToString(h.Sum(nil)), nil
}

func wanted(name string) bool {
	switch name {
	case modelModule, licenseFile, packageJSON:
		return true
	}
	return filepath.Dir(name) == filepath.Clean(weightsPrefix) && filepath.Ext(name) == ".js"
}

// writeDir writes files into a fresh sibling directory and then moves it to
// dir, replacing an existing dir only after the new one is complete.
func writeDir(dir string, files map[string][]byte) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := writeSynced(filepath.Join(tmp, n), files[n]); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(dir); err == nil {
		old := tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
		if err := os.Rename(tmp, dir); err != nil {
			_ = os.Rename(old, dir)
			return err
		}
		return os.RemoveAll(old)
	}
	return os.Rename(tmp, dir)
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
