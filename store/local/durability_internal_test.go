package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// watch records the durability steps of Puts (with paths relative to
// root) and restores the real ones when the test ends.
func watch(t *testing.T, root string, fail string) *[]string {
	var events []string
	rel := func(p string) string {
		r, _ := filepath.Rel(root, p)
		r = filepath.ToSlash(r)
		if i := strings.Index(r, TempPrefix); i >= 0 {
			r = r[:i] + "TMP"
		}
		return r
	}
	origFile, origDir, origRename := fsyncFile, fsyncDir, rename
	t.Cleanup(func() { fsyncFile, fsyncDir, rename = origFile, origDir, origRename })
	step := func(e string) error {
		events = append(events, e)
		if e == fail {
			return errors.New("injected " + e)
		}
		return nil
	}
	fsyncFile = func(f *os.File) error {
		if err := step("fsync " + rel(f.Name())); err != nil {
			return err
		}
		return origFile(f)
	}
	fsyncDir = func(d string) error {
		if err := step("fsync dir " + rel(d)); err != nil {
			return err
		}
		return origDir(d)
	}
	rename = func(a, b string) error {
		if err := step("rename " + rel(a) + " " + rel(b)); err != nil {
			return err
		}
		return origRename(a, b)
	}
	return &events
}

// Put makes the object durable in the order that survives a power loss:
// new directories fsynced into their parents, data fsynced before the
// rename, the directory fsynced after it.
func TestPutDurabilityOrder(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	events := watch(t, root, "")
	ctx := context.Background()
	if err := s.Put(ctx, "a/b/manifest.json", strings.NewReader("{}"), 2); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fsync dir ..", // root created in its parent
		"fsync dir .",  // a
		"fsync dir a",  // a/b
		"fsync a/b/TMP",
		"rename a/b/TMP a/b/manifest.json",
		"fsync dir a/b",
	}
	if !slices.Equal(*events, want) {
		t.Fatalf("durability steps\n  %q\nwant\n  %q", *events, want)
	}
	// Existing directories are not fsynced again.
	*events = nil
	if err := s.Put(ctx, "a/b/manifest.json", strings.NewReader("[]"), 2); err != nil {
		t.Fatal(err)
	}
	want = []string{"fsync a/b/TMP", "rename a/b/TMP a/b/manifest.json", "fsync dir a/b"}
	if !slices.Equal(*events, want) {
		t.Fatalf("overwrite steps\n  %q\nwant\n  %q", *events, want)
	}
}

// A failing fsync or rename fails the Put, keeps the old object and
// removes the temporary file.
func TestPutDurabilityFailures(t *testing.T) {
	for _, fail := range []string{"fsync k/TMP", "rename k/TMP k/manifest.json"} {
		root := filepath.Join(t.TempDir(), "root")
		s, _ := Open(root)
		ctx := context.Background()
		if err := s.Put(ctx, "k/manifest.json", strings.NewReader("old"), 3); err != nil {
			t.Fatal(err)
		}
		watch(t, root, fail)
		err := s.Put(ctx, "k/manifest.json", strings.NewReader("new"), 3)
		if err == nil || !strings.Contains(err.Error(), "injected") {
			t.Fatalf("%s: Put error = %v", fail, err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "k", "manifest.json")); string(b) != "old" {
			t.Fatalf("%s: object = %q", fail, b)
		}
		if m, _ := filepath.Glob(filepath.Join(root, "k", TempPrefix+"*")); len(m) != 0 {
			t.Fatalf("%s: temporary files left: %q", fail, m)
		}
	}
}
