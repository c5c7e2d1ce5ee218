package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Counting wrappers keep the interface the wrapped extractor has (same
// modality or branches), so the run takes the same path.
type countingEncoder struct {
	extract.Encoder
	calls *atomic.Int64
}

func (c countingEncoder) Encode(ctx context.Context, b extract.Batch) (matrix.Matrix, error) {
	c.calls.Add(1)
	return c.Encoder.Encode(ctx, b)
}

type countingBranches struct {
	extract.BranchEncoder
	calls *atomic.Int64
}

func (c countingBranches) EncodeBranch(ctx context.Context, b extract.Batch, branch string) (matrix.Matrix, error) {
	c.calls.Add(1)
	return c.BranchEncoder.EncodeBranch(ctx, b, branch)
}

// countEncodes installs wrapExtractor for the test; calls(name) is the
// number of encoder calls of that extractor since the last reset().
func countEncodes(t *testing.T) (calls func(name string) int64, reset func()) {
	var mu sync.Mutex
	counters := map[string]*atomic.Int64{}
	counter := func(name string) *atomic.Int64 {
		mu.Lock()
		defer mu.Unlock()
		if counters[name] == nil {
			counters[name] = &atomic.Int64{}
		}
		return counters[name]
	}
	wrapExtractor = func(x extract.Extractor) extract.Extractor {
		switch e := x.(type) {
		case extract.BranchEncoder:
			return countingBranches{e, counter(x.Name())}
		case extract.Encoder:
			return countingEncoder{e, counter(x.Name())}
		}
		t.Fatalf("extractor %s is neither an encoder nor a branch encoder", x.Name())
		return nil
	}
	t.Cleanup(func() { wrapExtractor = nil })
	return func(name string) int64 { return counter(name).Load() }, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range counters {
			c.Store(0)
		}
	}
}

// cacheStatuses maps result names to cache_status and removes the field,
// so the rest of two reports can be compared.
func cacheStatuses(t *testing.T, rep map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, r := range rep["extractor_results"].([]any) {
		m := r.(map[string]any)
		out[m["name"].(string)] = m["cache_status"]
		delete(m, "cache_status")
	}
	return out
}

func runJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := run(t, append([]string{"retrieval", "run", "--json", "-", "--quiet"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	return reportOf(t, stdout)
}

// SPEC §9.5 in local runs: a cache-safe precomputed extractor is a miss,
// then a hit that encodes nothing and reports the same numbers; cache:
// false is disabled every time; --store overrides store:; no store reports
// disabled; a damaged cached artifact stops the run naming the key.
func TestRunSpecEndpointCache(t *testing.T) {
	calls, reset := countEncodes(t)
	f := newFixture(t)
	f.qrels(t)
	spec := `version: 1
dataset:
  queries: {path: q.npy}
  gallery: {path: g.npy}
  qrels: {path: rel.qrels}
retrieval: {ks: [1, 2], primary_metric: ndcg@2, bidirectional: true}
store: cache
extractors:
  - {name: tables, type: precomputed}
  - {name: fresh, type: precomputed, cache: false}
`
	path := writeFile(t, f.dir, "run.yaml", spec)
	first := runJSON(t, "--spec", path)
	if got := cacheStatuses(t, first); !reflect.DeepEqual(got, map[string]any{"tables": "miss", "fresh": "disabled"}) {
		t.Errorf("first run: %v", got)
	}
	if calls("tables") == 0 || calls("fresh") == 0 {
		t.Fatalf("first run encoded tables %d, fresh %d times", calls("tables"), calls("fresh"))
	}
	reset()
	second := runJSON(t, "--spec", path)
	if got := cacheStatuses(t, second); !reflect.DeepEqual(got, map[string]any{"tables": "hit", "fresh": "disabled"}) {
		t.Errorf("second run: %v", got)
	}
	if n := calls("tables"); n != 0 {
		t.Errorf("a cache hit encoded %d batches", n)
	}
	if calls("fresh") == 0 {
		t.Error("cache: false reused endpoints")
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("hit and miss reports differ:\n%v\n%v", first, second)
	}
	// Exactly the two endpoints of tables, under canonical keys.
	code, stdout, stderr := run(t, "retrieval", "ls", "--store", filepath.Join(f.dir, "cache"))
	if code != 0 {
		t.Fatal(stderr)
	}
	var ls struct{ Keys []string }
	if err := json.Unmarshal([]byte(stdout), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls.Keys) != 2 || !strings.HasPrefix(ls.Keys[0], "retrieval/embeddings/") ||
		!strings.HasSuffix(ls.Keys[0], "/gallery/default") || !strings.HasSuffix(ls.Keys[1], "/query/default") {
		t.Errorf("store keys %v", ls.Keys)
	}

	// --store replaces store: (a fresh store: miss again).
	if got := cacheStatuses(t, runJSON(t, "--spec", path, "--store", filepath.Join(f.dir, "other"))); got["tables"] != "miss" {
		t.Errorf("--store: %v", got)
	}
	// --store is for run files only.
	if code, _, stderr := run(t, "retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", filepath.Join(f.dir, "rel.qrels"),
		"--store", filepath.Join(f.dir, "cache")); code != 2 || !strings.Contains(stderr, "--store requires --spec") {
		t.Errorf("--store without --spec: exit %d: %s", code, stderr)
	}
	// Without any store every result is disabled.
	plain := writeFile(t, f.dir, "plain.yaml", strings.Replace(spec, "store: cache\n", "", 1))
	if got := cacheStatuses(t, runJSON(t, "--spec", plain)); !reflect.DeepEqual(got, map[string]any{"tables": "disabled", "fresh": "disabled"}) {
		t.Errorf("no store: %v", got)
	}

	// A flipped byte in a cached array is a verification error naming the
	// key, not a silent re-encode.
	arrays, _ := filepath.Glob(filepath.Join(f.dir, "cache", "retrieval", "embeddings", "*", "*", "query", "default", "array-*.npy"))
	if len(arrays) != 1 {
		t.Fatalf("cached query arrays %v", arrays)
	}
	data, err := os.ReadFile(arrays[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0x40
	if err := os.WriteFile(arrays[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, "retrieval", "run", "--spec", path, "--json", "-", "--quiet")
	if code != 1 || !strings.Contains(stderr, "checksum mismatch") || !strings.Contains(stderr, ls.Keys[1]) {
		t.Errorf("damaged cache: exit %d: %s", code, stderr)
	}
}

// stalingServer is an OpenAI-compatible server whose model can be swapped
// behind the same URL and name: version 1 is vectorFor, version 2 a
// different integer-valued model.
type stalingServer struct {
	*httptest.Server
	version  atomic.Int64
	requests atomic.Int64
}

func modelV2(text string) []float64 {
	v := vectorFor(text)
	return []float64{v[2], float64(len(text) % 3), v[0], 1}
}

func newStalingServer(t *testing.T) *stalingServer {
	s := &stalingServer{}
	s.version.Store(1)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", 400)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i, text := range req.Input {
			v := vectorFor(text)
			if s.version.Load() == 2 {
				v = modelV2(text)
			}
			data = append(data, item{i, v})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data, "model": req.Model})
	}))
	t.Cleanup(s.Close)
	return s
}

// A hosted extractor without cache_identity is bypassed: a model changed
// behind the same URL and name gives its new numbers (those of the new
// vectors as precomputed tables), and nothing is cached, neither in the
// store nor in the per-text vector cache. With cache_identity it is a
// miss, then a hit that sends no request.
func TestRunSpecHostedStaleModel(t *testing.T) {
	srv := newStalingServer(t)
	dir := t.TempDir()
	queries := []string{"banana", "tree", "boot"}
	corpus := []string{"papaya", "green", "moon", "xyz"}
	writeFile(t, dir, "queries.jsonl", `{"_id": "q1", "text": "banana"}`+"\n"+`{"_id": "q2", "text": "tree"}`+"\n"+`{"_id": "q3", "text": "boot"}`+"\n")
	writeFile(t, dir, "corpus.jsonl", `{"_id": "d1", "text": "papaya"}`+"\n"+`{"_id": "d2", "text": "green"}`+"\n"+`{"_id": "d3", "text": "moon"}`+"\n"+`{"_id": "d4", "text": "xyz"}`+"\n")
	writeFile(t, dir, "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\nq3\td4\t1\n")
	var qv, gv [][]float64
	for _, s := range queries {
		qv = append(qv, modelV2(s))
	}
	for _, s := range corpus {
		gv = append(gv, modelV2(s))
	}
	writeNPY(t, dir, "v2_q.npy", qv)
	writeNPY(t, dir, "v2_g.npy", gv)
	head := `version: 1
dataset:
  queries: {modality: text, path: queries.jsonl}
  gallery: {modality: text, path: corpus.jsonl}
  qrels: {path: qrels.tsv}
retrieval: {similarity: cosine, ks: [1, 2, 4], primary_metric: ndcg@4}
store: cache
extractors:
`
	path := writeFile(t, dir, "run.yaml", head+`  - {name: api, type: openai, base_url: "`+srv.URL+`/v1", model: toy}
`)
	metricsOf := func(rep map[string]any) any {
		return rep["extractor_results"].([]any)[0].(map[string]any)["forward"].(map[string]any)["metrics"]
	}
	first := runJSON(t, "--spec", path)
	if got := cacheStatuses(t, first); got["api"] != "bypassed_unsafe_identity" {
		t.Errorf("first run: %v", got)
	}
	srv.version.Store(2)
	before := srv.requests.Load()
	second := runJSON(t, "--spec", path)
	if got := cacheStatuses(t, second); got["api"] != "bypassed_unsafe_identity" {
		t.Errorf("second run: %v", got)
	}
	if srv.requests.Load() == before {
		t.Error("the second run sent no request")
	}
	want := runJSON(t, "--spec", writeFile(t, dir, "v2.yaml", head+"  - {name: api, type: precomputed, queries: v2_q.npy, gallery: v2_g.npy}\n"))
	if reflect.DeepEqual(metricsOf(first), metricsOf(want)) {
		t.Fatal("test models do not differ in their metrics")
	}
	if !reflect.DeepEqual(metricsOf(second), metricsOf(want)) {
		t.Errorf("after the model change: %v, the new model gives %v", metricsOf(second), metricsOf(want))
	}
	if _, err := os.Stat(filepath.Join(dir, ".vertebrae_cache")); !os.IsNotExist(err) {
		t.Errorf("a vector cache was written without cache_identity (%v)", err)
	}

	// The identity-bearing variant: a precomputed-free store gets a miss,
	// then a hit (the vectors of the identity it names) with no request.
	keyed := writeFile(t, dir, "keyed.yaml", strings.Replace(head, "store: cache", "store: keyed-cache", 1)+
		`  - {name: api, type: openai, base_url: "`+srv.URL+`/v1", model: toy, cache_identity: toy@v2}
`)
	if got := cacheStatuses(t, runJSON(t, "--spec", keyed)); got["api"] != "miss" {
		t.Errorf("cache_identity first run: %v", got)
	}
	before = srv.requests.Load()
	if got := cacheStatuses(t, runJSON(t, "--spec", keyed)); got["api"] != "hit" {
		t.Errorf("cache_identity second run: %v", got)
	}
	if n := srv.requests.Load() - before; n != 0 {
		t.Errorf("a hit sent %d requests", n)
	}
}
