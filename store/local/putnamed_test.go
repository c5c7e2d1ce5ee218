package local

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/store"
)

func TestMove(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(name, data string) {
		if err := s.Put(ctx, name, strings.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
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
	put("k/staging-1", "new")
	put("k/array-x", "old")
	var synced []string
	defer func(f func(string) error) { fsyncDir = f }(fsyncDir)
	fsyncDir = func(dir string) error { synced = append(synced, dir); return nil }
	if err := s.Move(ctx, "k/staging-1", "k/array-x"); err != nil {
		t.Fatal(err)
	}
	if got, err := get("k/array-x"); err != nil || got != "new" {
		t.Fatalf("moved object = %q, %v", got, err)
	}
	if _, err := get("k/staging-1"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("source still there: %v", err)
	}
	if len(synced) == 0 || !strings.HasSuffix(synced[len(synced)-1], "k") {
		t.Fatalf("destination directory not fsynced: %v", synced)
	}
	if err := s.Move(ctx, "k/missing", "k/other"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("missing source: %v", err)
	}
	if err := s.Move(ctx, "k/array-x", "../escape"); err == nil {
		t.Fatal("a name outside the root was accepted")
	}
	if err := s.Move(ctx, "k/array-x", "k2/deeper/name"); err != nil { // new directories are made
		t.Fatal(err)
	}
	if got, _ := get("k2/deeper/name"); got != "new" {
		t.Fatalf("moved into a new directory: %q", got)
	}
}
