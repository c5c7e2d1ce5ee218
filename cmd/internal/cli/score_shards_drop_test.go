package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Bidirectional sharded scoring with queries_without_positives: drop on a
// gallery with distractors (g2 and g9 lose every relation): the gallery
// shard scores + finalize + from-artifacts give the extractor results of
// `retrieval run` on the same files, whose reverse direction skips the
// distractors as queries.
func TestShardedScoreDropReverseMatchesLocalRun(t *testing.T) {
	dir := t.TempDir()
	spec := shardDataset(t, dir, "cosine", true, 8, 15)
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(mustRead(t, filepath.Join(dir, "rel.qrels"))), "\n") {
		if f := strings.Fields(l); f[2] != "g2" && f[2] != "g9" {
			kept = append(kept, l)
		}
	}
	writeFile(t, dir, "rel.qrels", strings.Join(kept, "\n")+"\n")
	writeFile(t, dir, "run.yaml", strings.Replace(mustRead(t, spec), "bidirectional: true,", "bidirectional: true, queries_without_positives: drop,", 1))
	local := filepath.Join(dir, "local.json")
	if code, _, stderr := run(t, "retrieval", "run", "--spec", spec, "--json", local, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	want := withoutCacheStatus(reportOf(t, mustRead(t, local)))
	nd, _ := want["dataset_summary"].(map[string]any)["n_dropped_reverse_queries"].(float64)
	rev := want["extractor_results"].([]any)[0].(map[string]any)["reverse"].(map[string]any)
	if nd < 2 || rev["metadata"].(map[string]any)["n_queries"] != 15-nd {
		t.Fatalf("local run: %v reverse queries dropped, reverse metadata %v", nd, rev["metadata"])
	}
	st := "mem://" + t.Name()
	q, g, r := artifactKeys(t, st, spec, 2)
	keys := [3]string{q, g, r}
	var plain map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, st, "retrieval", "score", "--query-key", q, "--gallery-key", g,
		"--relevance-key", r, "--config", spec, "--output-key", "scores/plain")), &plain); err != nil {
		t.Fatal(err)
	}
	rep := reportOf(t, mustCLI(t, st, "retrieval", "from-artifacts", "--score-key", "scores/plain"))
	if !reflect.DeepEqual(rep["extractor_results"], want["extractor_results"]) {
		t.Fatalf("unsharded score differs from the local run")
	}
	for _, total := range []int{1, 2, 3, 7} {
		for _, layout := range []string{"contiguous", "modulo"} {
			key := fmt.Sprintf("scores/n%d-%s", total, layout)
			fin := scoreSharded(t, st, spec, keys, key, total, layout)
			plain["key"] = key
			if !reflect.DeepEqual(fin, plain) {
				t.Errorf("N=%d %s: finalize printed %v, unsharded score %v", total, layout, fin, plain)
			}
			rep := reportOf(t, mustCLI(t, st, "retrieval", "from-artifacts", "--score-key", key))
			if !reflect.DeepEqual(rep["extractor_results"], want["extractor_results"]) {
				a, _ := json.MarshalIndent(rep["extractor_results"], "", " ")
				b, _ := json.MarshalIndent(want["extractor_results"], "", " ")
				t.Fatalf("N=%d %s: extractor results differ:\nsharded %s\nlocal %s", total, layout, a, b)
			}
		}
	}
}
