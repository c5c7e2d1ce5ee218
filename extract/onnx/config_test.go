package onnx

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/imageprep"
)

func TestResolveLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libonnxruntime.so.1")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope.so")
	cases := []struct {
		name, configured, env string
		want                  string
		wantErr               string
	}{
		{"configured wins over env", lib, missing, lib, ""},
		{"env when not configured", "", lib, lib, ""},
		{"configured must exist", missing, lib, "", "ONNX Runtime library not found (configured path: " + missing + ")"},
		{"env must exist", "", missing, "", "ONNX Runtime library not found (ONNXRUNTIME_LIB: " + missing + ")"},
		{"bare name left to the loader", "libonnxruntime.so", "", "libonnxruntime.so", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(LibraryEnv, c.env)
			got, err := ResolveLibrary(c.configured)
			if c.wantErr != "" {
				var nf *LibraryNotFoundError
				if !errors.As(err, &nf) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error = %v, want %q", err, c.wantErr)
				}
				for _, hint := range []string{"onnxruntime_library", "--onnxruntime-lib", "ONNXRUNTIME_LIB", "onnxruntime-node"} {
					if !strings.Contains(err.Error(), hint) {
						t.Errorf("error does not say how to provide the library (%s): %v", hint, err)
					}
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ResolveLibrary(%q) = %q, %v; want %q", c.configured, got, err, c.want)
			}
		})
	}
}

func TestPool(t *testing.T) {
	// 2 rows × 3 positions × 2 hidden.
	data := []float32{
		1, 2, 3, 4, 5, 6,
		-1, 0, 1, 0, 100, 100,
	}
	mask := []int64{1, 1, 0, 1, 1, 0}
	cases := []struct {
		mode string
		mask []int64
		want []float32
	}{
		{PoolCLS, nil, []float32{1, 2, -1, 0}},
		{PoolMean, nil, []float32{3, 4, 100.0 / 3, 100.0 / 3}},
		{PoolMean, mask, []float32{2, 3, 0, 0}},
	}
	for _, c := range cases {
		got, err := pool(data, 2, 3, 2, c.mode, c.mask)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("pool(%s, mask=%v) = %v, %v; want %v", c.mode, c.mask != nil, got, err, c.want)
		}
	}
	if _, err := pool(data, 2, 3, 2, PoolMean, []int64{0, 0, 0, 1, 1, 1}); err == nil || !strings.Contains(err.Error(), "row 0 has no unmasked positions") {
		t.Errorf("all-masked row: %v", err)
	}
}

func TestNormalizeRows(t *testing.T) {
	v := []float32{3, 4, 0, 0, 0, 0, 1, 0}
	normalizeRows(v, 2)
	want := []float32{0.6, 0.8, 0, 0, 0, 0, 1, 0}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("normalizeRows = %v, want %v", v, want)
	}
}

func TestPickOutput(t *testing.T) {
	outs := []TensorInfo{{Name: "last_hidden_state", Type: "float32", Shape: []int64{-1, -1, 4}}, {Name: "pooler_output", Type: "float32", Shape: []int64{-1, 4}}}
	cases := []struct {
		configured string
		defaults   []string
		want, err  string
	}{
		{"", []string{"text_embeds", "pooler_output"}, "pooler_output", ""},
		{"last_hidden_state", []string{"pooler_output"}, "last_hidden_state", ""},
		{"logits", nil, "", `model has no output "logits" (outputs: last_hidden_state float32[?,?,4], pooler_output float32[?,4])`},
		{"", []string{"image_embeds"}, "", "model has none of the outputs image_embeds; name one with the output option"},
	}
	for _, c := range cases {
		got, err := pickOutput(outs, c.configured, c.defaults...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("pickOutput(%q) error = %v, want %q", c.configured, err, c.err)
			}
			continue
		}
		if err != nil || got.Name != c.want {
			t.Errorf("pickOutput(%q) = %v, %v; want %s", c.configured, got, err, c.want)
		}
	}
	single := []TensorInfo{{Name: "Plus214_Output_0", Shape: []int64{1, 10}}}
	if got, err := pickOutput(single, "", "image_embeds", "pooler_output"); err != nil || got.Name != "Plus214_Output_0" {
		t.Errorf("single output: %v, %v", got, err)
	}
}

func TestContextLengthFromConfig(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		json string
		want int
	}{
		{`{"model_type":"clip","text_config":{"max_position_embeddings":77}}`, 77},
		{`{"max_position_embeddings":512}`, 512},
		{`{"embed_dim":512,"text_cfg":{"context_length":64}}`, 64},
		{`{"model_cfg":{"text_cfg":{"context_length":32}}}`, 32},
		{`{"model_type":"siglip"}`, 0},
	}
	for i, c := range cases {
		p := filepath.Join(dir, "config.json")
		os.WriteFile(p, []byte(c.json), 0o644)
		got, err := contextLengthFromConfig(p)
		if err != nil || got != c.want {
			t.Errorf("case %d: %d, %v; want %d", i, got, err, c.want)
		}
	}
	if n, err := contextLengthFromConfig(""); n != 0 || err != nil {
		t.Errorf("absent config: %d, %v", n, err)
	}
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{"), 0o644)
	if _, err := contextLengthFromConfig(filepath.Join(dir, "bad.json")); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("malformed config: %v", err)
	}
}

func TestDualLayout(t *testing.T) {
	touch := func(t *testing.T, dir string, files ...string) {
		for _, f := range files {
			p := filepath.Join(dir, f)
			os.MkdirAll(filepath.Dir(p), 0o755)
			content := []byte(f) // distinct contents, distinct digests
			if strings.HasSuffix(f, ".onnx") {
				content = nil // an empty ModelProto: no external data to look for
			}
			if err := os.WriteFile(p, content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("hugging face onnx/", func(t *testing.T) {
		dir := t.TempDir()
		touch(t, dir, "onnx/text_model.onnx", "onnx/vision_model.onnx", "tokenizer.json", "preprocessor_config.json", "config.json", "tokenizer_config.json")
		l, err := dualLayout(DualEncoderConfig{Name: "c", ModelDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if l.kind != layoutHF || l.textModel != filepath.Join(dir, "onnx/text_model.onnx") || l.config == "" {
			t.Fatalf("layout = %+v", l)
		}
		ids, err := identities(l.files())
		if err != nil {
			t.Fatal(err)
		}
		// sha256("tokenizer.json"): the file's content is its name here.
		if ids["tokenizer"] != "sha256:"+sha256Hex("tokenizer.json") || ids["tokenizer_config"] == nil || len(ids) != 6 {
			t.Fatalf("identities = %v", ids)
		}
	})
	t.Run("openclip", func(t *testing.T) {
		dir := t.TempDir()
		touch(t, dir, "textual/model.onnx", "visual/model.onnx", "textual/tokenizer.json", "visual/preprocess_cfg.json", "config.json")
		l, err := dualLayout(DualEncoderConfig{Name: "c", ModelDir: dir})
		if err != nil || l.kind != layoutOpenCLIP || l.tokenizer != filepath.Join(dir, "textual/tokenizer.json") {
			t.Fatalf("layout = %+v, %v", l, err)
		}
	})
	t.Run("missing vision model", func(t *testing.T) {
		dir := t.TempDir()
		touch(t, dir, "text_model.onnx", "tokenizer.json", "preprocessor_config.json")
		_, err := dualLayout(DualEncoderConfig{Name: "c", ModelDir: dir})
		want := "extractor c: vision model not found (looked for " + filepath.Join(dir, "vision_model.onnx") + ", " + filepath.Join(dir, "onnx/vision_model.onnx") + ")"
		if err == nil || err.Error() != want {
			t.Fatalf("error = %v\nwant %s", err, want)
		}
	})
	t.Run("explicit model path", func(t *testing.T) {
		dir := t.TempDir()
		touch(t, dir, "towers/t.onnx", "vision_model.onnx", "tokenizer.json", "preprocessor_config.json")
		l, err := dualLayout(DualEncoderConfig{Name: "c", ModelDir: dir, TextModel: "towers/t.onnx"})
		if err != nil || l.textModel != filepath.Join(dir, "towers/t.onnx") {
			t.Fatalf("layout = %+v, %v", l, err)
		}
	})
}

func TestCheckCommon(t *testing.T) {
	cases := []struct {
		name, dir, padding, pooling string
		batch                       int
		rt                          Runtime
		want                        string
	}{
		{"x", "", "", "", 0, Runtime{}, "extractor x: model_dir is required"},
		{"x", "d", "right", "", 0, Runtime{}, `padding must be max_length or longest, got "right"`},
		{"x", "d", "", "max", 0, Runtime{}, `pooling must be cls or mean, got "max"`},
		{"x", "d", "", "", -1, Runtime{}, "batch_size must be ≥ 1"},
		{"x", "d", "", "", 0, Runtime{ExecutionProvider: "tpu"}, `execution_provider must be cpu or cuda, got "tpu"`},
		{"x", "d", "", "", 0, Runtime{IntraOpThreads: -2}, "intra_op_threads must be ≥ 0"},
	}
	for _, c := range cases {
		err := checkCommon(c.name, c.dir, c.padding, c.pooling, c.batch, c.rt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("checkCommon(%+v) = %v, want %q", c, err, c.want)
		}
	}
	if err := checkCommon("x", "d", PadLongest, PoolMean, 4, Runtime{ExecutionProvider: "cuda", IntraOpThreads: 2}); err != nil {
		t.Errorf("valid settings rejected: %v", err)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// An OpenCLIP preprocess_cfg.json maps onto the Hugging Face pipeline it
// describes: shortest-edge resize + centre crop, or a squash to the size.
func TestOpenCLIPPreprocessor(t *testing.T) {
	dir := t.TempDir()
	hfPath := filepath.Join(dir, "preprocessor_config.json")
	os.WriteFile(hfPath, []byte(`{"do_resize": true, "size": {"shortest_edge": 224}, "resample": 3,
		"do_center_crop": true, "crop_size": {"height": 224, "width": 224}, "do_rescale": true,
		"rescale_factor": 0.00392156862745098, "do_normalize": true,
		"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
		"do_convert_rgb": true}`), 0o644)
	hf, err := imageprep.LoadConfig(hfPath)
	if err != nil {
		t.Fatal(err)
	}
	ocPath := filepath.Join(dir, "preprocess_cfg.json")
	os.WriteFile(ocPath, []byte(`{"size": [224, 224], "mode": "RGB", "mean": [0.48145466, 0.4578275, 0.40821073],
		"std": [0.26862954, 0.26130258, 0.27577711], "interpolation": "bicubic", "resize_mode": "shortest", "fill_color": 0}`), 0o644)
	oc, err := openCLIPPreprocessor(ocPath)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(oc.Identity(), hf.Identity()) {
		t.Errorf("OpenCLIP config %v\n differs from the equivalent HF config %v", oc.Identity(), hf.Identity())
	}
	os.WriteFile(ocPath, []byte(`{"size": 256, "mean": [0.5], "std": [0.5], "interpolation": "bilinear", "resize_mode": "squash"}`), 0o644)
	oc, err = openCLIPPreprocessor(ocPath)
	if err != nil {
		t.Fatal(err)
	}
	if h, w, ok := oc.FixedSize(); !ok || h != 256 || w != 256 {
		t.Errorf("squash: fixed size %d×%d %v", h, w, ok)
	}
	for _, c := range []struct{ json, want string }{
		{`{"size": 224, "mean": [0.5], "std": [0.5], "interpolation": "lanczos"}`, `interpolation "lanczos" is not supported`},
		{`{"size": 224, "mean": [0.5], "std": [0.5], "resize_mode": "longest"}`, `resize_mode "longest" is not supported`},
		{`{"size": [224, 160], "mean": [0.5], "std": [0.5]}`, "needs a square size"},
		{`{"size": "big"}`, "field size must be"},
		{`{"size": 224, "mode": "L", "mean": [0.5], "std": [0.5]}`, `mode "L" is not supported`},
	} {
		os.WriteFile(ocPath, []byte(c.json), 0o644)
		if _, err := openCLIPPreprocessor(ocPath); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), ocPath) {
			t.Errorf("%s: error %v, want %q naming the file", c.json, err, c.want)
		}
	}
}
