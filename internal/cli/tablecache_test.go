//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/runspec"
)

// specRecipeHashes loads a run file as the artifact commands do and returns
// each extractor's recipe hash, and the dataset's tables' bookkeeping.
func specRecipeHashes(t *testing.T, path string) (map[string]string, *tableFiles) {
	t.Helper()
	spec, err := runspec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	ctx := context.Background()
	_, tables, err := specDataset(ctx, spec, &closers)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := range spec.Extractors {
		e := &spec.Extractors[i]
		x, err := specExtractor(ctx, spec, e, tables, "", &closers)
		if err != nil {
			t.Fatal(err)
		}
		if out[e.Name], err = artifact.RecipeHash(x.Recipe()); err != nil {
			t.Fatal(err)
		}
	}
	return out, tables.files
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
	_, files := specRecipeHashes(t, spec)
	for _, tf := range files.files {
		if tf.finiteHit {
			t.Fatal("a finite record was found in an empty cache")
		}
	}
	if n, _ := filepath.Glob(filepath.Join(cache, finiteCache, "*", "*.json")); len(n) != 2 {
		t.Fatalf("%d finite records after the first load, want 2", len(n))
	}
	_, files = specRecipeHashes(t, spec)
	for _, tf := range files.files {
		if !tf.finiteHit || !tf.m.(*matrix.Dense).KnownFinite() {
			t.Fatal("the second load scanned the unchanged files again")
		}
	}
	time.Sleep(20 * time.Millisecond)
	writeNPY(t, f.dir, "g.npy", [][]float64{{1, 0}, {0.7, 0.7}, {0, math.NaN()}}) // same size
	load := func() error {
		sp, err := runspec.Load(spec)
		if err != nil {
			t.Fatal(err)
		}
		var closers []func() error
		defer func() {
			for _, c := range closers {
				c()
			}
		}()
		_, _, err = specDataset(context.Background(), sp, &closers)
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

// An extraction shard fails as the unsharded run does on any non-finite
// value of its endpoint, not only on its own rows: the dataset is checked
// whole (or known finite from the cache) before any shard is encoded, so
// every shard of a gallery with a NaN fails with the same message naming
// the global row, whichever shard holds it, and no shard is written.
func TestEmbedShardNaNFailsEveryShard(t *testing.T) {
	defer digestcache.SetRacyWindow(0)()
	dir := t.TempDir()
	writeNPY(t, dir, "q.npy", [][]float64{{1, 0}, {0, 1}})
	clean := [][]float64{{1, 0}, {0.7, 0.7}, {0, 1}, {1, 1}, {0.5, 0.2}}
	writeNPY(t, dir, "g.npy", clean)
	writeFile(t, dir, "rel.qrels", "0 0 0 3\n0 0 1 1\n1 0 2 2\n")
	spec := writeFile(t, dir, "run.yaml", `version: 1
dataset:
  id: d
  revision: "1"
  queries: {path: q.npy}
  gallery: {path: g.npy}
  qrels: {path: rel.qrels}
extractors:
  - {name: tables, type: precomputed}
`)
	t.Setenv(digestcache.EnvVar, t.TempDir())
	st := "mem://" + t.Name()
	planPath := filepath.Join(dir, "plan.json")
	if code, _, stderr := run(t, "retrieval", "plan", "--spec", spec, "--total-shards", "3", "--output-json", planPath, "--store", st); code != 0 {
		t.Fatal(stderr)
	}
	time.Sleep(20 * time.Millisecond)
	nan := [][]float64{{1, 0}, {0.7, 0.7}, {0, 1}, {1, 1}, {math.Inf(1), 0.2}} // row 4: shard 1 of 3
	writeNPY(t, dir, "g.npy", nan)
	const msg = `Gallery embeddings must contain only finite numeric values; row 4 (ID "4"), column 0`
	for i := range 3 {
		code, _, stderr := run(t, "retrieval", "embed-shard", "--plan", planPath, "--extractor", "tables", "--side", "gallery",
			"--shard-index", string(rune('0'+i)), "--store", st)
		if code == 0 || !strings.Contains(stderr, msg) {
			t.Errorf("shard %d/3: exit %d: %s, want %q", i, code, stderr, msg)
		}
	}
}
