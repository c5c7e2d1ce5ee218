package location_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/blobstore"
	"github.com/vertebrae-eval/vertebrae/store/local"
	"github.com/vertebrae-eval/vertebrae/store/location"
	"github.com/vertebrae-eval/vertebrae/store/mem"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

var ctx = context.Background()

func TestDispatch(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	// Credentials that parse, so opening gs:// searches no further (no
	// metadata server); nothing is requested with them.
	adc := filepath.Join(dir, "adc.json")
	os.WriteFile(adc, []byte(`{"type":"authorized_user","client_id":"id","client_secret":"s","refresh_token":"t"}`), 0o600)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adc)
	cases := []struct {
		uri  string
		want string // the backend type
		root string // local: the expected root
	}{
		{"cache", "local", filepath.Join(dir, "cache")},
		{"./rel/cache", "local", filepath.Join(dir, "rel", "cache")},
		{location.DefaultURI, "local", filepath.Join(dir, ".vertebrae_cache")},
		{filepath.Join(dir, "abs"), "local", filepath.Join(dir, "abs")},
		{"file://" + filepath.Join(dir, "f"), "local", filepath.Join(dir, "f")},
		{"file://localhost" + filepath.Join(dir, "g"), "local", filepath.Join(dir, "g")},
		{"FILE://" + filepath.Join(dir, "h"), "local", filepath.Join(dir, "h")},
		{"dir:with:colons", "local", filepath.Join(dir, "dir:with:colons")},
		{"mem://", "mem", ""},
		{"mem://x", "mem", ""},
		{"s3://bucket/prefix?region=us-east-1", "blob", ""},
		{"gs://bucket/prefix", "blob", ""},
	}
	for _, tc := range cases {
		s, err := location.Open(ctx, tc.uri)
		if err != nil {
			t.Errorf("Open(%q): %v", tc.uri, err)
			continue
		}
		var got string
		switch b := s.(type) {
		case *local.Store:
			got = "local"
			if b.Root() != tc.root {
				t.Errorf("Open(%q) root = %q, want %q", tc.uri, b.Root(), tc.root)
			}
		case *mem.Store:
			got = "mem"
		case *blobstore.Store:
			got = "blob"
		default:
			got = "?"
		}
		if got != tc.want {
			t.Errorf("Open(%q) is a %s store, want %s", tc.uri, got, tc.want)
		}
		s.Close()
	}
}

func TestUnsupported(t *testing.T) {
	for _, uri := range []string{"ftp://host/x", "http://example.com/cache", "azblob://c", "hdfs://n/p", "https://user:pa55w0rd@host/x"} {
		_, err := location.Open(ctx, uri)
		var ue *store.UnsupportedURIError
		if !errors.As(err, &ue) {
			t.Errorf("Open(%q) error = %v, want *store.UnsupportedURIError", uri, err)
			continue
		}
		if !strings.Contains(err.Error(), "Unsupported artifact store URI") {
			t.Errorf("Open(%q) error %q lacks the SPEC §10.5 wording", uri, err)
		}
		if strings.Contains(err.Error(), "pa55w0rd") {
			t.Errorf("error leaks a password: %q", err)
		}
	}
}

func TestBadURIs(t *testing.T) {
	for _, tc := range []struct{ uri, want string }{
		{"", "empty artifact store URI"},
		{"file://relative/dir", "absolute path"},
		{"file:///abs?x=1", "no query"},
		{"file://", "no path"},
		{"s3://", "no bucket"},
	} {
		_, err := location.Open(ctx, tc.uri)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) error = %v, want %q", tc.uri, err, tc.want)
		}
	}
}

// Two opens of mem://x share objects (tests reopen a store by URI), other
// names do not, and Close does not drop the objects.
func TestMemShared(t *testing.T) {
	a, _ := location.Open(ctx, "mem://shared-test")
	if err := a.Put(ctx, "k", strings.NewReader("v"), 1); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, _ := location.Open(ctx, "mem://shared-test")
	rc, err := b.Get(ctx, "k")
	if err != nil {
		t.Fatalf("second open of mem://shared-test: %v", err)
	}
	got, _ := io.ReadAll(rc)
	if string(got) != "v" {
		t.Fatalf("got %q", got)
	}
	other, _ := location.Open(ctx, "mem://other-test")
	if _, err := other.Stat(ctx, "k"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("mem://other-test sees mem://shared-test's object: %v", err)
	}
}

// A file:// URI and the plain path are the same store.
func TestFileURIIsPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	a, _ := location.Open(ctx, dir)
	if err := a.Put(ctx, "x/y", strings.NewReader("z"), 1); err != nil {
		t.Fatal(err)
	}
	b, err := location.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.Stat(ctx, "x/y"); err != nil || n != 1 {
		t.Fatalf("Stat through file:// = %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x", "y")); err != nil {
		t.Fatal(err)
	}
}

// Through Open, an s3:// URI reaches the fake server (end to end: query
// parameters, credentials from the environment).
func TestOpenS3(t *testing.T) {
	uri := storetest.FakeS3(t)
	uri, _ = storetest.WithSubPrefix(uri, "p")
	s, err := location.Open(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put(ctx, "a", strings.NewReader("b"), 1); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Stat(ctx, "a"); err != nil || n != 1 {
		t.Fatalf("Stat = %d, %v", n, err)
	}
}

func TestWithSubPrefix(t *testing.T) {
	for _, tc := range []struct{ in, sub, want string }{
		{"s3://b?region=x", "q", "s3://b/q?region=x"},
		{"s3://b/p?region=x&endpoint=http://127.0.0.1:9", "q/r", "s3://b/p/q/r?region=x&endpoint=http://127.0.0.1:9"},
		{"gs://b/p/", "/q/", "gs://b/p/q"},
	} {
		got, err := storetest.WithSubPrefix(tc.in, tc.sub)
		if err != nil || got != tc.want {
			t.Errorf("WithSubPrefix(%q, %q) = %q, %v; want %q", tc.in, tc.sub, got, err, tc.want)
		}
	}
	if _, err := storetest.WithSubPrefix("/local/path", "x"); err == nil {
		t.Error("WithSubPrefix accepted a path")
	}
}
