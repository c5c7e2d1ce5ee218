package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func metricsOf(t *testing.T, path string) map[string]float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		ExtractorResults []struct {
			Forward struct {
				Metrics map[string]float64 `json:"metrics"`
			} `json:"forward"`
		} `json:"extractor_results"`
	}
	if err := json.Unmarshal(data, &rep); err != nil || len(rep.ExtractorResults) != 1 {
		t.Fatalf("%s: %v", path, err)
	}
	return rep.ExtractorResults[0].Forward.Metrics
}

// SPEC §4.11: scoring the full run (`--run-depth 0`) that `retrieval run`
// exports against the qrels it writes reproduces its metrics. Exported
// scores round-trip exactly, so `--ties rank` (the rank column carries
// vertebrae's lower-index tie rule) agrees to the bit even with score ties;
// without ties `--ties trec` agrees too.
func TestEvaluateRunRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, v := range []struct {
		name             string
		ties, graded     bool
		similarity, gain string
		tieRules         []string
	}{
		{"binary cosine", false, false, "cosine", "exponential", []string{"rank", "trec"}},
		{"graded dot linear", false, true, "dot", "linear", []string{"rank", "trec"}},
		{"graded exponential l2", false, true, "squared_l2", "exponential", []string{"rank", "trec"}},
		{"score ties", true, true, "dot", "exponential", []string{"rank"}},
	} {
		dir := t.TempDir()
		q, g, rel, _ := randomFiles(t, dir, r, 60, 140, 6, v.ties, v.graded)
		common := []string{"--k", "1,3,10,200", "--primary", "ndcg@10", "--gain", v.gain, "--quiet"}
		runFile, eligible := filepath.Join(dir, "out", "full.run"), filepath.Join(dir, "out", "eligible.qrels")
		args := append([]string{"retrieval", "run", "--queries", q, "--gallery", g, "--qrels", rel, "--similarity", v.similarity,
			"--run", runFile, "--run-depth", "0", "--write-qrels", eligible,
			"--json", filepath.Join(dir, "run.json"), "--csv", filepath.Join(dir, "run.csv")}, common...)
		if code, _, stderr := run(t, args...); code != 0 {
			t.Fatalf("%s: retrieval run: exit %d: %s", v.name, code, stderr)
		}
		want := metricsOf(t, filepath.Join(dir, "run.json"))
		wantCSV, _ := os.ReadFile(filepath.Join(dir, "run.csv"))
		for _, ties := range v.tieRules {
			out := filepath.Join(dir, "eval-"+ties)
			args := append([]string{"retrieval", "evaluate-run", "--qrels", eligible, "--run", runFile, "--ties", ties,
				"--json", out + ".json", "--csv", out + ".csv"}, common...)
			if code, _, stderr := run(t, args...); code != 0 {
				t.Fatalf("%s: evaluate-run: exit %d: %s", v.name, code, stderr)
			}
			got := metricsOf(t, out+".json")
			if len(got) != len(want) || len(want) != 2+4*4 {
				t.Fatalf("%s: %d metrics, want %d", v.name, len(got), len(want))
			}
			for k, w := range want {
				if math.Float64bits(got[k]) != math.Float64bits(w) {
					t.Errorf("%s --ties %s: %s = %v, retrieval run gives %v", v.name, ties, k, got[k], w)
				}
			}
			// Per-query rows too: same name (the run tag), order and digits.
			if gotCSV, _ := os.ReadFile(out + ".csv"); !bytes.Equal(gotCSV, wantCSV) {
				t.Errorf("%s --ties %s: per-query CSV differs", v.name, ties)
			}
		}
	}
}

func TestEvaluateRunOutputs(t *testing.T) {
	dir := t.TempDir()
	qrels := writeFile(t, dir, "q.qrels", "q1 0 d1 1\nq1 0 d2 1\nq2 0 d3 1\nq3 0 d4 0\n")
	runFile := writeFile(t, dir, "r.run", "q1 Q0 d1 1 3 sys\nq1 Q0 d2 2 2 sys\nq1 Q0 d9 3 2 sys\nqX Q0 d1 1 1 sys\n")
	base := []string{"retrieval", "evaluate-run", "--qrels", qrels, "--run", runFile, "--k", "1,2", "--primary", "ndcg@2"}

	code, stdout, stderr := run(t, base...)
	if code != 0 || !strings.HasPrefix(stdout, "# vertebrae retrieval report\n") || !strings.Contains(stdout, "| 1 | sys |") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, w := range []string{
		"vertebrae: warning: sys: 1 run query(ies) absent from the qrels were ignored.",
		"vertebrae: warning: sys: 1 qrels query(ies) without a positive grade were ignored.",
		"vertebrae: warning: sys: 1 evaluated query(ies) have no run lines and score 0 on every metric.",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	// q1: d1 at rank 1; d9 and d2 tie at score 2. trec ties put d9 first
	// (docid descending), so d2 has rank 3; q2 is missing and scores 0.
	// mean map = ((1 + 2/3) / 2 + 0) / 2, mean recall@2 = (1/2 + 0) / 2.
	code, stdout, _ = run(t, append(base, "--json", "-", "--name", "baseline")...)
	if code != 0 {
		t.Fatal(code)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	res := rep["extractor_results"].([]any)[0].(map[string]any)
	fwd := res["forward"].(map[string]any)["metrics"].(map[string]any)
	if res["name"] != "baseline" || fwd["mrr"] != 0.5 || math.Abs(fwd["map"].(float64)-5.0/12) > 1e-15 || fwd["recall@2"] != 0.25 {
		t.Errorf("name %v, metrics %v", res["name"], fwd)
	}
	// --ties rank: the rank column puts d2 (rank 2) before d9 (rank 3).
	code, stdout, _ = run(t, append(base, "--json", "-", "--ties", "rank", "--quiet")...)
	if code != 0 || !strings.Contains(stdout, `"map": 0.5,`) || !strings.Contains(stdout, "\"recall@2\": 0.5\n") {
		t.Errorf("--ties rank: exit %d\n%s", code, stdout)
	}
	code, stdout, stderr = run(t, append(base, "--quiet")...)
	if code != 0 || stdout != "" || stderr != "" {
		t.Errorf("--quiet printed %q / %q", stdout, stderr)
	}
	out := filepath.Join(dir, "new", "sub")
	code, _, stderr = run(t, append(base, "--quiet", "--json", filepath.Join(out, "r.json"), "--markdown", filepath.Join(out, "r.md"), "--csv", filepath.Join(out, "r.csv"))...)
	if code != 0 {
		t.Fatal(stderr)
	}
	csv, _ := os.ReadFile(filepath.Join(out, "r.csv"))
	wantCSV := "extractor,direction,query_id,mrr,map,precision@1,recall@1,hit_rate@1,ndcg@1,precision@2,recall@2,hit_rate@2,ndcg@2\n" +
		"sys,forward,q1,1,0.8333333333333333,1,0.5,1,1,0.5,0.5,1,0.6131471927654585\n" +
		"sys,forward,q2,0,0,0,0,0,0,0,0,0,0\n"
	if string(csv) != wantCSV {
		t.Errorf("csv:\n%s\nwant\n%s", csv, wantCSV)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 3 {
		t.Errorf("output dir holds %v", entries)
	}
}

func TestEvaluateRunErrors(t *testing.T) {
	dir := t.TempDir()
	qrels := writeFile(t, dir, "q.qrels", "q1 0 d1 1\n")
	good := writeFile(t, dir, "good.run", "q1 Q0 d1 1 1 t\n")
	out := filepath.Join(dir, "out.json")
	cases := []struct {
		name string
		code int
		args []string
		frag string
	}{
		{"no qrels", 2, []string{"--run", good}, "--qrels is required"},
		{"no run", 2, []string{"--qrels", qrels}, "--run is required"},
		{"k zero", 2, []string{"--qrels", qrels, "--run", good, "--k", "0"}, "--k entries must be >= 1"},
		{"k malformed", 2, []string{"--qrels", qrels, "--run", good, "--k", "1,x"}, "--k"},
		{"primary", 2, []string{"--qrels", qrels, "--run", good, "--k", "1,5"}, "--primary must be one of mrr, map, precision@1, recall@1, hit_rate@1, ndcg@1, precision@5, recall@5, hit_rate@5, ndcg@5; got \"ndcg@10\" (the cut-off 10 is not in --k)"},
		{"gain", 2, []string{"--qrels", qrels, "--run", good, "--gain", "cubic"}, "--gain must be exponential or linear"},
		{"ties", 2, []string{"--qrels", qrels, "--run", good, "--ties", "random"}, "--ties: ties must be trec or rank"},
		{"matrix qrels", 2, []string{"--qrels", qrels, "--run", good, "--qrels-format", "npy"}, "evaluate-run needs qrels with IDs"},
		{"unknown qrels format", 2, []string{"--qrels", qrels, "--run", good, "--qrels-format", "xml"}, "--qrels-format"},
		{"unknown extension", 2, []string{"--qrels", filepath.Join(dir, "q.xml"), "--run", good}, "set --qrels-format"},
		{"both stdout", 2, []string{"--qrels", qrels, "--run", good, "--json", "-", "--markdown", "-"}, "cannot both write to stdout"},
		{"blank name", 2, []string{"--qrels", qrels, "--run", good, "--name", " "}, "--name must not be blank"},
		{"run-depth", 2, []string{"--qrels", qrels, "--run", good, "--run-depth", "0"}, "unknown flag"},
		{"positional", 2, []string{"--qrels", qrels, "--run", good, "extra"}, "unknown command"},
		{"missing run", 1, []string{"--qrels", qrels, "--run", filepath.Join(dir, "none.run"), "--json", out}, "none.run: cannot open file"},
		{"missing qrels", 1, []string{"--qrels", filepath.Join(dir, "none.qrels"), "--run", good, "--json", out}, "none.qrels: cannot open file"},
		{"bad line", 1, []string{"--qrels", qrels, "--ties", "rank", "--run", writeFile(t, dir, "bad.run", "q1 Q0 d1 1 1 t\nq1 Q0 d2 x 1 t\n"), "--json", out},
			`bad.run:2: malformed rank "x" for query "q1", document "d2": not an integer`},
		{"fields", 1, []string{"--qrels", qrels, "--run", writeFile(t, dir, "f.run", "q1 Q0 d1 1 1\n"), "--json", out}, "f.run:1: malformed run line: expected 6"},
		{"duplicate doc", 1, []string{"--qrels", qrels, "--run", writeFile(t, dir, "dup.run", "q1 Q0 d1 1 1 t\nq1 Q0 d1 2 0 t\n"), "--json", out},
			`dup.run:2: document "d1" is listed twice for query "q1" (lines 1 and 2)`},
		{"not contiguous", 1, []string{"--qrels", qrels, "--run", writeFile(t, dir, "nc.run", "q1 Q0 d1 1 1 t\nq2 Q0 d1 1 1 t\nq1 Q0 d2 2 0 t\n"), "--json", out},
			`nc.run:3: run lines of query "q1" are not contiguous`},
		{"duplicate qrels", 1, []string{"--qrels", writeFile(t, dir, "dup.qrels", "q1 0 d1 1\nq1 0 d1 2\n"), "--run", good, "--json", out},
			"dup.qrels:2: Duplicate query/gallery relevance records are not allowed"},
		{"negative grade", 1, []string{"--qrels", writeFile(t, dir, "neg.qrels", "q1 0 d1 -1\n"), "--run", good, "--json", out},
			"neg.qrels:1: Relevance grades must be finite and non-negative"},
		{"no positive", 1, []string{"--qrels", writeFile(t, dir, "zero.qrels", "q1 0 d1 0\n"), "--run", good, "--json", out},
			"no query has a positive grade"},
	}
	for _, c := range cases {
		code, stdout, stderr := run(t, append([]string{"retrieval", "evaluate-run"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.frag) || !strings.HasPrefix(stderr, "vertebrae: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q (want %d and %q)", c.name, code, stderr, c.code, c.frag)
		}
		if stdout != "" {
			t.Errorf("%s: stdout %q on failure", c.name, stdout)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%s: output written despite failure", c.name)
		}
	}
}

// TestEvaluateRunPresortedFalse: an interleaved run fails by default with
// the sort command and --presorted=false in the message, and is scored with
// --presorted=false exactly as its grouped form.
func TestEvaluateRunPresortedFalse(t *testing.T) {
	dir := t.TempDir()
	qrels := writeFile(t, dir, "q.qrels", "q1 0 d1 1\nq2 0 d2 1\n")
	mixed := writeFile(t, dir, "mixed.run", "q1 Q0 d1 1 1 t\nq2 Q0 d1 1 1 t\nq1 Q0 d2 2 0 t\nq2 Q0 d2 2 0.5 t\n")
	grouped := writeFile(t, dir, "grouped.run", "q1 Q0 d1 1 1 t\nq1 Q0 d2 2 0 t\nq2 Q0 d1 1 1 t\nq2 Q0 d2 2 0.5 t\n")
	code, _, stderr := run(t, "retrieval", "evaluate-run", "--qrels", qrels, "--run", mixed)
	if code != 1 || !strings.Contains(stderr, "LC_ALL=C sort -s -k1,1") || !strings.Contains(stderr, "--presorted=false") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, want, _ := run(t, "retrieval", "evaluate-run", "--qrels", qrels, "--run", grouped, "--csv", filepath.Join(dir, "a.csv"), "--json", "-")
	sortDir := t.TempDir()
	code, got, stderr := run(t, "retrieval", "evaluate-run", "--qrels", qrels, "--run", mixed, "--presorted=false", "--sort-dir", sortDir, "--csv", filepath.Join(dir, "b.csv"), "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if mustRead(t, filepath.Join(dir, "a.csv")) != mustRead(t, filepath.Join(dir, "b.csv")) {
		t.Error("per-query metrics differ between the grouped run and --presorted=false")
	}
	rw, rg := reportOf(t, want), reportOf(t, got)
	fw := rw["extractor_results"].([]any)[0].(map[string]any)["forward"].(map[string]any)["metrics"]
	fg := rg["extractor_results"].([]any)[0].(map[string]any)["forward"].(map[string]any)["metrics"]
	if !reflect.DeepEqual(fw, fg) {
		t.Errorf("metrics %v, want %v", fg, fw)
	}
	if names, _ := os.ReadDir(sortDir); len(names) != 0 {
		t.Errorf("temporary files left in --sort-dir: %v", names)
	}
	if code, _, _ := run(t, "retrieval", "evaluate-run", "--qrels", qrels, "--run", grouped, "--sort-dir", sortDir); code != 2 {
		t.Errorf("--sort-dir without --presorted=false: exit %d, want 2", code)
	}
}
