package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A BEIR-style dataset: queries.jsonl holds every split's queries, the qrels
// judge one split. Without the flag run refuses and names it; with it, the
// judged queries score exactly as in a dataset that never had the others.
func TestRunDropQueriesWithoutPositives(t *testing.T) {
	dir := t.TempDir()
	q := writeNPY(t, dir, "q.npy", [][]float64{{1, 0}, {0.3, 0.9}, {0.6, 0.8}, {0, 1}})
	g := writeNPY(t, dir, "g.npy", [][]float64{{1, 0.1}, {0.6, 0.8}, {0, 1}, {0.7, 0.7}})
	qids := writeFile(t, dir, "qids.txt", "q1\ndev1\nq2\ndev2\n")
	gids := writeFile(t, dir, "gids.txt", "d1\nd2\nd3\nd4\n")
	rel := writeFile(t, dir, "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\td4\t1\n")
	base := []string{"retrieval", "run", "--queries", q, "--gallery", g, "--query-ids", qids, "--gallery-ids", gids, "--qrels", rel, "--quiet"}

	code, _, stderr := run(t, base...)
	if code == 0 || !strings.Contains(stderr, "--drop-queries-without-positives") || !strings.Contains(stderr, "dev1") {
		t.Fatalf("without the flag: exit %d, stderr %q", code, stderr)
	}
	out := filepath.Join(dir, "drop.json")
	if code, _, stderr := run(t, append(base, "--drop-queries-without-positives", "--json", out)...); code != 0 {
		t.Fatalf("with the flag: exit %d: %s", code, stderr)
	}
	// The same data with the unjudged queries removed by hand.
	q2 := writeNPY(t, dir, "q2.npy", [][]float64{{1, 0}, {0.6, 0.8}})
	qids2 := writeFile(t, dir, "qids2.txt", "q1\nq2\n")
	hand := filepath.Join(dir, "hand.json")
	if code, _, stderr := run(t, "retrieval", "run", "--queries", q2, "--gallery", g, "--query-ids", qids2, "--gallery-ids", gids, "--qrels", rel, "--quiet", "--json", hand); code != 0 {
		t.Fatalf("hand-made: exit %d: %s", code, stderr)
	}
	a, b := readReport(t, out), readReport(t, hand)
	if !reflect.DeepEqual(forwardMetrics(t, a), forwardMetrics(t, b)) {
		t.Fatalf("metrics differ:\n%v\n%v", forwardMetrics(t, a), forwardMetrics(t, b))
	}
	ds := a["dataset_summary"].(map[string]any)
	if ds["n_dropped_queries"] != float64(2) || ds["n_queries"] != float64(2) {
		t.Fatalf("summary %v", ds)
	}
	if a["metadata"].(map[string]any)["retrieval_config"].(map[string]any)["queries_without_positives"] != "drop" {
		t.Fatalf("retrieval_config lacks queries_without_positives: drop")
	}
}

func readReport(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Two backbones run separately on the same ID files and qrels compare; a run
// on other qrels is refused, naming the relevance.
func TestRunEachBackboneThenCompare(t *testing.T) {
	dir := t.TempDir()
	qa := writeNPY(t, dir, "qa.npy", [][]float64{{1, 0}, {0, 1}})
	ga := writeNPY(t, dir, "ga.npy", [][]float64{{1, 0}, {0.6, 0.8}, {0, 1}})
	qb := writeNPY(t, dir, "qb.npy", [][]float64{{0.9, 0.1}, {0.2, 1}})
	gb := writeNPY(t, dir, "gb.npy", [][]float64{{0.5, 0.5}, {1, 0}, {0, 1}})
	qids := writeFile(t, dir, "qids.txt", "a\nb\n")
	gids := writeFile(t, dir, "gids.txt", "x\ny\nz\n")
	rel := writeFile(t, dir, "qrels.tsv", "a\tx\t1\nb\tz\t1\n")
	rel2 := writeFile(t, dir, "qrels2.tsv", "a\ty\t1\nb\tz\t1\n")
	runOne := func(name, q, g, qrels string) string {
		out := filepath.Join(dir, name+".json")
		if code, _, stderr := run(t, "retrieval", "run", "--queries", q, "--gallery", g, "--query-ids", qids, "--gallery-ids", gids,
			"--qrels", qrels, "--name", name, "--quiet", "--json", out); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		return out
	}
	a, b, c := runOne("a", qa, ga, rel), runOne("b", qb, gb, rel), runOne("c", qb, gb, rel2)
	if code, _, stderr := run(t, "retrieval", "compare", a, b, "--quiet", "--json", filepath.Join(dir, "ab.json")); code != 0 {
		t.Fatalf("compare a b: exit %d: %s", code, stderr)
	}
	code, _, stderr := run(t, "retrieval", "compare", a, c, "--quiet", "--json", filepath.Join(dir, "ac.json"))
	if code == 0 || !strings.Contains(stderr, "reports differ in their relevance") {
		t.Fatalf("compare a c: exit %d, stderr %q", code, stderr)
	}
	td := readReport(t, a)["metadata"].(map[string]any)["task_digests"].(map[string]any)
	for _, k := range []string{"query_ids", "gallery_ids", "relevance", "exclusions", "retrieval_config"} {
		if s, _ := td[k].(string); len(s) != 64 {
			t.Errorf("task_digests.%s = %v", k, td[k])
		}
	}
}
