package nsfwjs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/imageprep"
)

// TestFilesDeterministic: converting the real package twice gives the same
// bytes for every file, and conversion.json lists their digests.
func TestFilesDeterministic(t *testing.T) {
	src := packageDir(t)
	ctx := context.Background()
	a, conv, err := Files(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Files(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 3 || len(b) != 3 {
		t.Fatalf("files %d, %d", len(a), len(b))
	}
	for n := range a {
		if !bytes.Equal(a[n], b[n]) {
			t.Errorf("%s differs between two conversions", n)
		}
	}
	var rec Conversion
	if err := json.Unmarshal(a[ConversionFile], &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Files["model.onnx"] != digest(a["model.onnx"]) || rec.Files["preprocessor_config.json"] != digest(a["preprocessor_config.json"]) || len(rec.Files) != 2 {
		t.Errorf("conversion.json files %v", rec.Files)
	}
	if rec.Source.Files[modelModule] != pinned[modelModule] || rec.Source.Files[weightModule] != pinned[weightModule] || conv.Model.Dim != Dim {
		t.Errorf("conversion record %+v", rec)
	}
	if n := len(a["model.onnx"]); n < 8<<20 || n > 20<<20 {
		t.Errorf("model.onnx is %d bytes; MobileNetV2's 3.5 M float32 parameters take about 14 MB", n)
	}
}

// TestPreprocessorConfig: the written configuration resolves to exactly
// nsfwjs's input pipeline for 224×224 images.
func TestPreprocessorConfig(t *testing.T) {
	c, err := imageprep.ParseConfig([]byte(PreprocessorConfig), "preprocessor_config.json")
	if err != nil {
		t.Fatal(err)
	}
	if h, w, ok := c.FixedSize(); !ok || h != Size || w != Size || c.Channels() != 3 || c.DoNormalize || !c.DoRescale || c.RescaleFactor != 1.0/255 || c.Resample != 2 {
		t.Fatalf("config %+v", c)
	}
}

// TestFilesRejects: files that are not nsfwjs@4.4.0's fail with ErrPackage
// naming the file, before anything is converted.
func TestFilesRejects(t *testing.T) {
	write := func(files map[string]string) string {
		dir := t.TempDir()
		for n, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(n))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(body), 0o644)
		}
		return dir
	}
	good := `{"name":"nsfwjs","version":"4.4.0"}`
	cases := []struct {
		name  string
		files map[string]string
		msg   string
	}{
		{"missing model", map[string]string{packageJSON: good}, "model.min.js"},
		{"other version", map[string]string{packageJSON: `{"name":"nsfwjs","version":"4.3.0"}`, modelModule: "x", weightModule: "y"}, `names "nsfwjs"@"4.3.0"`},
		{"other bytes", map[string]string{packageJSON: good, modelModule: "x", weightModule: "y"}, "want sha256:"},
	}
	for _, c := range cases {
		dir := write(c.files)
		_, _, err := Files(context.Background(), dir)
		if !errors.Is(err, ErrPackage) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: error %v, want ErrPackage naming %s with %q", c.name, err, dir, c.msg)
		}
	}
}
