package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// vectorFor is the toy hosted model: counts of a few letters.
func vectorFor(text string) []float64 {
	v := make([]float64, 4)
	for _, r := range text {
		switch r {
		case 'a':
			v[0]++
		case 'e':
			v[1]++
		case 'o':
			v[2]++
		default:
			v[3] += 0.01
		}
	}
	return v
}

// A run file with two extractors (an OpenAI-compatible server and
// precomputed tables) and two compression variants gives a ranked JSON and
// Markdown report.
func TestRunFileEndToEnd(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/embeddings" {
			http.Error(w, "bad request", 400)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i, s := range req.Input {
			data = append(data, item{i, vectorFor(s)})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data, "model": req.Model})
	}))
	defer srv.Close()

	dir := t.TempDir()
	writeFile(t, dir, "queries.jsonl", `{"_id": "q1", "text": "banana"}`+"\n"+`{"_id": "q2", "text": "tree"}`+"\n"+`{"_id": "q3", "text": "boot"}`+"\n")
	writeFile(t, dir, "corpus.jsonl", `{"_id": "d1", "text": "papaya"}`+"\n"+`{"_id": "d2", "text": "green"}`+"\n"+`{"_id": "d3", "text": "moon"}`+"\n"+`{"_id": "d4", "text": "xyz"}`+"\n")
	writeFile(t, dir, "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n")
	writeNPY(t, dir, "q.npy", [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}})
	writeNPY(t, dir, "g.npy", [][]float64{{1, 0.1, 0}, {0, 1, 0.2}, {0.3, 0, 1}, {1, 1, 1}})
	spec := `version: 1
dataset:
  id: letters
  revision: "1"
  queries: {modality: text, path: queries.jsonl}
  gallery: {modality: text, path: corpus.jsonl}
  qrels: {path: qrels.tsv}
retrieval: {similarity: cosine, ks: [1, 2], primary_metric: ndcg@2}
embedding: {batch_size: 2}
compression:
  - {method: none}
  - {method: quantize, precision: int8}
extractors:
  - {name: letters-api, type: openai, base_url: "` + srv.URL + `/v1", model: toy}
  - {name: tables, type: precomputed, queries: q.npy, gallery: g.npy}
outputs: {json: out/report.json, markdown: out/report.md}
`
	specPath := writeFile(t, dir, "run.yaml", spec)
	code, stdout, stderr := run(t, "retrieval", "run", "--spec", specPath, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("--quiet printed %q", stdout)
	}
	rep := reportOf(t, mustRead(t, filepath.Join(dir, "out", "report.json")))
	var names []string
	for _, r := range rep["extractor_results"].([]any) {
		names = append(names, r.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "letters-api,letters-api[quantize_int8],tables,tables[quantize_int8]" {
		t.Errorf("results %v", names)
	}
	if rep["ranking"].([]any)[0].(map[string]any)["primary_score"].(float64) != 1 {
		t.Errorf("ranking %v", rep["ranking"])
	}
	// Four results: the report compares them with the §13 defaults.
	cmp, ok := rep["comparison"].(map[string]any)
	if !ok {
		t.Fatal("run-file report has no comparison section")
	}
	if st := cmp["settings"].(map[string]any); st["bootstrap"] != 10000.0 || st["test"] != "randomization" || len(st["results"].([]any)) != 4 {
		t.Errorf("comparison settings %v", st)
	}
	if got := rep["dataset_summary"].(map[string]any)["query_modality"]; got != "text" {
		t.Errorf("query modality %v", got)
	}
	if ec := rep["metadata"].(map[string]any)["embedding_config"].(map[string]any); ec["batch_size"] != 2.0 {
		t.Errorf("embedding config %v", ec)
	}
	md := mustRead(t, filepath.Join(dir, "out", "report.md"))
	if !strings.Contains(md, "| 1 | ") || !strings.Contains(md, "## Compression") {
		t.Errorf("markdown:\n%s", md)
	}
	// 3 queries and 4 gallery texts in batches of 2: 4 requests.
	if n := requests.Load(); n != 4 {
		t.Errorf("%d requests", n)
	}
	// Flag overrides and the allowed-flags rule.
	out := filepath.Join(dir, "override.json")
	if code, _, stderr := run(t, "retrieval", "run", "--spec", specPath, "--json", out, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Error("--json did not override the run file's output")
	}
	if code, _, stderr := run(t, "retrieval", "run", "--spec", specPath, "--k", "1"); code != 2 || !strings.Contains(stderr, "with --spec only") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	// Unknown keys fail with the line.
	bad := writeFile(t, dir, "bad.yaml", strings.Replace(spec, "embedding: {batch_size: 2}", "embedding: {batch_size: 2, colour: blue}", 1))
	if code, _, stderr := run(t, "retrieval", "run", "--spec", bad); code == 0 || !strings.Contains(stderr, "bad.yaml:9") || !strings.Contains(stderr, "unknown field") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
