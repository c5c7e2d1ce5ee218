//go:build linux

package cli

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
)

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
