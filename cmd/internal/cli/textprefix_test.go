package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// A run file's text_prefix reaches the hosted server (every query text with
// the query prefix, every gallery text with the gallery one) and is part of
// the reported recipe (SPEC §9.4).
func TestRunFileTextPrefix(t *testing.T) {
	var mu sync.Mutex
	var inputs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", 400)
			return
		}
		mu.Lock()
		inputs = append(inputs, req.Input...)
		mu.Unlock()
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i, s := range req.Input {
			data = append(data, item{i, vectorFor(s)})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeFile(t, dir, "q.txt", "banana\ntree\n")
	writeFile(t, dir, "g.txt", "papaya\ngreen\nmoon\n")
	writeFile(t, dir, "qrels.tsv", "0\t0\t1\n1\t1\t1\n")
	spec := writeFile(t, dir, "run.yaml", `version: 1
dataset:
  queries: {modality: text, path: q.txt}
  gallery: {modality: text, path: g.txt}
  qrels: {path: qrels.tsv}
retrieval: {ks: [1, 2], primary_metric: mrr}
extractors:
  - name: e5
    type: openai
    base_url: "`+srv.URL+`/v1"
    model: e5
    text_prefix: {query: "query: ", gallery: "passage: "}
`)
	code, stdout, stderr := run(t, "retrieval", "run", "--spec", spec, "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	slices.Sort(inputs)
	if want := []string{"passage: green", "passage: moon", "passage: papaya", "query: banana", "query: tree"}; !slices.Equal(inputs, want) {
		t.Errorf("server saw %q, want %q", inputs, want)
	}
	r := reportOf(t, stdout)["extractor_results"].([]any)[0].(map[string]any)
	tp, _ := r["recipe"].(map[string]any)["text_prefix"].(map[string]any)
	if tp["query"] != "query: " || tp["gallery"] != "passage: " {
		t.Errorf("recipe %v does not record the text_prefix", r["recipe"])
	}
}
