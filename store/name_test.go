package store_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/store"
)

func TestValidateName(t *testing.T) {
	for _, name := range []string{
		"a", "a/b", "a..b", "a__b", "..a", "a..", ".hidden/x", "with space", "日本/ключ", "a+b=c&d%20?#*",
		"retrieval/embeddings/ds/r/query/main/manifest.json", "runs/0123456789abcdef0123456789abcdef/x",
	} {
		if err := store.ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", name, err)
		}
	}
	for _, tc := range []struct{ name, reason string }{
		{"", "empty"},
		{"/a", "starts with '/'"},
		{"a/", "ends with '/'"},
		{"a//b", "empty component"},
		{".", `"." component`},
		{"..", `".." component`},
		{"a/./b", `"." component`},
		{"a/../b", `".." component`},
		{"../a", `".." component`},
		{`a\b`, `'\'`},
		{"a\x00", "control character U+0000"},
		{"a\tb", "control character U+0009"},
		{"a\nb", "control character U+000A"},
		{"a\x7f", "control character U+007F"},
		{"a\u009b", "control character U+009B"},
		{"\xff", "UTF-8"},
	} {
		err := store.ValidateName(tc.name)
		var ine *store.InvalidNameError
		if !errors.As(err, &ine) || ine.Name != tc.name || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("ValidateName(%q) = %v, want an *InvalidNameError saying %q", tc.name, err, tc.reason)
		}
	}
}

// Every accepted name maps (as the local store maps it) to a path strictly
// inside the root, and the mapping is one-to-one.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"a", "a/b", "a..b", "../x", "a/../../b", `a\..\b`, "a\x00b", "/abs", "a//b", "日本"} {
		f.Add(s)
	}
	root := filepath.FromSlash("/store/root")
	f.Fuzz(func(t *testing.T, name string) {
		if store.ValidateName(name) != nil {
			return
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			t.Fatalf("accepted name %q maps outside the root: %q", name, p)
		}
		if filepath.ToSlash(rel) != name {
			t.Fatalf("accepted name %q maps to %q: the mapping rewrites it", name, rel)
		}
	})
}
