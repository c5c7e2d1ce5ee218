//go:build unix

package stale

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// What Remove takes and what it leaves: an entry is stale when it is older
// than this process and no live process holds its lock.
func TestRemove(t *testing.T) {
	dir := t.TempDir()
	old := start.Add(-time.Hour)
	age := func(p string) {
		t.Helper()
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	age(write("job-abandoned")) // a killed run's file: removed
	young := write("job-young") // younger than this process: kept
	if err := os.Chtimes(young, start.Add(time.Second), start.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	age(write("other-abandoned")) // another prefix: kept
	held, err := CreateFile(dir, "job-held-*")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	age(held.Name()) // old, but its owner (this process) is alive: kept
	heldDir, release, err := MkdirTemp(dir, "job-dir-held-")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	age(heldDir)
	deadDir, releaseDead, err := MkdirTemp(dir, "job-dir-dead-")
	if err != nil {
		t.Fatal(err)
	}
	releaseDead() // its owner died
	age(deadDir)
	bare := filepath.Join(dir, "job-dir-bare")
	if err := os.Mkdir(bare, 0o700); err != nil { // killed before its lock file
		t.Fatal(err)
	}
	age(bare)

	n, err := Remove(dir, "job-")
	if err != nil || n != 3 {
		t.Fatalf("Remove = %d, %v; want 3", n, err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{filepath.Base(heldDir), filepath.Base(held.Name()), "job-young", "other-abandoned"}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if n, err := Remove(filepath.Join(dir, "missing"), "job-"); n != 0 || err != nil {
		t.Errorf("missing dir: %d, %v", n, err)
	}
}
