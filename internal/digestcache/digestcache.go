package digestcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/vertebrae-eval/vertebrae/internal/atomicfile"
)

// EnvVar names the environment variable that disables (off) or places the
// cache.
const EnvVar = "VERTEBRAE_DIGEST_CACHE"

// racyWindow is how much older than the start of a load a file's times
// must be for its digest to be stored (see the package comment); a
// variable for tests.
var racyWindow = 2 * time.Second

// schema versions the entry format and key; a change makes old entries
// miss. 2: endpoint digests are chunked SHA-256s (SPEC §10.5).
const schema = 2

// Cache is a directory of digest entries. The zero value and nil are a
// disabled cache.
type Cache struct{ dir string }

// FromEnv returns the cache the environment selects, or nil when it is
// disabled or no cache directory is known.
func FromEnv() *Cache {
	switch v := os.Getenv(EnvVar); v {
	case "off":
		return nil
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		return &Cache{dir: filepath.Join(base, "vertebrae", "digests")}
	default:
		return &Cache{dir: v}
	}
}

// New returns a cache in dir.
func New(dir string) *Cache { return &Cache{dir: dir} }

// Sub returns the cache of another fact about the same files, kept in
// directory name of c's (nil when c is disabled): its entries take the
// same snapshots and follow the same staleness rules (a changed file
// misses; a file changed within the racy window is never stored), and
// never mix with c's digests. name must not be two hexadecimal digits
// (c's own entry directories).
func (c *Cache) Sub(name string) *Cache {
	if c == nil || c.dir == "" {
		return nil
	}
	return &Cache{dir: filepath.Join(c.dir, name)}
}

// key is what an entry is stored under: the file's identity and times and
// what was read from it.
type key struct {
	Schema int    `json:"schema"`
	Path   string `json:"path"`
	What   string `json:"what"`
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Size   int64  `json:"size"`
	Mtime  int64  `json:"mtime_ns"`
	Ctime  int64  `json:"ctime_ns"`
}

type entry struct {
	Key    key               `json:"key"`
	Digest map[string]string `json:"digest"`
}

// Snapshot is a file's identity taken before it is read.
type Snapshot struct {
	k     key
	taken time.Time
	ok    bool
}

// Snap records path's identity before it is read; what names what the
// caller reads from it (format and tensor) and is part of the key.
func (c *Cache) Snap(path, what string) Snapshot {
	if c == nil || c.dir == "" {
		return Snapshot{}
	}
	taken := time.Now()
	k, ok := stat(path)
	if !ok {
		return Snapshot{}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Snapshot{}
	}
	k.Schema, k.Path, k.What = schema, abs, what
	return Snapshot{k: k, taken: taken, ok: true}
}

// unchanged reports whether the file still has the snapshot's identity.
func (s Snapshot) unchanged() bool {
	if !s.ok {
		return false
	}
	k, ok := stat(s.k.Path)
	if !ok {
		return false
	}
	k.Schema, k.Path, k.What = s.k.Schema, s.k.Path, s.k.What
	return k == s.k
}

func (c *Cache) entryPath(k key) string {
	b, _ := json.Marshal(k) // plain struct: cannot fail
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	return filepath.Join(c.dir, h[:2], h+".json")
}

// Lookup returns the digest stored for the snapshot's file, if the file is
// unchanged since the snapshot (the caller has read it in between).
func (c *Cache) Lookup(s Snapshot) (map[string]string, bool) {
	if c == nil || !s.ok || !s.unchanged() {
		return nil, false
	}
	b, err := os.ReadFile(c.entryPath(s.k))
	if err != nil {
		return nil, false
	}
	var e entry
	if json.Unmarshal(b, &e) != nil || e.Key != s.k || e.Digest == nil {
		return nil, false
	}
	return e.Digest, true
}

// Store records digest for the snapshot's file when the file is unchanged
// since the snapshot and was last changed long enough before it.
func (c *Cache) Store(s Snapshot, digest map[string]string) {
	if c == nil || !s.ok || digest == nil {
		return
	}
	cutoff := s.taken.Add(-racyWindow).UnixNano()
	if s.k.Mtime >= cutoff || s.k.Ctime >= cutoff || !s.unchanged() {
		return
	}
	b, err := json.Marshal(entry{Key: s.k, Digest: digest})
	if err != nil {
		return
	}
	_ = atomicfile.Write(c.entryPath(s.k), b) // best effort: a failed store only means hashing next time
}

// SetRacyWindow replaces the racy window (tests of callers, whose fresh
// files would otherwise never be stored) and returns a function restoring
// it.
func SetRacyWindow(d time.Duration) (restore func()) {
	old := racyWindow
	racyWindow = d
	return func() { racyWindow = old }
}

// Dir is the cache's directory ("" when disabled).
func (c *Cache) Dir() string {
	if c == nil {
		return ""
	}
	return c.dir
}
