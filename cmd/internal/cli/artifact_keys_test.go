package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// keyFixture is a local store after one whole artifact flow, with the key
// of every artifact type the commands take.
type keyFixture struct {
	dir, store, spec, plan string
	query, gallery         string // endpoint keys
	relevance, score       string
	report                 string // a retrieval_report (from-artifacts --output-key)
}

func newKeyFixture(t *testing.T) *keyFixture {
	t.Helper()
	dir := t.TempDir()
	f := &keyFixture{dir: dir, store: filepath.Join(dir, "store")}
	f.spec = artifactDataset(t, dir, artifactCase{name: "keys", dtype: "float32", similarity: "cosine"}, 5, 8)
	_, f.score = runArtifactFlow(t, f.store, f.spec, 2)
	f.plan = filepath.Join(dir, "plan.json")
	var doc struct {
		Query     string `json:"query_embedding_key"`
		Gallery   string `json:"gallery_embedding_key"`
		Relevance string `json:"relevance_key"`
	}
	f.readMetadata(t, f.score, &doc)
	f.query, f.gallery, f.relevance = doc.Query, doc.Gallery, doc.Relevance
	f.report = "reports/first"
	f.mustRun(t, "retrieval", "from-artifacts", "--score-key", f.score, "--output-key", f.report)
	return f
}

func (f *keyFixture) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return run(t, append(args, "--store", f.store)...)
}

func (f *keyFixture) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := f.run(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	return stdout
}

// readMetadata decodes key's metadata document through the CLI's store.
func (f *keyFixture) readMetadata(t *testing.T, key string, dst any) {
	t.Helper()
	var m struct {
		Metadata struct{ Filename string } `json:"metadata"`
	}
	b, err := os.ReadFile(filepath.Join(f.store, key, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err == nil {
		b, err = os.ReadFile(filepath.Join(f.store, key, m.Metadata.Filename))
	}
	if err == nil {
		err = json.Unmarshal(b, dst)
	}
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

func (f *keyFixture) scoreArgs(q, g, r string, extra ...string) []string {
	return append([]string{"retrieval", "score", "--query-key", q, "--gallery-key", g, "--relevance-key", r, "--config", f.spec}, extra...)
}

// Every key argument names the artifact type it must (SPEC §6.8): any
// other artifact is refused with `<key> is a <type>, not <expected>`,
// exit 1, before any work and without touching the store. An endpoint
// given as --exclusions-key used to read as "no exclusions" and change
// every metric with exit 0.
func TestKeyArgumentsAreCheckedByType(t *testing.T) {
	f := newKeyFixture(t)
	shard0 := []string{"--total-shards", "2", "--shard-index", "0"}
	cases := []struct {
		name string
		args []string
		frag string
	}{
		{"exclusions is an endpoint", f.scoreArgs(f.query, f.gallery, f.relevance, "--exclusions-key", f.gallery),
			f.gallery + " is a gallery-side retrieval_embedding, not a retrieval_exclusions or retrieval_relevance"},
		{"exclusions is a score", f.scoreArgs(f.query, f.gallery, f.relevance, "--exclusions-key", f.score),
			f.score + " is a retrieval_evaluation, not a retrieval_exclusions or retrieval_relevance"},
		{"exclusions is a report", f.scoreArgs(f.query, f.gallery, f.relevance, "--exclusions-key", f.report),
			f.report + " is a retrieval_report, not a retrieval_exclusions"},
		{"sharded exclusions is an endpoint", f.scoreArgs(f.query, f.gallery, f.relevance, append([]string{"--exclusions-key", f.query}, shard0...)...),
			f.query + " is a query-side retrieval_embedding, not a retrieval_exclusions"},
		{"finalize exclusions is an endpoint", f.scoreArgs(f.query, f.gallery, f.relevance, "--exclusions-key", f.query, "--total-shards", "2", "--finalize"),
			f.query + " is a query-side retrieval_embedding, not a retrieval_exclusions"},
		{"query is the gallery", f.scoreArgs(f.gallery, f.gallery, f.relevance),
			f.gallery + " is a gallery-side retrieval_embedding, not a query-side endpoint embedding"},
		{"gallery is the query", f.scoreArgs(f.query, f.query, f.relevance),
			f.query + " is a query-side retrieval_embedding, not a gallery-side endpoint embedding"},
		{"query is the relevance", f.scoreArgs(f.relevance, f.gallery, f.relevance),
			f.relevance + " is a retrieval_relevance, not an endpoint embedding"},
		{"relevance is an endpoint", f.scoreArgs(f.query, f.gallery, f.query),
			f.query + " is a query-side retrieval_embedding, not a retrieval_relevance"},
		{"relevance is a score", f.scoreArgs(f.query, f.gallery, f.score, shard0...),
			f.score + " is a retrieval_evaluation, not a retrieval_relevance"},
		{"compress query is the gallery", []string{"retrieval", "compress", "--query-key", f.gallery, "--gallery-key", f.gallery, "--config", f.compressConfig(t)},
			f.gallery + " is a gallery-side retrieval_embedding, not a query-side endpoint embedding"},
		{"compress gallery is the relevance", []string{"retrieval", "compress", "--query-key", f.query, "--gallery-key", f.relevance, "--config", f.compressConfig(t)},
			f.relevance + " is a retrieval_relevance, not a gallery-side endpoint embedding"},
		{"score key is a report", []string{"retrieval", "from-artifacts", "--score-key", f.report},
			f.report + " is a retrieval_report, not a retrieval_evaluation"},
		{"score key is the relevance", []string{"retrieval", "from-artifacts", "--score-key", f.score + "," + f.relevance},
			f.relevance + " is a retrieval_relevance, not a retrieval_evaluation"},
	}
	before := storeSnapshot(t, f.store)
	for _, c := range cases {
		code, stdout, stderr := f.run(t, c.args...)
		if code != 1 || !strings.Contains(stderr, c.frag) || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %s\nwant exit 1 and %q", c.name, code, stdout, stderr, c.frag)
		}
	}
	if after := storeSnapshot(t, f.store); !reflect.DeepEqual(before, after) {
		t.Error("a refused command changed the store")
	}

	// A relevance artifact is a valid --exclusions-key: its exclusions are
	// the ones the relevance document carries, so the metrics are those of
	// the plain score (under another evaluation fingerprint).
	var plain, viaRelevance struct {
		PrimaryScore float64 `json:"primary_score"`
		Key          string  `json:"key"`
	}
	if err := json.Unmarshal([]byte(f.mustRun(t, f.scoreArgs(f.query, f.gallery, f.relevance)...)), &plain); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(f.mustRun(t, f.scoreArgs(f.query, f.gallery, f.relevance, "--exclusions-key", f.relevance)...)), &viaRelevance); err != nil {
		t.Fatal(err)
	}
	if plain.PrimaryScore != viaRelevance.PrimaryScore || plain.Key == viaRelevance.Key {
		t.Errorf("--exclusions-key <relevance>: %+v, plain %+v", viaRelevance, plain)
	}
}

func (f *keyFixture) compressConfig(t *testing.T) string {
	t.Helper()
	return writeFile(t, f.dir, "pca.yaml", "method: pca\nn_components: 2\n")
}

// An output key never replaces a committed artifact of another type, nor,
// when the user chose it, of other content (SPEC §6.8): `<key> already
// holds a <type>`, exit 1, and the store is untouched. An identical
// rewrite is allowed, so shard commands stay idempotent.
func TestOutputKeysNeverReplaceAnotherArtifact(t *testing.T) {
	f := newKeyFixture(t)
	var plan map[string]any
	if err := json.Unmarshal([]byte(mustRead(t, f.plan)), &plan); err != nil {
		t.Fatal(err)
	}
	// A plan whose keys were edited to name committed artifacts: the
	// gallery's shard key holds the score, its endpoint key the relevance.
	gallery := plan["extractors"].([]any)[0].(map[string]any)["endpoints"].([]any)[1].(map[string]any)
	if gallery["side"] != "gallery" {
		t.Fatalf("plan endpoint 1 is %v", gallery["side"])
	}
	gallery["output_key"] = f.relevance
	shards := gallery["shards"].([]any)
	shards[0].(map[string]any)["output_key"] = f.score
	shards[1].(map[string]any)["output_key"] = "runs/edited/shards/00001-of-00002"
	edited, _ := json.Marshal(plan)
	var other struct{ Key string }
	if err := json.Unmarshal([]byte(f.mustRun(t, f.scoreArgs(f.query, f.gallery, f.relevance, "--exclusions-key", f.relevance)...)), &other); err != nil {
		t.Fatal(err)
	}
	editedPlan := writeFile(t, f.dir, "edited-plan.json", string(edited))

	cases := []struct {
		name string
		args []string
		frag string
	}{
		{"from-artifacts into the gallery", []string{"retrieval", "from-artifacts", "--score-key", f.score, "--output-key", f.gallery},
			f.gallery + " already holds a gallery-side retrieval_embedding"},
		{"from-artifacts into the relevance", []string{"retrieval", "from-artifacts", "--score-key", f.score, "--output-key", f.relevance},
			f.relevance + " already holds a retrieval_relevance"},
		{"write-relevance into the gallery", []string{"retrieval", "write-relevance", "--spec", f.spec, "--output-key", f.gallery},
			f.gallery + " already holds a gallery-side retrieval_embedding"},
		{"write-relevance into the score", []string{"retrieval", "write-relevance", "--spec", f.spec, "--output-key", f.score},
			f.score + " already holds a retrieval_evaluation"},
		{"score into the gallery", f.scoreArgs(f.query, f.gallery, f.relevance, "--output-key", f.gallery),
			f.gallery + " already holds a gallery-side retrieval_embedding"},
		{"score into the relevance", f.scoreArgs(f.query, f.gallery, f.relevance, "--output-key", f.relevance),
			f.relevance + " already holds a retrieval_relevance"},
		{"score shard under the query", f.scoreArgs(f.query, f.gallery, f.relevance, "--output-key", f.query, "--total-shards", "2", "--shard-index", "1"),
			f.query + " already holds a query-side retrieval_embedding"},
		{"finalize into the report", f.scoreArgs(f.query, f.gallery, f.relevance, "--output-key", f.report, "--total-shards", "2", "--finalize"),
			f.report + " already holds a retrieval_report"},
		{"compress into the score", []string{"retrieval", "compress", "--query-key", f.query, "--gallery-key", f.gallery, "--config", f.compressConfig(t), "--output-prefix", f.score},
			f.score + " already holds a retrieval_evaluation"},
		{"embed-shard into the score", []string{"retrieval", "embed-shard", "--plan", editedPlan, "--extractor", "tables", "--side", "gallery", "--shard-index", "0"},
			f.score + " already holds a retrieval_evaluation"},
		{"score with other content at an explicit key", f.scoreArgs(f.query, f.gallery, f.relevance, "--output-key", f.score, "--exclusions-key", f.relevance),
			f.score + " already holds a retrieval_evaluation with other content"},
		{"report with other content", []string{"retrieval", "from-artifacts", "--score-key", other.Key, "--output-key", f.report},
			f.report + " already holds a retrieval_report with other content"},
	}
	before := storeSnapshot(t, f.store)
	for _, c := range cases {
		code, _, stderr := f.run(t, c.args...)
		if code != 1 || !strings.Contains(stderr, c.frag) {
			t.Errorf("%s: exit %d, stderr %s\nwant exit 1 and %q", c.name, code, stderr, c.frag)
		}
	}
	if after := storeSnapshot(t, f.store); !reflect.DeepEqual(before, after) {
		t.Error("a refused command changed the store")
	}
	// The merge of the edited plan refuses its endpoint key (the relevance)
	// once its shards exist.
	f.mustRun(t, "retrieval", "embed-shard", "--plan", editedPlan, "--extractor", "tables", "--side", "gallery", "--shard-index", "1")
	if code, _, stderr := f.run(t, "retrieval", "merge", "--plan", editedPlan, "--extractor", "tables", "--side", "gallery"); code != 1 ||
		!strings.Contains(stderr, f.relevance+" already holds a retrieval_relevance") {
		t.Errorf("merge into the relevance: exit %d, %s", code, stderr)
	}
	// Everything still scores, and identical rewrites at explicit keys
	// succeed without changing a byte.
	before = storeSnapshot(t, f.store)
	f.mustRun(t, f.scoreArgs(f.query, f.gallery, f.relevance)...)
	f.mustRun(t, f.scoreArgs(f.query, f.gallery, f.relevance, "--output-key", f.score)...)
	f.mustRun(t, "retrieval", "from-artifacts", "--score-key", f.score, "--output-key", f.report)
	f.mustRun(t, "retrieval", "write-relevance", "--spec", f.spec, "--output-key", f.relevance)
	if after := storeSnapshot(t, f.store); !reflect.DeepEqual(before, after) {
		t.Error("an identical rewrite changed the store")
	}
}
