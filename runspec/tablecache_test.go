//go:build linux

package runspec

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/formats/npy"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// specRecipeHashes loads a run file as the artifact commands do and returns
// each extractor's recipe hash, and the dataset's tables' bookkeeping.
func specRecipeHashes(t *testing.T, path string) (map[string]string, *tableFiles) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, Options{DigestCache: DefaultDigestCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string]string{}
	for i := range s.Spec.Extractors {
		e := &s.Spec.Extractors[i]
		x, err := s.Build(ctx, e, "")
		if err != nil {
			t.Fatal(err)
		}
		if out[e.Name], err = artifact.RecipeHash(x.Recipe()); err != nil {
			t.Fatal(err)
		}
	}
	return out, s.tables.files
}

// A precomputed extractor's table digests (so its recipe hash, and every
// endpoint key) come from the digest cache entries of the dataset's own
// endpoint files, or of the extractor's own files, exactly as hashing gives
// them; a tampered entry shows they were used, and a rewritten file is
// hashed again, never served the old digest.
func TestPrecomputedTableDigestsFromCache(t *testing.T) {
	defer digestcache.SetRacyWindow(0)()
	f := newFixture(t)
	writeNPY(t, f.dir, "own.npy", [][]float64{{0, 1}, {1, 1}, {1, 0}})
	spec := writeFile(t, f.dir, "run.yaml", `version: 1
dataset:
  id: d
  revision: "1"
  queries: {path: q.npy}
  gallery: {path: g.npy}
  qrels: {path: rel.qrels}
extractors:
  - {name: tables, type: precomputed}
  - {name: own, type: precomputed, queries: q.npy, gallery: own.npy}
`)
	f.qrels(t)
	t.Setenv(digestcache.EnvVar, "off")
	want, _ := specRecipeHashes(t, spec)
	cache := t.TempDir()
	t.Setenv(digestcache.EnvVar, cache)
	miss, _ := specRecipeHashes(t, spec) // hashes and stores
	if n := len(cacheEntries(t, cache)); n != 3 {
		t.Fatalf("%d digest entries after the first load, want 3 (q.npy, g.npy, own.npy)", n)
	}
	hit, _ := specRecipeHashes(t, spec)
	for name, h := range want {
		if miss[name] != h || hit[name] != h {
			t.Fatalf("%s: recipe hash off %s, miss %s, hit %s", name, h, miss[name], hit[name])
		}
	}
	// Tampered entries (same file identities) change both recipes: the
	// digests came from the cache.
	for _, e := range cacheEntries(t, cache) {
		b, _ := os.ReadFile(e)
		var v map[string]any
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		v["digest"].(map[string]any)["sha256"] = strings.Repeat("0", 64)
		b, _ = json.Marshal(v)
		if err := os.WriteFile(e, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tampered, _ := specRecipeHashes(t, spec)
	for name, h := range want {
		if tampered[name] == h {
			t.Errorf("%s: the tampered cache entries were not used", name)
		}
	}
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	specRecipeHashes(t, spec) // fresh entries
	time.Sleep(20 * time.Millisecond)
	writeNPY(t, f.dir, "g.npy", [][]float64{{1, 0}, {0.6, 0.8}, {0, 1}})
	writeNPY(t, f.dir, "own.npy", [][]float64{{0, 1}, {1, 0.5}, {1, 0}})
	t.Setenv(digestcache.EnvVar, "off")
	fresh, _ := specRecipeHashes(t, spec)
	t.Setenv(digestcache.EnvVar, cache)
	got, _ := specRecipeHashes(t, spec)
	for name, h := range want {
		if got[name] != fresh[name] || got[name] == h {
			t.Errorf("%s after a rewrite: cached %s, hashed %s (old %s)", name, got[name], fresh[name], h)
		}
	}
}

// A clean scan of a mapped embedding file's values is remembered in the
// digest cache (its "finite" part, under the same staleness rules), so
// later loads of the unchanged file — every extraction shard — skip it;
// a file rewritten with a NaN is scanned again and fails with the message
// of a run without the cache, naming the global row.
func TestFiniteCheckCache(t *testing.T) {
	defer digestcache.SetRacyWindow(0)()
	f := newFixture(t)
	f.qrels(t)
	spec := writeFile(t, f.dir, "run.yaml", `version: 1
dataset:
  id: d
  revision: "1"
  queries: {path: q.npy}
  gallery: {path: g.npy}
  qrels: {path: rel.qrels}
extractors:
  - {name: tables, type: precomputed}
`)
	cache := t.TempDir()
	t.Setenv(digestcache.EnvVar, cache)
	_, tf := specRecipeHashes(t, spec)
	for _, tf := range tf.files {
		if tf.finiteHit {
			t.Fatal("a finite record was found in an empty cache")
		}
	}
	if n, _ := filepath.Glob(filepath.Join(cache, finiteCache, "*", "*.json")); len(n) != 2 {
		t.Fatalf("%d finite records after the first load, want 2", len(n))
	}
	_, tf = specRecipeHashes(t, spec)
	for _, tf := range tf.files {
		if !tf.finiteHit || !tf.m.(*matrix.Dense).KnownFinite() {
			t.Fatal("the second load scanned the unchanged files again")
		}
	}
	time.Sleep(20 * time.Millisecond)
	writeNPY(t, f.dir, "g.npy", [][]float64{{1, 0}, {0.7, 0.7}, {0, math.NaN()}}) // same size
	load := func() error {
		s, err := Open(context.Background(), spec, Options{DigestCache: DefaultDigestCache()})
		if err == nil {
			s.Close()
		}
		return err
	}
	t.Setenv(digestcache.EnvVar, "off")
	want := load()
	t.Setenv(digestcache.EnvVar, cache)
	got := load()
	const msg = `Gallery embeddings must contain only finite numeric values; row 2 (ID "2"), column 1`
	if want == nil || got == nil || got.Error() != want.Error() || !strings.Contains(got.Error(), msg) {
		t.Fatalf("rewritten with a NaN: cached %v, uncached %v, want %q", got, want, msg)
	}
}

// Entries whose kind, dtype or shape are not the matrix's are not used.
func TestDigestFromCacheChecksTheMatrix(t *testing.T) {
	m, _ := matrix.NewDense32(2, 3, make([]float32, 6))
	sum := strings.Repeat("a", 64)
	good := map[string]string{"kind": "dense", "dtype": "float32", "shape": "2x3", "sha256": sum}
	d, ok := digestFromCache(good, m)
	want := map[string]any{"kind": "dense", "dtype": "float32", "shape": []any{2, 3}, "sha256": sum}
	if !ok || !reflect.DeepEqual(d, want) {
		t.Fatalf("good entry: %v %v", d, ok)
	}
	if back := digestToCache(want); !reflect.DeepEqual(back, good) {
		t.Fatalf("round trip: %v", back)
	}
	for name, change := range map[string][2]string{
		"kind": {"kind", "csr"}, "dtype": {"dtype", "float64"}, "shape": {"shape", "3x2"},
		"short sum": {"sha256", "abc"}, "upper-case sum": {"sha256", strings.Repeat("A", 64)},
		"extra field": {"data_sha256", sum},
	} {
		e := map[string]string{}
		for k, v := range good {
			e[k] = v
		}
		e[change[0]] = change[1]
		if _, ok := digestFromCache(e, m); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

// cacheEntries returns the digest cache's entry files.
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	return files
}

// fixture is a tiny dataset in a temporary directory: q.npy (2 × 2),
// g.npy (3 × 2).
type fixture struct{ dir string }

func newFixture(t *testing.T) fixture {
	dir := t.TempDir()
	writeNPY(t, dir, "q.npy", [][]float64{{1, 0}, {0, 1}})
	writeNPY(t, dir, "g.npy", [][]float64{{1, 0}, {0.7, 0.7}, {0, 1}})
	return fixture{dir: dir}
}

func (f fixture) qrels(t *testing.T) string {
	return writeFile(t, f.dir, "rel.qrels", "0 0 0 3\n0 0 1 1\n1 0 2 2\n")
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeNPY(t *testing.T, dir, name string, rows [][]float64) string {
	t.Helper()
	m, err := matrix.FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := npy.WriteDense(&buf, m); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, buf.String())
}
