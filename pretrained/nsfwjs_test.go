package pretrained

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
	"github.com/vertebrae-eval/vertebrae/pretrained/nsfwjs"
)

// TestPrepareNSFWJSDeterministic: `models prepare` of the MobileNetV2
// backbone writes byte-identical directories on two runs, with its licence
// next to the model and the SHA-256 of every file in the manifest.
func TestPrepareNSFWJSDeterministic(t *testing.T) {
	_, ok := Lookup(NSFWJSMobileNetV2)
	if !ok {
		t.Fatal("the nsfwjs preparer is not registered")
	}
	from := modelstest.NPMDir(t)
	ctx := context.Background()
	var dirs [2]string
	var mans [2]*Manifest
	for i := range dirs {
		dirs[i] = t.TempDir()
		m, err := Prepare(ctx, dirs[i], from, []string{NSFWJSMobileNetV2})
		if err != nil {
			t.Fatal(err)
		}
		mans[i] = m
	}
	e := mans[0].Models[0]
	var paths []string
	for _, f := range e.Files {
		paths = append(paths, f.Path)
		b, err := os.ReadFile(filepath.Join(dirs[0], filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if f.SHA256 != hex.EncodeToString(sum[:]) || f.Size != int64(len(b)) {
			t.Errorf("%s: manifest %s/%d, file %x/%d", f.Path, f.SHA256, f.Size, sum, len(b))
		}
		again, err := os.ReadFile(filepath.Join(dirs[1], filepath.FromSlash(f.Path)))
		if err != nil || !bytes.Equal(b, again) {
			t.Errorf("%s differs between two runs (%v)", f.Path, err)
		}
	}
	want := "nsfwjs-mobilenet-v2/LICENSE nsfwjs-mobilenet-v2/conversion.json nsfwjs-mobilenet-v2/model.onnx nsfwjs-mobilenet-v2/preprocessor_config.json"
	if strings.Join(paths, " ") != want {
		t.Fatalf("files %v, want %s", paths, want)
	}
	if e.Licence != "MIT" || e.Package != "nsfwjs@4.4.0" || e.TarballSHA256 != nsfwjs.TarballSHA256 ||
		e.TarballIntegrity != nsfwjsMobileNet.Integrity {
		t.Errorf("entry %+v", e)
	}
	m0, _ := os.ReadFile(filepath.Join(dirs[0], ManifestFile))
	m1, _ := os.ReadFile(filepath.Join(dirs[1], ManifestFile))
	if !bytes.Equal(m0, m1) {
		t.Error("manifest.json differs between two runs")
	}
	if _, err := Verify(dirs[0], NSFWJSMobileNetV2); err != nil {
		t.Fatal(err)
	}
	lic := filepath.Join(dirs[0], NSFWJSMobileNetV2, "LICENSE")
	if b, _ := os.ReadFile(lic); !bytes.Contains(b, []byte("MIT License")) {
		t.Errorf("LICENSE: %.60s", b)
	}
	// A changed file no longer verifies.
	os.WriteFile(filepath.Join(dirs[0], NSFWJSMobileNetV2, "preprocessor_config.json"), []byte("{}"), 0o644)
	if _, err := Verify(dirs[0], NSFWJSMobileNetV2); err == nil || !strings.Contains(err.Error(), "differs from the manifest") {
		t.Fatalf("tampered file: %v", err)
	}
}
