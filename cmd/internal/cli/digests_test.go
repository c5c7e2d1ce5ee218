//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// identityOf runs `retrieval run` with a content identity and returns the
// dataset identity key and the whole report without timings.
func identityOf(t *testing.T, args ...string) (string, map[string]any) {
	t.Helper()
	code, stdout, stderr := run(t, append([]string{"retrieval", "run", "--quiet", "--json", "-"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep := reportOf(t, stdout)
	id := rep["dataset_summary"].(map[string]any)["identity"].(map[string]any)
	if id["mode"] != "content" {
		t.Fatalf("identity mode %v", id["mode"])
	}
	return id["key"].(string), rep
}

// cacheEntries returns the digest cache's entry files.
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	return files
}

// The digest cache gives the content identity, and every reported value,
// exactly as hashing does (SPEC §2.9), and a changed file is hashed again.
// (A run file without id and revision has a content identity over its
// embedding files; the flags form's identity is IDs-only.)
func TestDigestCacheKeepsIdentity(t *testing.T) {
	defer digestcache.SetRacyWindow(0)()
	f := newFixture(t)
	rel := f.qrels(t)
	// A CSR gallery (.npz) takes the cache too.
	writeCSR := func(name string, data []float64) string {
		sp, err := matrix.NewCSR64(3, 2, []int64{0, 1, 3, 4}, []int32{0, 0, 1, 1}, data)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := npz.WriteCSR(&b, sp); err != nil {
			t.Fatal(err)
		}
		return writeFile(t, f.dir, name, b.String())
	}
	gs := writeCSR("g.npz", []float64{1, 0.7, 0.7, 1})
	for _, tc := range []struct {
		name    string
		gallery string
		rewrite func()
	}{
		{"dense", f.g, func() { writeNPY(t, f.dir, "g.npy", [][]float64{{1, 0}, {0.6, 0.8}, {0, 1}}) }},
		{"csr", gs, func() { writeCSR("g.npz", []float64{1, 0.6, 0.8, 1}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := writeFile(t, f.dir, "run-"+tc.name+".yaml", fmt.Sprintf(`version: 1
dataset:
  queries: {path: %q}
  gallery: {path: %q}
  qrels: {path: %q}
extractors:
  - {name: t, type: precomputed}
`, f.q, tc.gallery, rel))
			args := []string{"--spec", spec}
			t.Setenv(digestcache.EnvVar, "off")
			want, wantRep := identityOf(t, args...)

			cache := t.TempDir()
			t.Setenv(digestcache.EnvVar, cache)
			miss, missRep := identityOf(t, args...) // hashes and stores both endpoints
			if got := cacheEntries(t, cache); len(got) != 2 {
				t.Fatalf("%d cache entries after the first run, want 2", len(got))
			}
			hit, hitRep := identityOf(t, args...)
			if miss != want || hit != want || !reflect.DeepEqual(missRep, wantRep) || !reflect.DeepEqual(hitRep, wantRep) {
				t.Fatalf("identity: off %s, miss %s, hit %s", want, miss, hit)
			}

			// The second run took its digests from the cache: a tampered
			// entry (same file identity) changes the key.
			for _, e := range cacheEntries(t, cache) {
				b, _ := os.ReadFile(e)
				var v map[string]any
				dec := json.NewDecoder(strings.NewReader(string(b)))
				dec.UseNumber() // the key's nanosecond times must survive
				if err := dec.Decode(&v); err != nil {
					t.Fatal(err)
				}
				d := v["digest"].(map[string]any)
				for k := range d {
					if strings.HasSuffix(k, "sha256") {
						d[k] = strings.Repeat("0", 64)
					}
				}
				b, _ = json.Marshal(v)
				if err := os.WriteFile(e, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tampered, _ := identityOf(t, args...); tampered == want {
				t.Fatal("the cache entries were not used")
			}

			// Rewriting the gallery (other values) makes its entry miss: the
			// key is the hashed one of the new content.
			if err := os.RemoveAll(cache); err != nil {
				t.Fatal(err)
			}
			if again, _ := identityOf(t, args...); again != want {
				t.Fatalf("identity after clearing the cache: %s, want %s", again, want)
			}
			time.Sleep(20 * time.Millisecond) // a later change-time tick than the stored one
			tc.rewrite()
			t.Setenv(digestcache.EnvVar, "off")
			fresh, _ := identityOf(t, args...)
			t.Setenv(digestcache.EnvVar, cache)
			if got, _ := identityOf(t, args...); got != fresh || got == want {
				t.Fatalf("after a rewrite: cached %s, hashed %s (old %s)", got, fresh, want)
			}
		})
	}
}
