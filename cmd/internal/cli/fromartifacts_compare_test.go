package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A reconstruction of two or more score artifacts carries the comparison
// section a local run of the same extractors has (default comparison
// options), bit for bit.
func TestFromArtifactsHasComparison(t *testing.T) {
	dir := t.TempDir()
	spec := artifactDataset(t, dir, artifactCase{name: "cmp", dtype: "float32", similarity: "cosine", bidirectional: true}, 12, 30)
	rng := rand.New(rand.NewPCG(11, 3))
	q2 := writeEndpoint(t, dir, "q2", rng, 12, 6, "float32")
	g2 := writeEndpoint(t, dir, "g2", rng, 30, 6, "float32")
	writeFile(t, dir, "run.yaml", mustRead(t, spec)+fmt.Sprintf("  - {name: other, type: precomputed, queries: %s, gallery: %s}\n", filepath.Base(q2), filepath.Base(g2)))
	local := filepath.Join(dir, "local.json")
	if code, _, stderr := run(t, "retrieval", "run", "--spec", spec, "--json", local, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	want := reportOf(t, mustRead(t, local))["comparison"]
	if want == nil {
		t.Fatal("the local run has no comparison")
	}
	storeDir := filepath.Join(dir, "store")
	must := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := run(t, append(args, "--store", storeDir)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	planPath := filepath.Join(dir, "plan.json")
	must("retrieval", "plan", "--spec", spec, "--output-json", planPath)
	plan, err := readPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	var rel struct{ Key string }
	if err := json.Unmarshal([]byte(must("retrieval", "write-relevance", "--spec", spec)), &rel); err != nil {
		t.Fatal(err)
	}
	var scoreKeys []string
	for _, pe := range plan.Extractors {
		keys := map[string]string{}
		for _, ep := range pe.Endpoints {
			for _, sh := range ep.Shards {
				must("retrieval", "embed-shard", "--plan", planPath, "--extractor", pe.Name, "--side", ep.Side, "--shard-index", fmt.Sprint(sh.ShardIndex))
			}
			must("retrieval", "merge", "--plan", planPath, "--extractor", pe.Name, "--side", ep.Side)
			keys[ep.Side] = ep.OutputKey
		}
		var sc struct{ Key string }
		out := must("retrieval", "score", "--query-key", keys["query"], "--gallery-key", keys["gallery"], "--relevance-key", rel.Key, "--config", spec)
		if err := json.Unmarshal([]byte(out), &sc); err != nil {
			t.Fatal(err)
		}
		scoreKeys = append(scoreKeys, sc.Key)
	}
	got := reportOf(t, must("retrieval", "from-artifacts", "--score-key", strings.Join(scoreKeys, ",")))["comparison"]
	if got == nil {
		t.Fatal("the reconstruction of two results has no comparison section")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("comparison differs from the local run's:\n got %v\nwant %v", got, want)
	}
	// One result: no comparison.
	if c := reportOf(t, must("retrieval", "from-artifacts", "--score-key", scoreKeys[0]))["comparison"]; c != nil {
		t.Errorf("a single result has a comparison: %v", c)
	}
}
