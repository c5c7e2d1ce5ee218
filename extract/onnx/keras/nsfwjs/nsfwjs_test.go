package nsfwjs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract/imageprep"
)

// TestPrepareDeterministic: two runs on the real tarball write
// byte-identical directories, and manifest.json lists the SHA-256 of every
// other file in it (and of the tarball files it used).
func TestPrepareDeterministic(t *testing.T) {
	tgz := tarballPath(t)
	ctx := context.Background()
	root := t.TempDir()
	var dirs [2]string
	for i := range dirs {
		dirs[i] = filepath.Join(root, "run"+string(rune('a'+i)), DirName)
		if _, err := Prepare(ctx, tgz, dirs[i]); err != nil {
			t.Fatal(err)
		}
	}
	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	got := names(dirs[0])
	if strings.Join(got, " ") != "LICENSE manifest.json model.onnx preprocessor_config.json" {
		t.Fatalf("files %v", got)
	}
	if strings.Join(names(dirs[1]), " ") != strings.Join(got, " ") {
		t.Fatalf("second run wrote %v", names(dirs[1]))
	}
	for _, n := range got {
		a, _ := os.ReadFile(filepath.Join(dirs[0], n))
		b, _ := os.ReadFile(filepath.Join(dirs[1], n))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", n)
		}
	}
	var m Manifest
	mj, _ := os.ReadFile(filepath.Join(dirs[0], "manifest.json"))
	if err := json.Unmarshal(mj, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 3 {
		t.Fatalf("manifest files %v", m.Files)
	}
	for n, d := range m.Files {
		b, err := os.ReadFile(filepath.Join(dirs[0], n))
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		if d != "sha256:"+hex.EncodeToString(s[:]) {
			t.Errorf("manifest %s = %s, file hashes to %x", n, d, s)
		}
	}
	if m.Source.TarballSHA256 != TarballSHA256 || m.Source.NPM != "nsfwjs@4.4.0" || len(m.Source.Files) != 3 || m.License != "MIT" {
		t.Errorf("manifest source %+v licence %q", m.Source, m.License)
	}
	lic, _ := os.ReadFile(filepath.Join(dirs[0], "LICENSE"))
	if !bytes.Contains(lic, []byte("MIT License")) || !bytes.Contains(lic, []byte("Infinite Red")) {
		t.Errorf("LICENSE is not nsfwjs's MIT licence: %.80s", lic)
	}
	// Re-preparing over an existing directory replaces it with the same bytes.
	if _, err := Prepare(ctx, tgz, dirs[0]); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dirs[0], "model.onnx"))
	b, _ := os.ReadFile(filepath.Join(dirs[1], "model.onnx"))
	if !bytes.Equal(a, b) {
		t.Fatal("re-preparing changed model.onnx")
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

func fakeTarball(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	p := filepath.Join(t.TempDir(), "nsfwjs-4.4.0.tgz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrepareRejects: anything but the pinned tarball fails with
// ErrTarball naming the file, and a failed run leaves an existing model
// directory untouched.
func TestPrepareRejects(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), DirName)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "model.onnx"), []byte("old"), 0o644)
	complete := fakeTarball(t, map[string]string{
		packageJSON: `{"name":"nsfwjs","version":"4.4.0"}`, licenseFile: "MIT", modelModule: "x",
	})
	notGzip := filepath.Join(t.TempDir(), "x.tgz")
	os.WriteFile(notGzip, []byte("plain"), 0o644)
	cases := []struct{ name, path, msg string }{
		{"other bytes", complete, "has SHA-256"},
		{"missing files", fakeTarball(t, map[string]string{packageJSON: "{}"}), "has no " + modelModule},
		{"not gzip", notGzip, "not the nsfwjs@4.4.0 npm tarball"},
	}
	for _, c := range cases {
		_, err := Prepare(ctx, c.path, dir)
		if !errors.Is(err, ErrTarball) || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: error %v, want ErrTarball naming %s with %q", c.name, err, c.path, c.msg)
		}
	}
	if _, err := Prepare(ctx, filepath.Join(t.TempDir(), "absent.tgz"), dir); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent tarball: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "model.onnx")); string(b) != "old" {
		t.Fatalf("a failed run changed the directory: %q", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Fatalf("a failed run left files next to the directory: %v", entries)
	}
}
