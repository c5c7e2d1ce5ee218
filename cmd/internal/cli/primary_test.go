package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Any reported metric may be --primary (SPEC §3.1): the score, the primary
// score and the ranking follow it.
func TestPrimaryFlagEveryMetric(t *testing.T) {
	f := newFixture(t)
	qrels := f.qrels(t)
	for _, m := range retrieval.PrimaryMetrics([]int{1, 2}) {
		t.Run(m, func(t *testing.T) {
			code, stdout, stderr := run(t, "retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", qrels,
				"--k", "1,2", "--primary", m, "--bidirectional", "--json", "-", "--quiet=false")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			rep := reportOf(t, stdout)
			if got := rep["metadata"].(map[string]any)["retrieval_config"].(map[string]any)["primary_metric"]; got != m {
				t.Errorf("retrieval_config.primary_metric = %v", got)
			}
			r := rep["extractor_results"].([]any)[0].(map[string]any)
			sum := 0.0
			for _, dir := range []string{"forward", "reverse"} {
				s := r[dir].(map[string]any)
				v := s["metrics"].(map[string]any)[m].(float64)
				if s["score"].(float64) != v || s["primary_metric"] != m {
					t.Errorf("%s: score %v, %s %v, primary_metric %v", dir, s["score"], m, v, s["primary_metric"])
				}
				sum += v
			}
			if got := r["primary_score"].(float64); got != sum/2 {
				t.Errorf("primary_score %v, want %v", got, sum/2)
			}
			if got := rep["ranking"].([]any)[0].(map[string]any)["primary_score"]; got != r["primary_score"] {
				t.Errorf("ranking primary_score %v", got)
			}
		})
	}
}

// evaluate-run takes the same choices.
func TestPrimaryFlagEvaluateRun(t *testing.T) {
	dir := t.TempDir()
	qrels := writeFile(t, dir, "q.qrels", "q1 0 d1 1\nq1 0 d3 1\nq2 0 d2 1\n")
	runFile := writeFile(t, dir, "a.run", "q1 Q0 d2 1 3 t\nq1 Q0 d1 2 2 t\nq2 Q0 d2 1 1 t\n")
	for _, m := range []string{"mrr", "map", "recall@2", "precision@1", "hit_rate@1", "ndcg@2"} {
		code, stdout, stderr := run(t, "retrieval", "evaluate-run", "--qrels", qrels, "--run", runFile, "--k", "1,2", "--primary", m, "--json", "-")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", m, code, stderr)
		}
		s := reportOf(t, stdout)["extractor_results"].([]any)[0].(map[string]any)["forward"].(map[string]any)
		if s["score"] != s["metrics"].(map[string]any)[m] || s["primary_metric"] != m {
			t.Errorf("%s: score %v, metrics %v", m, s["score"], s["metrics"])
		}
	}
}

// A bad --primary is a usage error naming the flag and its valid choices,
// not the internal field name.
func TestPrimaryFlagErrors(t *testing.T) {
	f := newFixture(t)
	qrels := f.qrels(t)
	dir := t.TempDir()
	evalQrels := writeFile(t, dir, "q.qrels", "q1 0 d1 1\n")
	evalRun := writeFile(t, dir, "a.run", "q1 Q0 d1 1 1 t\n")
	choices := "mrr, map, precision@1, recall@1, hit_rate@1, ndcg@1, precision@5, recall@5, hit_rate@5, ndcg@5"
	for _, c := range []struct {
		primary, hint string
	}{
		{"ndcg@10", ` (the cut-off 10 is not in --k)`},
		{"recall@3", ` (the cut-off 3 is not in --k)`},
		{"Recall@5", ` (metric names are lower case: recall@5)`},
		{"f1", ``},
		{"", ``},
	} {
		want := `vertebrae: --primary must be one of ` + choices + `; got "` + c.primary + `"` + c.hint + "\n"
		for _, args := range [][]string{
			{"retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", qrels},
			{"retrieval", "evaluate-run", "--qrels", evalQrels, "--run", evalRun},
		} {
			code, _, stderr := run(t, append(args, "--k", "1,5", "--primary", c.primary)...)
			if code != 2 || stderr != want {
				t.Errorf("%s %q: exit %d, stderr %q\nwant %q", args[1], c.primary, code, stderr, want)
			}
		}
	}
}

// The run file's primary_metric: any reported metric; a bad one names the
// key (and its line), exit 2.
func TestPrimaryRunFile(t *testing.T) {
	f := newFixture(t)
	qrels := f.qrels(t)
	spec := func(primary string) string {
		return writeFile(t, f.dir, "run.yaml", `version: 1
dataset:
  queries: {path: `+filepath.Base(f.q)+`}
  gallery: {path: `+filepath.Base(f.g)+`}
  qrels: {path: `+filepath.Base(qrels)+`}
retrieval:
  ks: [1, 2]
  primary_metric: `+primary+`
extractors:
  - {name: pre, type: precomputed}
`)
	}
	code, stdout, stderr := run(t, "retrieval", "run", "--spec", spec("hit_rate@2"), "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := reportOf(t, stdout)["extractor_results"].([]any)[0].(map[string]any)["forward"].(map[string]any)
	if s["score"] != s["metrics"].(map[string]any)["hit_rate@2"] || s["primary_metric"] != "hit_rate@2" {
		t.Errorf("score %v, metrics %v", s["score"], s["metrics"])
	}
	path := spec("ndcg@10")
	code, _, stderr = run(t, "retrieval", "run", "--spec", path)
	want := path + `:8: retrieval.primary_metric must be one of mrr, map, precision@1, recall@1, hit_rate@1, ndcg@1, precision@2, recall@2, hit_rate@2, ndcg@2; got "ndcg@10" (the cut-off 10 is not in retrieval.ks)`
	if code != 2 || !strings.Contains(stderr, want) || strings.Contains(stderr, "RetrievalConfig") {
		t.Errorf("exit %d, stderr %q\nwant %q", code, stderr, want)
	}
}
