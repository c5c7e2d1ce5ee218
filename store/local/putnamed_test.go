package local

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/store"
)

// PutNamed writes under a temporary name and names the object only after
// its last byte: nothing but the final object is ever visible, and a
// failure leaves nothing.
func TestPutNamed(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) (string, error) {
		rc, err := s.Get(ctx, name)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	if err := s.Put(ctx, "k/array-x", strings.NewReader("old"), 3); err != nil {
		t.Fatal(err)
	}
	var synced []string
	defer func(f func(string) error) { fsyncDir = f }(fsyncDir)
	fsyncDir = func(dir string) error { synced = append(synced, dir); return nil }
	calls := 0
	err = s.PutNamed(ctx, "k", strings.NewReader("new"), -1, func() (string, error) {
		calls++
		// Called after the last byte: only the temporary file exists.
		entries, _ := os.ReadDir(filepath.Join(root, "k"))
		for _, e := range entries {
			if e.Name() != "array-x" && !strings.HasPrefix(e.Name(), TempPrefix) {
				t.Errorf("unexpected entry %q before the name is known", e.Name())
			}
		}
		return "array-x", nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("PutNamed: %v (name called %d times)", err, calls)
	}
	if got, err := get("k/array-x"); err != nil || got != "new" {
		t.Fatalf("object = %q, %v", got, err)
	}
	if len(synced) == 0 || !strings.HasSuffix(synced[len(synced)-1], "k") {
		t.Fatalf("directory not fsynced: %v", synced)
	}
	// New directories are made.
	if err := s.PutNamed(ctx, "k2/deeper", strings.NewReader("d"), 1, func() (string, error) { return "n", nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := get("k2/deeper/n"); got != "d" {
		t.Fatalf("object in a new directory: %q", got)
	}
	for _, tc := range []struct {
		name, prefix, data string
		size               int64
		base               func() (string, error)
	}{
		{"name error", "k", "x", 1, func() (string, error) { return "", errors.New("encoder failed") }},
		{"two components", "k", "x", 1, func() (string, error) { return "a/b", nil }},
		{"short", "k", "x", 5, func() (string, error) { return "short", nil }},
		{"escape", "../escape", "x", 1, func() (string, error) { return "n", nil }},
		{"escaping name", "k", "x", 1, func() (string, error) { return "..", nil }},
	} {
		if err := s.PutNamed(ctx, tc.prefix, strings.NewReader(tc.data), tc.size, tc.base); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	// Nothing but the objects is left.
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if strings.Join(files, ",") != "k/array-x,k2/deeper/n" {
		t.Errorf("files after the failures: %v", files)
	}
	var _ store.LateNamer = s
}
