package compress

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	k := func(c Config, n int) Config { c.NComponents = &n; return c }
	m := func(method string) Config { c := Default(); c.Method = method; return c }
	cases := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"default", Default(), ""},
		{"pca", k(m("pca"), 8), ""},
		{"pca variance", func() Config { c := m("pca"); c.PreserveVariance = ptr(0.9); c.Whiten = true; return c }(), ""},
		{"quantize", func() Config { c := m("quantize"); c.Precision = ptr("uint8"); return c }(), ""},
		{"prefix matryoshka", func() Config { c := k(m("prefix_truncate"), 4); c.AssumeMatryoshka = true; return c }(), ""},
		{"dtype", func() Config { c := k(m("gaussian_random_projection"), 4); c.DType = ptr("float16"); return c }(), ""},
		{"disabled", func() Config { c := k(m("truncated_svd"), 4); c.Enabled = ptr(false); return c }(), ""},
		{"unknown method", m("umap"), `CompressionConfig.method must be one of none, pca, truncated_svd, gaussian_random_projection, sparse_random_projection, prefix_truncate, quantize; got "umap"`},
		{"n_components < 1", k(m("pca"), 0), "CompressionConfig.n_components must be >= 1; got 0"},
		{"n_components missing", m("sparse_random_projection"), "CompressionConfig.n_components is required for method sparse_random_projection"},
		{"pca n_components missing", m("pca"), "CompressionConfig.n_components is required for method pca"},
		{"n_components for quantize", func() Config { c := k(m("quantize"), 4); c.Precision = ptr("int8"); return c }(), "CompressionConfig.n_components is not valid for method quantize"},
		{"n_components for none", k(m("none"), 4), "CompressionConfig.n_components is not valid for method none"},
		{"variance range", func() Config { c := m("pca"); c.PreserveVariance = ptr(1.0); return c }(), "CompressionConfig.preserve_variance must be in (0, 1); got 1"},
		{"variance zero", func() Config { c := m("pca"); c.PreserveVariance = ptr(0.0); return c }(), "CompressionConfig.preserve_variance must be in (0, 1)"},
		{"variance with n", func() Config { c := k(m("pca"), 3); c.PreserveVariance = ptr(0.5); return c }(), "CompressionConfig.preserve_variance is exclusive with n_components"},
		{"variance other method", func() Config { c := k(m("truncated_svd"), 3); c.PreserveVariance = ptr(0.5); return c }(), "CompressionConfig.preserve_variance is not valid for method truncated_svd"},
		{"whiten", func() Config { c := k(m("truncated_svd"), 3); c.Whiten = true; return c }(), "CompressionConfig.whiten is not valid for method truncated_svd"},
		{"precision missing", m("quantize"), "CompressionConfig.precision is required for method quantize"},
		{"precision invalid", func() Config { c := m("quantize"); c.Precision = ptr("int4"); return c }(), `CompressionConfig.precision must be one of float16, int8, uint8; got "int4"`},
		{"precision other method", func() Config { c := k(m("pca"), 3); c.Precision = ptr("int8"); return c }(), "CompressionConfig.precision is not valid for method pca"},
		{"matryoshka", func() Config { c := k(m("pca"), 3); c.AssumeMatryoshka = true; return c }(), "CompressionConfig.assume_matryoshka is not valid for method pca"},
		{"dtype quantize", func() Config { c := m("quantize"); c.Precision = ptr("int8"); c.DType = ptr("float32"); return c }(), "CompressionConfig.dtype is not valid for method quantize"},
		{"dtype invalid", func() Config { c := k(m("pca"), 3); c.DType = ptr("bfloat16"); return c }(), `CompressionConfig.dtype must be one of float16, float32, float64; got "bfloat16"`},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want prefix %q", c.name, err, c.want)
		}
	}
}

func TestConfigFromMap(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal([]byte(`{"method": "pca", "n_components": 64, "whiten": true, "dtype": "float32", "random_state": 7, "enabled": null}`), &m); err != nil {
		t.Fatal(err)
	}
	c, err := ConfigFromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	if c.Method != "pca" || *c.NComponents != 64 || !c.Whiten || *c.DType != "float32" || c.RandomState != 7 || c.Enabled != nil || !c.IsEnabled() {
		t.Fatalf("config = %+v", c)
	}
	c, err = ConfigFromJSON([]byte(`{"method": "pca", "preserve_variance": 0.95}`))
	if err != nil || *c.PreserveVariance != 0.95 || c.RandomState != 42 {
		t.Fatalf("config = %+v, %v", c, err)
	}
	for _, bad := range []struct {
		in   string
		want string
	}{
		{`{"method": 3}`, "CompressionConfig.method must be a string; got number 3"},
		{`{"method": "pca", "n_components": 2.5}`, "CompressionConfig.n_components must be an integer; got number 2.5"},
		{`{"method": "pca", "n_components": "8"}`, `CompressionConfig.n_components must be an integer; got string "8"`},
		{`{"method": "pca", "preserve_variance": "high"}`, `CompressionConfig.preserve_variance must be a number`},
		{`{"method": "pca", "n_components": 2, "whiten": "yes"}`, "CompressionConfig.whiten must be a bool"},
		{`{"method": "pca", "n_components": 2, "enabled": 1}`, "CompressionConfig.enabled must be a bool"},
		{`{"method": "pca", "n_components": 2, "random_state": null}`, "CompressionConfig.random_state must be an integer; got null"},
		{`{"method": "pca", "n_components": 2, "components": 2}`, `CompressionConfig has no field "components"`},
		{`{"method": "quantize"}`, "CompressionConfig.precision is required"},
		{`[1]`, "CompressionConfig must be a JSON object"},
	} {
		_, err := ConfigFromJSON([]byte(bad.in))
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want prefix %q", bad.in, err, bad.want)
		}
	}
}

func TestAsMapAndHash(t *testing.T) {
	want := map[string]any{
		"method": "none", "enabled": false, "n_components": nil, "preserve_variance": nil,
		"whiten": false, "precision": nil, "assume_matryoshka": false, "random_state": 42, "dtype": nil,
	}
	if got := Default().AsMap(); !reflect.DeepEqual(got, want) {
		t.Fatalf("AsMap = %v", got)
	}
	a := cfgOf(MethodPCA, 8)
	b := a.Clone()
	b.Enabled = ptr(true) // the default, written out
	ha, err := a.Hash()
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := b.Hash()
	if ha != hb || len(ha) != 64 {
		t.Fatalf("hashes %q %q", ha, hb)
	}
	b.RandomState = 1
	if hc, _ := b.Hash(); hc == ha {
		t.Fatal("random_state does not change the hash")
	}
	// The map round-trips through ConfigFromMap.
	back, err := ConfigFromMap(a.AsMap())
	if err != nil || !reflect.DeepEqual(back.AsMap(), a.AsMap()) {
		t.Fatalf("round trip: %v, %v", back.AsMap(), err)
	}
}

func TestParseSpec(t *testing.T) {
	cases := []struct {
		spec  string
		whole map[string]any // expected AsMap subset
	}{
		{"pca:64", map[string]any{"method": "pca", "n_components": 64, "whiten": true, "random_state": 5}},
		{"pca-variance:0.95", map[string]any{"method": "pca", "preserve_variance": 0.95, "n_components": nil, "whiten": true}},
		{"truncated-svd:32", map[string]any{"method": "truncated_svd", "n_components": 32, "whiten": false, "random_state": 5}},
		{"gaussian-rp:16", map[string]any{"method": "gaussian_random_projection", "n_components": 16, "whiten": false}},
		{"sparse-rp:16", map[string]any{"method": "sparse_random_projection", "n_components": 16}},
		{"prefix:256", map[string]any{"method": "prefix_truncate", "n_components": 256, "assume_matryoshka": false}},
		{"prefix-matryoshka:256", map[string]any{"method": "prefix_truncate", "n_components": 256, "assume_matryoshka": true}},
		{"quantize:float16", map[string]any{"method": "quantize", "precision": "float16", "n_components": nil}},
		{"quantize:int8", map[string]any{"method": "quantize", "precision": "int8"}},
		{"quantize:uint8", map[string]any{"method": "quantize", "precision": "uint8", "random_state": 5}},
	}
	for _, c := range cases {
		cfg, err := ParseSpec(c.spec, 5, true)
		if err != nil {
			t.Errorf("%s: %v", c.spec, err)
			continue
		}
		m := cfg.AsMap()
		for k, v := range c.whole {
			if !reflect.DeepEqual(m[k], v) {
				t.Errorf("%s: %s = %v, want %v", c.spec, k, m[k], v)
			}
		}
	}
	for _, bad := range []struct{ spec, want string }{
		{"pca", "CompressionConfig.method: invalid compression spec"},
		{"pca:", "CompressionConfig.method: invalid compression spec"},
		{"umap:3", "CompressionConfig.method: invalid compression spec"},
		{"pca:x", `CompressionConfig.n_components must be an integer; got "x"`},
		{"pca:0", "CompressionConfig.n_components must be >= 1"},
		{"pca-variance:1.5", "CompressionConfig.preserve_variance must be in (0, 1)"},
		{"pca-variance:abc", "CompressionConfig.preserve_variance must be a number"},
		{"quantize:int4", "CompressionConfig.precision must be one of float16, int8, uint8"},
	} {
		_, err := ParseSpec(bad.spec, 42, false)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("%s: err = %v, want prefix %q", bad.spec, err, bad.want)
		}
	}
}

func TestVariantName(t *testing.T) {
	spec := func(s string) Config {
		c, err := ParseSpec(s, 42, false)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	off := cfgOf(MethodPCA, 3)
	off.Enabled = ptr(false)
	cases := []struct {
		cfg  Config
		dim  int
		want string
	}{
		{Default(), 128, "x"},
		{off, 3, "x"},
		{spec("pca:3"), 3, "x[pca_3]"}, // a skipped no-op keeps its suffix
		{spec("pca-variance:0.9"), 17, "x[pca_17]"},
		{spec("pca-variance:0.9"), 0, "x[pca]"},
		{spec("truncated-svd:64"), 64, "x[truncated_svd_64]"},
		{spec("gaussian-rp:8"), 8, "x[gaussian_random_projection_8]"},
		{spec("sparse-rp:8"), 8, "x[sparse_random_projection_8]"},
		{spec("prefix:256"), 256, "x[prefix_truncate_256]"},
		{spec("prefix-matryoshka:256"), 256, "x[prefix_truncate_256]"},
		{spec("quantize:float16"), 768, "x[quantize_float16]"},
		{spec("quantize:int8"), 768, "x[quantize_int8]"},
		{spec("quantize:uint8"), 768, "x[quantize_uint8]"},
	}
	for _, c := range cases {
		if got := VariantName("x", c.cfg, c.dim); got != c.want {
			t.Errorf("%v: %q, want %q", c.cfg.AsMap(), got, c.want)
		}
	}
}
