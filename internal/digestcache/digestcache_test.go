//go:build linux

package digestcache

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

var sum = map[string]string{"kind": "dense", "dtype": "float32", "shape": "2x3", "sha256": "ab"}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stored runs one load: snapshot, then store what was "hashed".
func stored(c *Cache, path string) {
	c.Store(c.Snap(path, "embeddings\x00"), sum)
}

func TestRoundTrip(t *testing.T) {
	defer SetRacyWindow(0)()
	dir := t.TempDir()
	f := filepath.Join(dir, "g.npy")
	writeFile(t, f, "0123456789")
	c := New(filepath.Join(dir, "cache"))
	if _, ok := c.Lookup(c.Snap(f, "embeddings\x00")); ok {
		t.Fatal("hit in an empty cache")
	}
	stored(c, f)
	got, ok := c.Lookup(c.Snap(f, "embeddings\x00"))
	if !ok || got["sha256"] != "ab" || got["shape"] != "2x3" || len(got) != 4 {
		t.Fatalf("lookup after store: %v %v", got, ok)
	}
	// What was read is part of the key: another tensor of the file misses.
	if _, ok := c.Lookup(c.Snap(f, "embeddings\x00other")); ok {
		t.Fatal("another tensor hit")
	}
}

// A rewritten file misses, even with the same size and modification time:
// its change time moved.
func TestRewrittenFileMisses(t *testing.T) {
	defer SetRacyWindow(0)()
	dir := t.TempDir()
	f := filepath.Join(dir, "g.npy")
	writeFile(t, f, "0123456789")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(f, old, old); err != nil {
		t.Fatal(err)
	}
	c := New(filepath.Join(dir, "cache"))
	stored(c, f)
	if _, ok := c.Lookup(c.Snap(f, "embeddings\x00")); !ok {
		t.Fatal("no hit before the rewrite")
	}
	time.Sleep(20 * time.Millisecond) // let the change-time clock tick
	writeFile(t, f, "9876543210")
	if err := os.Chtimes(f, old, old); err != nil { // same size and mtime as before
		t.Fatal(err)
	}
	if _, ok := c.Lookup(c.Snap(f, "embeddings\x00")); ok {
		t.Fatal("a rewritten file hit the cache")
	}
	// Replaced by another file (rename over it): another inode.
	g := filepath.Join(dir, "h.npy")
	writeFile(t, g, "0123456789")
	stored(c, f)
	if err := os.Rename(g, f); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Lookup(c.Snap(f, "embeddings\x00")); ok {
		t.Fatal("a replaced file hit the cache")
	}
}

// A file changed less than the racy window before its load is not stored,
// nor one that changes between the snapshot and the store.
func TestRacyFilesAreNotStored(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "g.npy")
	writeFile(t, f, "0123456789")
	c := New(filepath.Join(dir, "cache"))
	stored(c, f) // default window: the file is brand new
	restore := SetRacyWindow(0)
	defer restore()
	if _, ok := c.Lookup(c.Snap(f, "embeddings\x00")); ok {
		t.Fatal("a file changed within the racy window was stored")
	}
	s := c.Snap(f, "embeddings\x00")
	time.Sleep(20 * time.Millisecond)
	writeFile(t, f, "changed while hashed")
	c.Store(s, sum)
	if _, ok := c.Lookup(c.Snap(f, "embeddings\x00")); ok {
		t.Fatal("a file changed while it was hashed was stored")
	}
}

// Damaged or foreign entries are misses, and every failure is silent.
func TestBadEntriesMiss(t *testing.T) {
	defer SetRacyWindow(0)()
	dir := t.TempDir()
	f := filepath.Join(dir, "g.npy")
	writeFile(t, f, "0123456789")
	c := New(filepath.Join(dir, "cache"))
	s := c.Snap(f, "embeddings\x00")
	for name, content := range map[string]string{
		"truncated":   `{"key":{"schema":1`,
		"foreign key": `{"key":{"schema":1,"path":"/elsewhere"},"digest":{"sha256":"ab"}}`,
		"no digest":   `{"key":null}`,
	} {
		writeFile(t, dir+"/entry", content)
		p := c.entryPath(s.k)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir+"/entry", p); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Lookup(s); ok {
			t.Errorf("%s: hit", name)
		}
	}
	// A cache directory that cannot be created: Store does nothing.
	blocker := filepath.Join(dir, "file")
	writeFile(t, blocker, "x")
	bad := New(filepath.Join(blocker, "cache"))
	stored(bad, f)
	if _, ok := bad.Lookup(bad.Snap(f, "embeddings\x00")); ok {
		t.Fatal("hit in an unwritable cache")
	}
	// Missing files and directories have no snapshot.
	if s := c.Snap(filepath.Join(dir, "missing"), ""); s.ok {
		t.Fatal("snapshot of a missing file")
	}
	if s := c.Snap(dir, ""); s.ok {
		t.Fatal("snapshot of a directory")
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvVar, "off")
	if c := FromEnv(); c != nil {
		t.Fatalf("off: %v", c)
	}
	var nilCache *Cache // disabled: every method is a no-op
	if s := nilCache.Snap("x", ""); s.ok {
		t.Fatal("nil cache snapshot")
	}
	nilCache.Store(Snapshot{}, sum)
	if _, ok := nilCache.Lookup(Snapshot{}); ok {
		t.Fatal("nil cache hit")
	}
	t.Setenv(EnvVar, "/some/dir")
	if c := FromEnv(); c == nil || c.dir != "/some/dir" {
		t.Fatalf("dir: %v", c)
	}
	t.Setenv(EnvVar, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if c := FromEnv(); c == nil || c.dir != "/xdg/vertebrae/digests" {
		t.Fatalf("default: %v", c)
	}
}

// A Sub cache keeps another fact about the same files: same snapshots and
// staleness rules, its own entries (in its own directory, out of the
// parent's entry directories); a disabled cache has a disabled Sub.
func TestSub(t *testing.T) {
	defer SetRacyWindow(0)()
	if (*Cache)(nil).Sub("finite") != nil || (&Cache{}).Sub("finite") != nil {
		t.Fatal("a disabled cache has an enabled Sub")
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "g.npy")
	writeFile(t, f, "0123456789")
	c := New(filepath.Join(dir, "cache"))
	fin := c.Sub("finite")
	snap := c.Snap(f, "embeddings\x00")
	stored(c, f)
	if _, ok := fin.Lookup(snap); ok {
		t.Fatal("the Sub cache sees its parent's entry")
	}
	fin.Store(snap, map[string]string{"finite": "true"})
	if got, ok := fin.Lookup(snap); !ok || got["finite"] != "true" || len(got) != 1 {
		t.Fatalf("Sub lookup: %v %v", got, ok)
	}
	if got, ok := c.Lookup(snap); !ok || got["sha256"] != "ab" {
		t.Fatalf("parent lookup after a Sub store: %v %v", got, ok)
	}
	if parent, _ := filepath.Glob(filepath.Join(dir, "cache", "*", "*.json")); len(parent) != 1 {
		t.Fatalf("parent entry files %v, want 1 (Sub entries live below its own directory)", parent)
	}
	time.Sleep(20 * time.Millisecond)
	writeFile(t, f, "9876543210") // same size, later change time
	if _, ok := fin.Lookup(fin.Snap(f, "embeddings\x00")); ok {
		t.Fatal("a rewritten file hit the Sub cache")
	}
}
