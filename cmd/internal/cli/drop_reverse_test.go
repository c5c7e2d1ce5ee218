package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// A bidirectional run on a gallery with distractors (items no query
// judges): without --drop-queries-without-positives it refuses, naming the
// flag and the distractors; with it, the distractors are skipped as reverse
// queries but stay forward candidates: the forward direction is the one of
// a run without --bidirectional, and the reverse one is the reverse problem
// with only the judged gallery items as queries, scored by the library.
func TestRunBidirectionalDropReverseQueriesWithoutPositives(t *testing.T) {
	dir := t.TempDir()
	qrows := [][]float64{{1, 0}, {0.6, 0.8}, {0.2, 1}}
	grows := [][]float64{{1, 0.1}, {0.6, 0.8}, {0.9, 0.4}, {0, 1}, {0.7, 0.7}}
	q := writeNPY(t, dir, "q.npy", qrows)
	g := writeNPY(t, dir, "g.npy", grows)
	qids := writeFile(t, dir, "qids.txt", "q1\nq2\nq3\n")
	gids := writeFile(t, dir, "gids.txt", "d1\nd2\nd3\nd4\nd5\n")
	rel := writeFile(t, dir, "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\td4\t1\nq3\td1\t1\n")
	base := []string{"retrieval", "run", "--queries", q, "--gallery", g, "--query-ids", qids, "--gallery-ids", gids, "--qrels", rel, "--k", "1,2,3", "--primary", "ndcg@3"}

	code, _, stderr := run(t, append(base, "--bidirectional", "--quiet")...)
	if code == 0 || !strings.Contains(stderr, "--drop-queries-without-positives") || !strings.Contains(stderr, `missing for ["d3", "d5"]`) {
		t.Fatalf("without the flag: exit %d, stderr %q", code, stderr)
	}
	out := filepath.Join(dir, "bidir.json")
	code, _, stderr = run(t, append(base, "--bidirectional", "--drop-queries-without-positives", "--json", out)...)
	if code != 0 {
		t.Fatalf("with the flag: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "2 gallery items without an eligible reverse relation skipped as reverse queries") || !strings.Contains(stderr, `"d3"`) {
		t.Fatalf("no reverse-drop warning: %s", stderr)
	}
	fwdOnly := filepath.Join(dir, "forward.json")
	if code, _, stderr := run(t, append(base, "--drop-queries-without-positives", "--quiet", "--json", fwdOnly)...); code != 0 {
		t.Fatalf("forward only: exit %d: %s", code, stderr)
	}
	a, b := readReport(t, out), readReport(t, fwdOnly)
	ra, rb := a["extractor_results"].([]any)[0].(map[string]any), b["extractor_results"].([]any)[0].(map[string]any)
	fa, fb := ra["forward"].(map[string]any), rb["forward"].(map[string]any)
	delete(fa["metadata"].(map[string]any), "config") // bidirectional differs
	delete(fb["metadata"].(map[string]any), "config")
	if !reflect.DeepEqual(fa, fb) {
		t.Fatalf("forward changed:\n%v\n%v", fa, fb)
	}
	ds := a["dataset_summary"].(map[string]any)
	if ds["n_dropped_reverse_queries"] != float64(2) || ds["n_gallery"] != float64(5) || ds["n_dropped_queries"] != nil {
		t.Fatalf("summary %v", ds)
	}
	if _, ok := b["dataset_summary"].(map[string]any)["n_dropped_reverse_queries"]; ok {
		t.Fatalf("n_dropped_reverse_queries without bidirectional")
	}

	// The expected reverse direction: d1, d2 and d4 query the queries.
	cfg, err := retrieval.ConfigFromMap(a["metadata"].(map[string]any)["retrieval_config"].(map[string]any))
	if err != nil {
		t.Fatal(err)
	}
	rq, _ := matrix.FromRows([][]float64{grows[0], grows[1], grows[3]})
	rg, _ := matrix.FromRows(qrows)
	want, err := evaluate.Direction(context.Background(), rank.Problem{
		Queries: rq, Gallery: rg, QueryIDs: []string{"d1", "d2", "d4"}, GalleryIDs: []string{"q1", "q2", "q3"},
		Relevance: [][]retrieval.Positive{{{Index: 0, Grade: 1}, {Index: 2, Grade: 1}}, {{Index: 1, Grade: 2}}, {{Index: 1, Grade: 1}}},
	}, cfg, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	want.PerQuery = nil
	wj, _ := json.Marshal(want)
	var wm map[string]any
	if err := json.Unmarshal(wj, &wm); err != nil {
		t.Fatal(err)
	}
	got := ra["reverse"].(map[string]any)
	delete(got, "per_query")
	if !reflect.DeepEqual(got, wm) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(wm, "", " ")
		t.Fatalf("reverse differs:\ngot  %s\nwant %s", g, w)
	}
	if md := got["metadata"].(map[string]any); md["n_queries"] != float64(3) || md["n_gallery"] != float64(3) {
		t.Fatalf("reverse metadata %v", md)
	}
}
