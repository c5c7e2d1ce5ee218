package imageprep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
)

// Version identifies the preprocessing implementation. It is part of
// Identity so that recipes change when decoding, resampling or arithmetic
// changes.
const Version = "imageprep/v1 (pillow-resample-8bpc)"

// maxDim bounds every configured size (resize target, crop) so that a
// hostile configuration cannot request absurd allocations.
const maxDim = 1 << 14

// Size is the resize target of a Config: exactly one of ShortestEdge or
// (Height, Width) is set.
type Size struct {
	ShortestEdge  int // > 0: the shorter image side becomes ShortestEdge
	Height, Width int // > 0: exact output size
}

// Config is a resolved Hugging Face image preprocessor configuration.
type Config struct {
	// DoConvertRGB is recorded for fidelity. Conversion to RGB always happens
	// because the tensor has 3 channels (see doc.go).
	DoConvertRGB bool
	// DoConvertGrayscale is a vertebrae extension (not Hugging Face): the
	// image is reduced to one luma channel like PIL's convert("L").
	DoConvertGrayscale bool

	DoResize bool
	Size     Size
	Resample int // ResampleBilinear or ResampleBicubic

	DoCenterCrop          bool
	CropHeight, CropWidth int

	DoRescale     bool
	RescaleFactor float64

	DoNormalize bool
	// ImageMean and ImageStd have Channels() entries once resolved (a scalar
	// or one-element list is broadcast).
	ImageMean []float64
	ImageStd  []float64
}

// LoadConfig reads and parses a preprocessor_config.json file.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("imageprep: read config: %w", err)
	}
	return ParseConfig(data, path)
}

// fieldError names the file and field in a configuration error.
func fieldError(name, field string, format string, args ...any) error {
	return fmt.Errorf("%s: field %s: %s", name, field, fmt.Sprintf(format, args...))
}

// ParseConfig parses the JSON of a Hugging Face preprocessor_config.json,
// applies Hugging Face defaults for absent keys and validates the result.
// name is used in error messages. Unknown keys are ignored; JSON null is
// treated as absent.
func ParseConfig(data []byte, name string) (Config, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Config{}, fmt.Errorf("%s: invalid JSON object: %w", name, err)
	}
	if raw == nil {
		return Config{}, fmt.Errorf("%s: expected a JSON object", name)
	}
	p := parser{name: name, raw: raw}
	var c Config
	var err error
	if c.DoConvertRGB, err = p.boolean("do_convert_rgb", true); err != nil {
		return Config{}, err
	}
	if c.DoConvertGrayscale, err = p.boolean("do_convert_grayscale", false); err != nil {
		return Config{}, err
	}
	if c.DoResize, err = p.boolean("do_resize", true); err != nil {
		return Config{}, err
	}
	if c.DoResize {
		if !p.present("size") {
			return Config{}, fieldError(name, "size", "missing (required when do_resize is true)")
		}
		if c.Size, err = p.size("size"); err != nil {
			return Config{}, err
		}
		if !p.present("resample") {
			return Config{}, fieldError(name, "resample", "missing (required when do_resize is true; the Hugging Face default depends on the processor class)")
		}
		r, err := p.integer("resample")
		if err != nil {
			return Config{}, err
		}
		if _, ferr := filterFor(r); ferr != nil {
			return Config{}, fieldError(name, "resample", "unsupported value %d (supported: 2 = bilinear, 3 = bicubic)", r)
		}
		c.Resample = r
	}
	if c.DoCenterCrop, err = p.boolean("do_center_crop", p.present("crop_size")); err != nil {
		return Config{}, err
	}
	if c.DoCenterCrop {
		if !p.present("crop_size") {
			return Config{}, fieldError(name, "crop_size", "missing (required when do_center_crop is true)")
		}
		if c.CropHeight, c.CropWidth, err = p.hw("crop_size"); err != nil {
			return Config{}, err
		}
	}
	if c.DoRescale, err = p.boolean("do_rescale", true); err != nil {
		return Config{}, err
	}
	if c.DoRescale {
		c.RescaleFactor = 1.0 / 255
		if p.present("rescale_factor") {
			if c.RescaleFactor, err = p.number("rescale_factor"); err != nil {
				return Config{}, err
			}
			if c.RescaleFactor <= 0 {
				return Config{}, fieldError(name, "rescale_factor", "must be positive, got %v", c.RescaleFactor)
			}
		}
	}
	if c.DoNormalize, err = p.boolean("do_normalize", true); err != nil {
		return Config{}, err
	}
	if c.DoNormalize {
		ch := c.Channels()
		if c.ImageMean, err = p.perChannel("image_mean", ch, false); err != nil {
			return Config{}, err
		}
		if c.ImageStd, err = p.perChannel("image_std", ch, true); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

type parser struct {
	name string
	raw  map[string]json.RawMessage
}

func (p parser) present(key string) bool {
	v, ok := p.raw[key]
	return ok && string(bytes.TrimSpace(v)) != "null"
}

func (p parser) boolean(key string, def bool) (bool, error) {
	if !p.present(key) {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(p.raw[key], &b); err != nil {
		return false, fieldError(p.name, key, "expected true or false, got %s", abbrev(p.raw[key]))
	}
	return b, nil
}

func (p parser) value(key string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(p.raw[key]))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fieldError(p.name, key, "invalid JSON: %v", err)
	}
	return v, nil
}

func (p parser) number(key string) (float64, error) {
	v, err := p.value(key)
	if err != nil {
		return 0, err
	}
	return toFloat(p.name, key, v)
}

func toFloat(name, field string, v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fieldError(name, field, "expected a number, got %s", describe(v))
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fieldError(name, field, "invalid number %s", n.String())
	}
	return f, nil
}

func toInt(name, field string, v any) (int, error) {
	f, err := toFloat(name, field, v)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return 0, fieldError(name, field, "expected an integer, got %v", f)
	}
	return int(f), nil
}

func (p parser) integer(key string) (int, error) {
	v, err := p.value(key)
	if err != nil {
		return 0, err
	}
	return toInt(p.name, key, v)
}

func checkDim(name, field string, n int) error {
	if n <= 0 {
		return fieldError(name, field, "must be a positive size, got %d", n)
	}
	if n > maxDim {
		return fieldError(name, field, "size %d exceeds the limit %d", n, maxDim)
	}
	return nil
}

// size parses the resize target: an int (shortest edge, HF's legacy form),
// {"shortest_edge": S}, {"height": h, "width": w} or a [h, w] list.
func (p parser) size(key string) (Size, error) {
	v, err := p.value(key)
	if err != nil {
		return Size{}, err
	}
	switch t := v.(type) {
	case json.Number:
		s, err := toInt(p.name, key, t)
		if err != nil {
			return Size{}, err
		}
		if err := checkDim(p.name, key, s); err != nil {
			return Size{}, err
		}
		return Size{ShortestEdge: s}, nil
	case map[string]any:
		if se, ok := t["shortest_edge"]; ok {
			if len(t) != 1 {
				return Size{}, fieldError(p.name, key, "unsupported combination of keys %s (supported: {\"shortest_edge\"} or {\"height\", \"width\"})", keyList(t))
			}
			s, err := toInt(p.name, key+".shortest_edge", se)
			if err != nil {
				return Size{}, err
			}
			if err := checkDim(p.name, key+".shortest_edge", s); err != nil {
				return Size{}, err
			}
			return Size{ShortestEdge: s}, nil
		}
		h, w, err := p.hwValue(key, v)
		if err != nil {
			return Size{}, err
		}
		return Size{Height: h, Width: w}, nil
	case []any:
		h, w, err := p.hwValue(key, v)
		if err != nil {
			return Size{}, err
		}
		return Size{Height: h, Width: w}, nil
	}
	return Size{}, fieldError(p.name, key, "expected an integer, an object or a [height, width] list, got %s", describe(v))
}

// hw parses a crop size: an int (square), {"height": h, "width": w} or [h, w].
func (p parser) hw(key string) (int, int, error) {
	v, err := p.value(key)
	if err != nil {
		return 0, 0, err
	}
	if n, ok := v.(json.Number); ok {
		s, err := toInt(p.name, key, n)
		if err != nil {
			return 0, 0, err
		}
		if err := checkDim(p.name, key, s); err != nil {
			return 0, 0, err
		}
		return s, s, nil
	}
	return p.hwValue(key, v)
}

func (p parser) hwValue(key string, v any) (int, int, error) {
	var hv, wv any
	switch t := v.(type) {
	case map[string]any:
		var okH, okW bool
		hv, okH = t["height"]
		wv, okW = t["width"]
		if !okH || !okW || len(t) != 2 {
			return 0, 0, fieldError(p.name, key, "unsupported keys %s (expected {\"height\", \"width\"})", keyList(t))
		}
	case []any:
		if len(t) != 2 {
			return 0, 0, fieldError(p.name, key, "expected a [height, width] list, got %d elements", len(t))
		}
		hv, wv = t[0], t[1]
	default:
		return 0, 0, fieldError(p.name, key, "expected an integer, an object or a [height, width] list, got %s", describe(v))
	}
	h, err := toInt(p.name, key+".height", hv)
	if err != nil {
		return 0, 0, err
	}
	w, err := toInt(p.name, key+".width", wv)
	if err != nil {
		return 0, 0, err
	}
	if err := checkDim(p.name, key+".height", h); err != nil {
		return 0, 0, err
	}
	if err := checkDim(p.name, key+".width", w); err != nil {
		return 0, 0, err
	}
	return h, w, nil
}

// perChannel parses image_mean / image_std: a number or a list of 1 or
// channels numbers, broadcast to channels entries.
func (p parser) perChannel(key string, channels int, positive bool) ([]float64, error) {
	if !p.present(key) {
		return nil, fieldError(p.name, key, "missing (required when do_normalize is true)")
	}
	v, err := p.value(key)
	if err != nil {
		return nil, err
	}
	var vals []float64
	switch t := v.(type) {
	case json.Number:
		f, err := toFloat(p.name, key, t)
		if err != nil {
			return nil, err
		}
		vals = []float64{f}
	case []any:
		for i, e := range t {
			f, err := toFloat(p.name, fmt.Sprintf("%s[%d]", key, i), e)
			if err != nil {
				return nil, err
			}
			vals = append(vals, f)
		}
	default:
		return nil, fieldError(p.name, key, "expected a number or a list of numbers, got %s", describe(v))
	}
	if len(vals) != 1 && len(vals) != channels {
		if channels == 1 {
			return nil, fieldError(p.name, key, "has %d values, want 1 (do_convert_grayscale gives one channel)", len(vals))
		}
		return nil, fieldError(p.name, key, "has %d values, want 1 or %d (one per channel)", len(vals), channels)
	}
	out := make([]float64, channels)
	for i := range out {
		out[i] = vals[0]
		if len(vals) > 1 {
			out[i] = vals[i]
		}
		if positive && !(out[i] > 0) {
			return nil, fieldError(p.name, key, "values must be positive, got %v", out[i])
		}
		if f := float32(out[i]); math.IsInf(float64(f), 0) {
			return nil, fieldError(p.name, key, "value %v overflows float32", out[i])
		}
	}
	return out, nil
}

func keyList(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b, _ := json.Marshal(keys)
	return string(b)
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func abbrev(b []byte) string {
	const max = 40
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// Channels is the number of tensor channels: 3, or 1 with the
// do_convert_grayscale extension.
func (c Config) Channels() int {
	if c.DoConvertGrayscale {
		return 1
	}
	return 3
}

// FixedSize reports the output height and width when they do not depend on
// the input image: a centre crop, or else an exact {"height","width"} resize.
func (c Config) FixedSize() (h, w int, ok bool) {
	if c.DoCenterCrop {
		return c.CropHeight, c.CropWidth, true
	}
	if c.DoResize && c.Size.ShortestEdge == 0 {
		return c.Size.Height, c.Size.Width, true
	}
	return 0, 0, false
}

// validate checks a Config built by hand rather than by ParseConfig.
func (c Config) validate() error {
	const name = "imageprep config"
	if c.DoResize {
		s := c.Size
		switch {
		case s.ShortestEdge != 0 && (s.Height != 0 || s.Width != 0):
			return errors.New("imageprep config: field size: set either ShortestEdge or Height/Width, not both")
		case s.ShortestEdge != 0:
			if err := checkDim(name, "size.shortest_edge", s.ShortestEdge); err != nil {
				return err
			}
		default:
			if err := checkDim(name, "size.height", s.Height); err != nil {
				return err
			}
			if err := checkDim(name, "size.width", s.Width); err != nil {
				return err
			}
		}
		if _, err := filterFor(c.Resample); err != nil {
			return fieldError(name, "resample", "%v", err)
		}
	}
	if c.DoCenterCrop {
		if err := checkDim(name, "crop_size.height", c.CropHeight); err != nil {
			return err
		}
		if err := checkDim(name, "crop_size.width", c.CropWidth); err != nil {
			return err
		}
	}
	if c.DoRescale && !(c.RescaleFactor > 0) {
		return fieldError(name, "rescale_factor", "must be positive, got %v", c.RescaleFactor)
	}
	if c.DoNormalize {
		ch := c.Channels()
		for _, v := range [][]float64{c.ImageMean, c.ImageStd} {
			if len(v) != 1 && len(v) != ch {
				return fmt.Errorf("%s: fields image_mean/image_std: need 1 or %d values each, got %d and %d", name, ch, len(c.ImageMean), len(c.ImageStd))
			}
		}
		for _, s := range c.ImageStd {
			if !(s > 0) {
				return fieldError(name, "image_std", "values must be positive, got %v", s)
			}
		}
	}
	return nil
}

// Identity returns the resolved settings as a JSON-compatible map with a
// deterministic content. Settings of disabled steps are omitted so that they
// cannot change a recipe.
func (c Config) Identity() map[string]any {
	m := map[string]any{
		"implementation":       Version,
		"layout":               "CHW",
		"dtype":                "float32",
		"channels":             c.Channels(),
		"do_convert_rgb":       c.DoConvertRGB,
		"do_convert_grayscale": c.DoConvertGrayscale,
		"do_resize":            c.DoResize,
		"do_center_crop":       c.DoCenterCrop,
		"do_rescale":           c.DoRescale,
		"do_normalize":         c.DoNormalize,
	}
	if c.DoResize {
		if c.Size.ShortestEdge > 0 {
			m["size"] = map[string]any{"shortest_edge": c.Size.ShortestEdge}
		} else {
			m["size"] = map[string]any{"height": c.Size.Height, "width": c.Size.Width}
		}
		m["resample"] = c.Resample
		if f, err := filterFor(c.Resample); err == nil {
			m["resample_name"] = f.name
		}
	}
	if c.DoCenterCrop {
		m["crop_size"] = map[string]any{"height": c.CropHeight, "width": c.CropWidth}
	}
	if c.DoRescale {
		m["rescale_factor"] = c.RescaleFactor
	}
	if c.DoNormalize {
		m["image_mean"] = append([]float64(nil), c.ImageMean...)
		m["image_std"] = append([]float64(nil), c.ImageStd...)
	}
	return m
}
