package compress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/confval"
)

// Method names (SPEC §8.1).
const (
	MethodNone                     = "none"
	MethodPCA                      = "pca"
	MethodTruncatedSVD             = "truncated_svd"
	MethodGaussianRandomProjection = "gaussian_random_projection"
	MethodSparseRandomProjection   = "sparse_random_projection"
	MethodPrefixTruncate           = "prefix_truncate"
	MethodQuantize                 = "quantize"
)

// Quantize precisions (SPEC §8.3).
const (
	PrecisionFloat16 = "float16"
	PrecisionInt8    = "int8"
	PrecisionUint8   = "uint8"
)

// DefaultRandomState is the default seed of the randomised methods.
const DefaultRandomState = 42

var methods = []string{
	MethodNone, MethodPCA, MethodTruncatedSVD, MethodGaussianRandomProjection,
	MethodSparseRandomProjection, MethodPrefixTruncate, MethodQuantize,
}

// Config is one `compression` entry (SPEC §8.1). Pointer fields are null when
// unset; Enabled nil means "true unless method is none".
type Config struct {
	Method           string   `json:"method"`
	Enabled          *bool    `json:"enabled"`
	NComponents      *int     `json:"n_components"`
	PreserveVariance *float64 `json:"preserve_variance"`
	Whiten           bool     `json:"whiten"`
	Precision        *string  `json:"precision"`
	AssumeMatryoshka bool     `json:"assume_matryoshka"`
	RandomState      int      `json:"random_state"`
	DType            *string  `json:"dtype"`
}

// Default returns the defaults of SPEC §8.1 (method none).
func Default() Config {
	return Config{Method: MethodNone, RandomState: DefaultRandomState}
}

// IsEnabled reports whether the configuration compresses anything: an
// explicit enabled=false, like method none, turns compression off.
func (c Config) IsEnabled() bool {
	if c.Method == MethodNone {
		return false
	}
	return c.Enabled == nil || *c.Enabled
}

// Clone returns a deep copy.
func (c Config) Clone() Config {
	if c.Enabled != nil {
		v := *c.Enabled
		c.Enabled = &v
	}
	if c.NComponents != nil {
		v := *c.NComponents
		c.NComponents = &v
	}
	if c.PreserveVariance != nil {
		v := *c.PreserveVariance
		c.PreserveVariance = &v
	}
	if c.Precision != nil {
		v := *c.Precision
		c.Precision = &v
	}
	if c.DType != nil {
		v := *c.DType
		c.DType = &v
	}
	return c
}

// ConfigError is an invalid compression configuration value or type. Its
// message starts "CompressionConfig.<field>" (SPEC §12); the CLI maps it to
// exit code 2.
type ConfigError struct {
	Field string // JSON field name, "" for an unknown key
	Msg   string
}

func (e *ConfigError) Error() string { return e.Msg }

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// usesNComponents reports whether n_components is a parameter of method.
func usesNComponents(method string) bool {
	switch method {
	case MethodPCA, MethodTruncatedSVD, MethodGaussianRandomProjection,
		MethodSparseRandomProjection, MethodPrefixTruncate:
		return true
	}
	return false
}

// randomised reports whether method draws from the seeded generator.
func randomised(method string) bool {
	switch method {
	case MethodTruncatedSVD, MethodGaussianRandomProjection, MethodSparseRandomProjection:
		return true
	}
	return false
}

// Validate checks the rules of SPEC §8.1, field by field in table order.
// random_state is accepted for every method: the CLI passes --compress-seed
// to every variant, and an int field cannot tell "given" from the default.
func (c Config) Validate() error {
	known := false
	for _, m := range methods {
		known = known || c.Method == m
	}
	if !known {
		return configErr("method", "CompressionConfig.method must be one of %s; got %q", strings.Join(methods, ", "), c.Method)
	}
	notValid := func(field string) error {
		return configErr(field, "CompressionConfig.%s is not valid for method %s", field, c.Method)
	}
	if c.NComponents != nil {
		if !usesNComponents(c.Method) {
			return notValid("n_components")
		}
		if *c.NComponents < 1 {
			return configErr("n_components", "CompressionConfig.n_components must be >= 1; got %d", *c.NComponents)
		}
	} else if usesNComponents(c.Method) && !(c.Method == MethodPCA && c.PreserveVariance != nil) {
		if c.Method == MethodPCA {
			return configErr("n_components", "CompressionConfig.n_components is required for method pca unless preserve_variance is set")
		}
		return configErr("n_components", "CompressionConfig.n_components is required for method %s", c.Method)
	}
	if c.PreserveVariance != nil {
		p := *c.PreserveVariance
		if c.Method != MethodPCA {
			return notValid("preserve_variance")
		}
		if !(p > 0 && p < 1) {
			return configErr("preserve_variance", "CompressionConfig.preserve_variance must be in (0, 1); got %v", p)
		}
		if c.NComponents != nil {
			return configErr("preserve_variance", "CompressionConfig.preserve_variance is exclusive with n_components; set only one")
		}
	}
	if c.Whiten && c.Method != MethodPCA {
		return notValid("whiten")
	}
	if c.Precision != nil {
		if c.Method != MethodQuantize {
			return notValid("precision")
		}
		switch *c.Precision {
		case PrecisionFloat16, PrecisionInt8, PrecisionUint8:
		default:
			return configErr("precision", "CompressionConfig.precision must be one of float16, int8, uint8; got %q", *c.Precision)
		}
	} else if c.Method == MethodQuantize {
		return configErr("precision", "CompressionConfig.precision is required for method quantize (float16, int8 or uint8)")
	}
	if c.AssumeMatryoshka && c.Method != MethodPrefixTruncate {
		return notValid("assume_matryoshka")
	}
	if c.DType != nil {
		if c.Method == MethodQuantize || c.Method == MethodNone {
			return notValid("dtype")
		}
		switch *c.DType {
		case "float16", "float32", "float64":
		default:
			return configErr("dtype", "CompressionConfig.dtype must be one of float16, float32, float64; got %q", *c.DType)
		}
	}
	return nil
}

// AsMap returns every field under its JSON name, nulls included (the form
// hashed by SPEC §10.1). enabled is written resolved (true/false) so that an
// omitted default and an explicit true hash the same.
func (c Config) AsMap() map[string]any {
	var nComp, pv, prec, dt any
	if c.NComponents != nil {
		nComp = *c.NComponents
	}
	if c.PreserveVariance != nil {
		pv = *c.PreserveVariance
	}
	if c.Precision != nil {
		prec = *c.Precision
	}
	if c.DType != nil {
		dt = *c.DType
	}
	return map[string]any{
		"method":            c.Method,
		"enabled":           c.IsEnabled(),
		"n_components":      nComp,
		"preserve_variance": pv,
		"whiten":            c.Whiten,
		"precision":         prec,
		"assume_matryoshka": c.AssumeMatryoshka,
		"random_state":      c.RandomState,
		"dtype":             dt,
	}
}

// Hash is the compression recipe hash of SPEC §10.2:
// H({"identity_schema": 2, "compression_config": AsMap()}).
func (c Config) Hash() (string, error) {
	h, err := canonjson.Hash(map[string]any{"identity_schema": 2, "compression_config": c.AsMap()})
	if err != nil {
		return "", fmt.Errorf("compression recipe hash: %w", err)
	}
	return h, nil
}

// ConfigFromMap builds a Config from decoded JSON/YAML (defaults for absent
// keys), reporting type errors and unknown keys, then validates it.
func ConfigFromMap(m map[string]any) (Config, error) {
	c := Default()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		var err error
		switch k {
		case "method":
			c.Method, err = asString(k, v)
		case "enabled":
			if v != nil {
				var b bool
				b, err = asBool(k, v)
				c.Enabled = &b
			}
		case "n_components":
			if v != nil {
				var n int
				n, err = asInt(k, v)
				c.NComponents = &n
			}
		case "preserve_variance":
			if v != nil {
				var f float64
				f, err = asFloat(k, v)
				c.PreserveVariance = &f
			}
		case "whiten":
			c.Whiten, err = asBool(k, v)
		case "precision":
			if v != nil {
				var s string
				s, err = asString(k, v)
				c.Precision = &s
			}
		case "assume_matryoshka":
			c.AssumeMatryoshka, err = asBool(k, v)
		case "random_state":
			c.RandomState, err = asInt(k, v)
		case "dtype":
			if v != nil {
				var s string
				s, err = asString(k, v)
				c.DType = &s
			}
		default:
			return c, configErr("", "CompressionConfig has no field %q", k)
		}
		if err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}

// ConfigFromJSON decodes a JSON object into a Config (see ConfigFromMap).
func ConfigFromJSON(data []byte) (Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return Config{}, configErr("", "CompressionConfig must be a JSON object: %v", err)
	}
	return ConfigFromMap(m)
}

func asString(field string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", configErr(field, "CompressionConfig.%s must be a string; got %s", field, confval.Describe(v))
	}
	return s, nil
}

func asBool(field string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, configErr(field, "CompressionConfig.%s must be a bool; got %s", field, confval.Describe(v))
	}
	return b, nil
}

func asInt(field string, v any) (int, error) {
	n, ok := confval.Int64(v)
	if !ok || n != int64(int(n)) {
		return 0, configErr(field, "CompressionConfig.%s must be an integer; got %s", field, confval.Describe(v))
	}
	return int(n), nil
}

func asFloat(field string, v any) (float64, error) {
	f, ok := confval.Float(v)
	if !ok {
		return 0, configErr(field, "CompressionConfig.%s must be a number; got %s", field, confval.Describe(v))
	}
	return f, nil
}

// specForms lists the CLI --compress forms (SPEC §6.3).
const specForms = "pca:K, pca-variance:P, truncated-svd:K, gaussian-rp:K, sparse-rp:K, prefix:K, prefix-matryoshka:K, quantize:float16|int8|uint8"

// ParseSpec parses a CLI --compress value. seed becomes random_state; whiten
// (--whiten) applies to the pca forms only and is ignored by the others.
func ParseSpec(spec string, seed int, whiten bool) (Config, error) {
	c := Default()
	c.RandomState = seed
	name, arg, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok || arg == "" {
		return c, configErr("method", "CompressionConfig.method: invalid compression spec %q; expected one of %s", spec, specForms)
	}
	count := func() error {
		n, err := strconv.Atoi(arg)
		if err != nil {
			return configErr("n_components", "CompressionConfig.n_components must be an integer; got %q in compression spec %q", arg, spec)
		}
		c.NComponents = &n
		return nil
	}
	var err error
	switch name {
	case "pca":
		c.Method, c.Whiten = MethodPCA, whiten
		err = count()
	case "pca-variance":
		c.Method, c.Whiten = MethodPCA, whiten
		p, perr := strconv.ParseFloat(arg, 64)
		if perr != nil {
			return c, configErr("preserve_variance", "CompressionConfig.preserve_variance must be a number; got %q in compression spec %q", arg, spec)
		}
		c.PreserveVariance = &p
	case "truncated-svd":
		c.Method = MethodTruncatedSVD
		err = count()
	case "gaussian-rp":
		c.Method = MethodGaussianRandomProjection
		err = count()
	case "sparse-rp":
		c.Method = MethodSparseRandomProjection
		err = count()
	case "prefix":
		c.Method = MethodPrefixTruncate
		err = count()
	case "prefix-matryoshka":
		c.Method, c.AssumeMatryoshka = MethodPrefixTruncate, true
		err = count()
	case "quantize":
		c.Method = MethodQuantize
		c.Precision = &arg
	default:
		return c, configErr("method", "CompressionConfig.method: invalid compression spec %q; expected one of %s", spec, specForms)
	}
	if err != nil {
		return c, err
	}
	return c, c.Validate()
}

// VariantName is the result name of an extractor under a compression
// configuration (SPEC §8.5). compressedDim is the fitted output width, used
// only when neither a precision nor n_components names the variant (pca with
// preserve_variance); pass 0 when it is not known.
func VariantName(extractorName string, cfg Config, compressedDim int) string {
	if !cfg.IsEnabled() {
		return extractorName
	}
	switch {
	case cfg.Precision != nil:
		return fmt.Sprintf("%s[%s_%s]", extractorName, cfg.Method, *cfg.Precision)
	case cfg.NComponents != nil:
		return fmt.Sprintf("%s[%s_%d]", extractorName, cfg.Method, *cfg.NComponents)
	case compressedDim > 0:
		return fmt.Sprintf("%s[%s_%d]", extractorName, cfg.Method, compressedDim)
	}
	return fmt.Sprintf("%s[%s]", extractorName, cfg.Method)
}
