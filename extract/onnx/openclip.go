package onnx

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/imageprep"
)

// openCLIPPreprocessor translates an OpenCLIP preprocess_cfg.json (size,
// mean, std, interpolation, resize_mode, as written by open_clip's
// PreprocessCfg and Immich's exports) into the equivalent Hugging Face
// preprocessor configuration. resize_mode "shortest" (the default) resizes
// the shorter side and centre-crops; "squash" resizes to the exact size;
// "longest" (letterboxing) is not supported.
func openCLIPPreprocessor(path string) (imageprep.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return imageprep.Config{}, err
	}
	var c struct {
		Size          json.RawMessage `json:"size"`
		Mode          string          `json:"mode"`
		Mean          []float64       `json:"mean"`
		Std           []float64       `json:"std"`
		Interpolation string          `json:"interpolation"`
		ResizeMode    string          `json:"resize_mode"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return imageprep.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	var h, w int
	var one int
	var two []int
	switch {
	case json.Unmarshal(c.Size, &one) == nil && one > 0:
		h, w = one, one
	case json.Unmarshal(c.Size, &two) == nil && len(two) == 2 && two[0] > 0 && two[1] > 0:
		h, w = two[0], two[1]
	default:
		return imageprep.Config{}, fmt.Errorf("%s: field size must be a positive integer or [height, width], got %s", path, c.Size)
	}
	if c.Mode != "" && c.Mode != "RGB" {
		return imageprep.Config{}, fmt.Errorf("%s: field mode %q is not supported (only RGB)", path, c.Mode)
	}
	resample := 3
	switch c.Interpolation {
	case "", "bicubic":
	case "bilinear":
		resample = 2
	default:
		return imageprep.Config{}, fmt.Errorf("%s: field interpolation %q is not supported (bicubic, bilinear)", path, c.Interpolation)
	}
	hf := map[string]any{
		"do_resize": true, "resample": resample, "do_rescale": true, "rescale_factor": 1.0 / 255,
		"do_normalize": true, "image_mean": c.Mean, "image_std": c.Std, "do_convert_rgb": true,
	}
	switch c.ResizeMode {
	case "", "shortest":
		if h != w {
			return imageprep.Config{}, fmt.Errorf("%s: resize_mode shortest needs a square size, got %dx%d", path, h, w)
		}
		hf["size"] = map[string]int{"shortest_edge": h}
		hf["do_center_crop"] = true
		hf["crop_size"] = map[string]int{"height": h, "width": w}
	case "squash":
		hf["size"] = map[string]int{"height": h, "width": w}
		hf["do_center_crop"] = false
	default:
		return imageprep.Config{}, fmt.Errorf("%s: field resize_mode %q is not supported (shortest, squash)", path, c.ResizeMode)
	}
	js, err := json.Marshal(hf)
	if err != nil {
		return imageprep.Config{}, err
	}
	return imageprep.ParseConfig(js, path)
}
