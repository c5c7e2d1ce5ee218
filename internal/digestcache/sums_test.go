package digestcache

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSums(t *testing.T) {
	dir := t.TempDir()
	c := New(dir)
	const k, s = "memo key", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if _, ok := c.LookupSum(k); ok {
		t.Fatal("hit in an empty cache")
	}
	c.StoreSum(k, s)
	if got, ok := c.LookupSum(k); !ok || got != s {
		t.Fatalf("lookup after store: %q %v", got, ok)
	}
	if _, ok := c.LookupSum(k + "x"); ok {
		t.Fatal("another key hit")
	}
	// An entry names its key: one moved under another key's name misses,
	// and so does a damaged one or one of another schema.
	b, err := os.ReadFile(c.sumPath(k))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"moved":   string(b),
		"damaged": "{",
		"schema":  `{"schema":0,"key":"other","sha256":"` + s + `"}`,
		"empty":   `{"schema":1,"key":"other","sha256":""}`,
	} {
		p := c.sumPath("other")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, ok := c.LookupSum("other"); ok {
			t.Errorf("%s entry hit: %q", name, got)
		}
	}
	// Disabled caches remember nothing and never fail.
	var off *Cache
	off.StoreSum(k, s)
	if _, ok := off.LookupSum(k); ok {
		t.Fatal("nil cache hit")
	}
	// An unwritable directory only forgets.
	ro := New(filepath.Join(dir, "file"))
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ro.StoreSum(k, s)
	if _, ok := ro.LookupSum(k); ok {
		t.Fatal("store into a file as directory hit")
	}
}
