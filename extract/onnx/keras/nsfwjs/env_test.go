package nsfwjs

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// packageDir unpacks nsfwjs-4.4.0.tgz from $VERTEBRAE_NPM_DIR (where
// .ci/run npm-packs the model packages) and returns its package/ root.
// Without the tarball the test is skipped, unless VERTEBRAE_REQUIRE_MODELS
// is set (CI), where it fails.
func packageDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("VERTEBRAE_NPM_DIR")
	tgz := filepath.Join(dir, Tarball)
	if _, err := os.Stat(tgz); dir == "" || err != nil {
		msg := "nsfwjs tarball not found: set VERTEBRAE_NPM_DIR to a directory holding " + Tarball + " (npm pack " + Package + "@" + Version + ")"
		if os.Getenv("VERTEBRAE_REQUIRE_MODELS") != "" {
			t.Fatal("VERTEBRAE_REQUIRE_MODELS is set but the " + msg)
		}
		t.Skip(msg)
	}
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := path.Clean(h.Name)
		if h.Typeflag != tar.TypeReg || !strings.HasPrefix(name, "package/") || (!strings.HasPrefix(name, "package/dist/models/mobilenet_v2/") && strings.Count(name, "/") > 1) {
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, "package")
}
