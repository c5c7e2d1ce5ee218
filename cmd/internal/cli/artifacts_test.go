package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/internal/testutil/treesnap"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/location"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

// artifactCase is one dataset of the round-trip test.
type artifactCase struct {
	name          string
	dtype         string // float16, float32, float64, csr
	similarity    string
	bidirectional bool
	shards        int
	labels        bool // label-derived relevance (three classes) instead of graded qrels
}

// writeEndpoint writes a rows×cols random endpoint of the case's kind.
func writeEndpoint(t *testing.T, dir, name string, rng *rand.Rand, rows, cols int, kind string) string {
	t.Helper()
	vals := make([]float64, rows*cols)
	for i := range vals {
		vals[i] = float64(rng.IntN(9)-4) / 4 // small grid: ties happen
	}
	var m *matrix.Dense
	var err error
	switch kind {
	case "float16":
		b := make([]uint16, len(vals))
		for i, v := range vals {
			b[i] = float16.Fromfloat32(float32(v)).Bits()
		}
		m, err = matrix.NewDense16(rows, cols, b)
	case "float32", "csr":
		f := make([]float32, len(vals))
		for i, v := range vals {
			f[i] = float32(v)
		}
		m, err = matrix.NewDense32(rows, cols, f)
	default:
		m, err = matrix.NewDense64(rows, cols, vals)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Keep every row non-zero (cosine rejects zero norms).
	for r := 0; r < rows; r++ {
		switch kind {
		case "float16":
			m.Float16Bits()[r*cols] = float16.Fromfloat32(1).Bits()
		case "float32", "csr":
			m.Float32Data()[r*cols] = 1
		default:
			m.Float64Data()[r*cols] = 1
		}
	}
	if kind != "csr" {
		return writeMatrix(t, dir, name+".npy", m)
	}
	var indptr []int64 = []int64{0}
	var idx []int32
	var data []float32
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if v := m.Float32Data()[r*cols+c]; v != 0 {
				idx = append(idx, int32(c))
				data = append(data, v)
			}
		}
		indptr = append(indptr, int64(len(idx)))
	}
	csr, err := matrix.NewCSR32(rows, cols, indptr, idx, data)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := npz.WriteCSR(&buf, csr); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name+".npz", buf.String())
}

// artifactDataset writes a run file with graded relevance (or, for a labels
// case, label-derived relevance of three classes) and exclusions over nq
// queries and ng gallery items and returns its path.
func artifactDataset(t *testing.T, dir string, c artifactCase, nq, ng int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
	q := writeEndpoint(t, dir, "q", rng, nq, 6, c.dtype)
	g := writeEndpoint(t, dir, "g", rng, ng, 6, c.dtype)
	var qids, gids, qrels, excl, ql, gl strings.Builder
	for i := 0; i < nq; i++ {
		fmt.Fprintf(&qids, "q%d\n", i)
		fmt.Fprintf(&ql, "c%d\n", i%3)
	}
	for j := 0; j < ng; j++ {
		fmt.Fprintf(&gids, "g%d\n", j)
		fmt.Fprintf(&gl, "c%d\n", j%3)
	}
	// Every gallery item is relevant to some query (bidirectional coverage);
	// grades 1..3; each query also gets an excluded positive and an
	// excluded negative.
	for j := 0; j < ng; j++ {
		fmt.Fprintf(&qrels, "q%d 0 g%d %d\n", j%nq, j, 1+j%3)
	}
	for i := 0; i < nq; i++ {
		fmt.Fprintf(&qrels, "q%d 0 g%d %d\n", i, (i+1)%ng, 2)
	}
	for i := 0; i < nq; i += 3 {
		fmt.Fprintf(&excl, "q%d g%d\n", i, (i+1)%ng)
		fmt.Fprintf(&excl, "q%d g%d\n", i, (i+2)%ng)
	}
	writeFile(t, dir, "qids.txt", qids.String())
	writeFile(t, dir, "gids.txt", gids.String())
	writeFile(t, dir, "rel.qrels", qrels.String())
	writeFile(t, dir, "ex.txt", excl.String())
	relevance := "qrels: {path: rel.qrels, format: trec}"
	if c.labels {
		writeFile(t, dir, "ql.txt", ql.String())
		writeFile(t, dir, "gl.txt", gl.String())
		relevance = "labels: {queries: ql.txt, gallery: gl.txt}"
	}
	spec := fmt.Sprintf(`version: 1
dataset:
  id: artifacts
  revision: "%s"
  queries: {path: %s, ids: qids.txt}
  gallery: {path: %s, ids: gids.txt}
  %s
  exclusions: ex.txt
retrieval: {similarity: %s, ks: [1, 3, 10], primary_metric: ndcg@3, bidirectional: %v, gain: linear, worst_queries: 3}
extractors:
  - {name: tables, type: precomputed}
`, c.name, filepath.Base(q), filepath.Base(g), relevance, c.similarity, c.bidirectional)
	return writeFile(t, dir, "run.yaml", spec)
}

// runArtifactFlow drives plan → embed-shard → merge → write-relevance →
// score → from-artifacts through the CLI and returns the reconstruction and
// the score key.
func runArtifactFlow(t *testing.T, storeURI, spec string, shards int) (string, string) {
	t.Helper()
	dir := filepath.Dir(spec)
	must := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := run(t, append(args, "--store", storeURI)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	planPath := filepath.Join(dir, "plan.json")
	must("retrieval", "plan", "--spec", spec, "--total-shards", fmt.Sprint(shards), "--output-json", planPath)
	plan, err := readPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, ep := range plan.Extractors[0].Endpoints {
		for _, sh := range ep.Shards {
			must("retrieval", "embed-shard", "--plan", planPath, "--extractor", "tables", "--side", ep.Side, "--shard-index", fmt.Sprint(sh.ShardIndex))
		}
		must("retrieval", "merge", "--plan", planPath, "--extractor", "tables", "--side", ep.Side)
		keys[ep.Side] = ep.OutputKey
	}
	var rel struct{ Key string }
	if err := json.Unmarshal([]byte(must("retrieval", "write-relevance", "--spec", spec)), &rel); err != nil {
		t.Fatal(err)
	}
	var sc struct{ Key string }
	out := must("retrieval", "score", "--query-key", keys["query"], "--gallery-key", keys["gallery"], "--relevance-key", rel.Key, "--config", spec)
	if err := json.Unmarshal([]byte(out), &sc); err != nil {
		t.Fatal(err)
	}
	return must("retrieval", "from-artifacts", "--score-key", sc.Key,
		"--markdown", filepath.Join(dir, "artifact.md"), "--csv", filepath.Join(dir, "artifact.csv")), sc.Key
}

// The artifact path gives the JSON of `retrieval run` on the same files,
// graded qrels and label-derived relevance alike:
// every extractor result (timings aside) and the ranking are identical, the
// summary fields of §10.8 equal the local ones and the protocol fingerprint
// is the local run's.
func TestArtifactRoundTripMatchesLocalRun(t *testing.T) {
	cases := []artifactCase{
		{"f16-cosine", "float16", "cosine", false, 1, false},
		{"f32-dot-bidir", "float32", "dot", true, 3, false},
		{"f64-l2", "float64", "squared_l2", false, 2, false},
		{"f64-cosine-bidir", "float64", "cosine", true, 1, false},
		{"csr-cosine", "csr", "cosine", true, 2, false},
		{"f32-cosine-labels-bidir", "float32", "cosine", true, 2, true},
		{"f64-dot-labels", "float64", "dot", false, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := artifactDataset(t, dir, c, 7, 11)
			local := filepath.Join(dir, "local.json")
			if code, _, stderr := run(t, "retrieval", "run", "--spec", spec, "--json", local, "--quiet",
				"--markdown", filepath.Join(dir, "local.md"), "--csv", filepath.Join(dir, "local.csv")); code != 0 {
				t.Fatal(stderr)
			}
			want := withoutCacheStatus(reportOf(t, mustRead(t, local)))
			got, _ := runArtifactFlow(t, filepath.Join(dir, "store"), spec, c.shards)
			// The CSV is identical; the Markdown from the ranking on (the
			// summary section is the shorter one of §10.8).
			if a, b := mustRead(t, filepath.Join(dir, "artifact.csv")), mustRead(t, filepath.Join(dir, "local.csv")); a != b {
				t.Errorf("CSV differs:\n%s\nlocal:\n%s", a, b)
			}
			am, lm := mustRead(t, filepath.Join(dir, "artifact.md")), mustRead(t, filepath.Join(dir, "local.md"))
			if i, j := strings.Index(am, "## Ranking"), strings.Index(lm, "## Ranking"); i < 0 || am[i:] != lm[j:] {
				t.Errorf("Markdown differs:\n%s\nlocal:\n%s", am, lm)
			}
			if !strings.Contains(am, "- n_gallery: 11\n- identity: ") {
				t.Errorf("Markdown summary:\n%s", am)
			}
			rep := reportOf(t, got)
			if !reflect.DeepEqual(rep["extractor_results"], want["extractor_results"]) {
				a, _ := json.MarshalIndent(rep["extractor_results"], "", " ")
				b, _ := json.MarshalIndent(want["extractor_results"], "", " ")
				t.Fatalf("extractor results differ:\nartifact %s\nlocal %s", a, b)
			}
			if !reflect.DeepEqual(rep["ranking"], want["ranking"]) || rep["schema_version"] != want["schema_version"] {
				t.Errorf("ranking %v, want %v", rep["ranking"], want["ranking"])
			}
			ws, gs := want["dataset_summary"].(map[string]any), rep["dataset_summary"].(map[string]any)
			for _, k := range []string{"modality", "n_queries", "n_gallery", "query_modality", "gallery_modality", "identity"} {
				if !reflect.DeepEqual(ws[k], gs[k]) {
					t.Errorf("dataset_summary.%s = %v, local %v", k, gs[k], ws[k])
				}
			}
			if len(gs) != 6 {
				t.Errorf("dataset_summary has %d fields, want the 6 of §10.8: %v", len(gs), gs)
			}
			wm, gm := want["metadata"].(map[string]any), rep["metadata"].(map[string]any)
			if gm["artifact_backed"] != true || gm["protocol_fingerprint"] != wm["protocol_fingerprint"] ||
				!reflect.DeepEqual(gm["retrieval_config"], wm["retrieval_config"]) {
				t.Errorf("metadata %v, local %v", gm, wm)
			}
		})
	}
}

// storeSnapshot reads every file below dir.
func storeSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, dir)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Running the whole flow twice writes the same keys and bytes and prints
// the same documents.
func TestArtifactCommandsIdempotent(t *testing.T) {
	dir := t.TempDir()
	spec := artifactDataset(t, dir, artifactCase{name: "idem", dtype: "float32", similarity: "cosine"}, 5, 8)
	st := filepath.Join(dir, "store")
	first, key1 := runArtifactFlow(t, st, spec, 2)
	snap := storeSnapshot(t, st)
	second, key2 := runArtifactFlow(t, st, spec, 2)
	if first != second || key1 != key2 {
		t.Error("second run printed a different reconstruction or score key")
	}
	again := storeSnapshot(t, st)
	if !reflect.DeepEqual(snap, again) {
		var names []string
		for k := range again {
			if snap[k] != again[k] {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		t.Errorf("second run changed or added %v", names)
	}
}

// The whole flow against S3: an in-process fake, and the real
// S3-compatible server CI starts (VERTEBRAE_TEST_S3_URI; skipped without
// it unless VERTEBRAE_REQUIRE_S3=1, which makes a missing server fail).
func TestArtifactFlowS3(t *testing.T) {
	for _, target := range []string{"fake", "real"} {
		t.Run(target, func(t *testing.T) {
			var uri string
			if target == "fake" {
				uri = storetest.FakeS3(t)
			} else {
				uri = storetest.S3URIForTest(t)
			}
			dir := t.TempDir()
			spec := artifactDataset(t, dir, artifactCase{name: "s3", dtype: "float32", similarity: "cosine", bidirectional: true}, 5, 9)
			local := filepath.Join(dir, "local.json")
			if code, _, stderr := run(t, "retrieval", "run", "--spec", spec, "--json", local, "--quiet"); code != 0 {
				t.Fatal(stderr)
			}
			got, key := runArtifactFlow(t, uri, spec, 2)
			want := withoutCacheStatus(reportOf(t, mustRead(t, local)))
			if rep := reportOf(t, got); !reflect.DeepEqual(rep["extractor_results"], want["extractor_results"]) {
				t.Fatal("S3 artifact path differs from the local run")
			}
			// A flipped byte in the stored score document is caught.
			st, err := location.Open(context.Background(), uri)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for name, err := range st.List(context.Background(), key+"/metadata-") {
				if err != nil {
					t.Fatal(err)
				}
				putDamaged(t, st, name)
			}
			code, _, stderr := run(t, "retrieval", "from-artifacts", "--score-key", key, "--store", uri)
			if code != 1 || !strings.Contains(stderr, "checksum mismatch") || !strings.Contains(stderr, key) {
				t.Errorf("exit %d: %s", code, stderr)
			}
		})
	}
}

func putDamaged(t *testing.T, st store.Store, name string) {
	t.Helper()
	rc, err := st.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	b[len(b)/2] ^= 0x01
	if err := st.Put(context.Background(), name, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
}

// Usage errors exit 2; damaged or inconsistent artifacts exit 1 naming the
// key and the SPEC fragment.
func TestArtifactCommandErrors(t *testing.T) {
	dir := t.TempDir()
	spec := artifactDataset(t, dir, artifactCase{name: "err", dtype: "float64", similarity: "cosine"}, 4, 6)
	st := "mem://" + t.Name()
	_, key := runArtifactFlow(t, st, spec, 1)
	for _, c := range []struct {
		args []string
		code int
		frag string
	}{
		{[]string{"retrieval", "score", "--query-key", "a//b", "--gallery-key", "g", "--relevance-key", "r"}, 2, "invalid artifact key"},
		{[]string{"retrieval", "score", "--query-key", "q"}, 2, "are required"},
		{[]string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--finalize"}, 2, "need --total-shards"},
		{[]string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--total-shards", "2", "--finalize", "--shard-index", "0"}, 2, "takes no --shard-index"},
		{[]string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--total-shards", "2", "--shard-index", "2"}, 2, "[0, 2)"},
		{[]string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--total-shards", "2"}, 2, "shard index required"},
		{[]string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--total-shards", "0", "--shard-index", "0"}, 2, "--total-shards must be >= 1"},
		{[]string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--total-shards", "2", "--shard-index", "0", "--shard-by", "random"}, 2, "--shard-by"},
		{[]string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--stage", "positives"}, 2, "needs --total-shards"},
		{[]string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--total-shards", "2", "--shard-index", "0", "--stage", "all"}, 2, "--stage must be positives or count"},
		{[]string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--max-memory-bytes", "0"}, 2, "--max-memory-bytes must be positive"},
		{[]string{"retrieval", "from-artifacts"}, 2, "--score-key"},
		{[]string{"retrieval", "from-artifacts", "--score-key", "retrieval/none"}, 1, "retrieval/none"},
		{[]string{"retrieval", "from-artifacts", "--score-key", key, "--store", "gopher://x"}, 1, "Unsupported artifact store URI"},
		{[]string{"retrieval", "plan", "--spec", spec, "--total-shards", "0"}, 2, "--total-shards"},
		{[]string{"retrieval", "embed-shard", "--plan", filepath.Join(dir, "plan.json"), "--extractor", "tables", "--side", "query"}, 2, "shard index required"},
		{[]string{"retrieval", "embed-shard", "--plan", filepath.Join(dir, "plan.json"), "--extractor", "tables", "--side", "query", "--shard-index", "5"}, 2, "[0, 1)"},
		{[]string{"retrieval", "embed-shard", "--plan", filepath.Join(dir, "plan.json"), "--extractor", "tables", "--side", "left", "--shard-index", "0"}, 2, "--side"},
	} {
		args := c.args
		if !slices.Contains(args, "--store") {
			args = append(args, "--store", st)
		}
		code, _, stderr := run(t, args...)
		if code != c.code || !strings.Contains(stderr, c.frag) {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr)
		}
	}
	code, out, stderr := run(t, "retrieval", "ls", "--prefix", "retrieval/scores", "--store", st)
	var ls struct{ Keys []string }
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil || !slices.Equal(ls.Keys, []string{key}) {
		t.Errorf("ls: exit %d %s %s", code, out, stderr)
	}
	// --output-key stores the reconstruction; it is not a score artifact.
	if code, _, stderr := run(t, "retrieval", "from-artifacts", "--score-key", key, "--output-key", "reports/x", "--store", st); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := run(t, "retrieval", "from-artifacts", "--score-key", "reports/x", "--store", st); code != 1 || !strings.Contains(stderr, "retrieval_evaluation") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "0")
	if code, _, stderr := run(t, "retrieval", "embed-shard", "--plan", filepath.Join(dir, "plan.json"), "--extractor", "tables", "--side", "query", "--store", st); code != 0 {
		t.Errorf("JOB_COMPLETION_INDEX: %s", stderr)
	}
}

// `compress` then `score` reproduces the local run's compressed variant
// exactly, and the §8.4 no-op (n_components ≥ width) keeps the skip
// warning and the variant name.
func TestArtifactCompressMatchesLocalVariant(t *testing.T) {
	dir := t.TempDir()
	spec := artifactDataset(t, dir, artifactCase{name: "comp", dtype: "float32", similarity: "cosine", bidirectional: true}, 6, 10)
	st := filepath.Join(dir, "store")
	_, scoreKey := runArtifactFlow(t, st, spec, 1)
	var doc map[string]any
	code, out, stderr := run(t, "retrieval", "from-artifacts", "--score-key", scoreKey, "--store", st)
	if code != 0 {
		t.Fatal(stderr)
	}
	_ = json.Unmarshal([]byte(out), &doc)
	plan, err := readPlan(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	q, g := plan.Extractors[0].Endpoints[0].OutputKey, plan.Extractors[0].Endpoints[1].OutputKey
	rel := plan.RelevanceKey
	for _, c := range []struct{ yaml, name string }{
		{"{method: pca, n_components: 3}", "tables[pca_3]"},
		{"{method: pca, n_components: 6, dtype: float64}", "tables[pca_6]"}, // width 6: the no-op
	} {
		cfgPath := writeFile(t, dir, "comp.yaml", c.yaml)
		localSpec := writeFile(t, dir, "local.yaml", strings.Replace(mustRead(t, spec), "extractors:", "compression:\n  - "+c.yaml+"\nextractors:", 1))
		code, out, stderr := run(t, "retrieval", "run", "--spec", localSpec, "--json", "-", "--quiet")
		if code != 0 {
			t.Fatal(stderr)
		}
		want := withoutCacheStatus(reportOf(t, out))["extractor_results"].([]any)[0].(map[string]any)
		code, out, stderr = run(t, "retrieval", "compress", "--query-key", q, "--gallery-key", g, "--config", cfgPath, "--store", st)
		if code != 0 {
			t.Fatal(stderr)
		}
		var comp struct {
			QueryOutputKey   string `json:"query_output_key"`
			GalleryOutputKey string `json:"gallery_output_key"`
		}
		_ = json.Unmarshal([]byte(out), &comp)
		code, out, stderr = run(t, "retrieval", "score", "--query-key", comp.QueryOutputKey, "--gallery-key", comp.GalleryOutputKey,
			"--relevance-key", rel, "--config", spec, "--store", st)
		if code != 0 {
			t.Fatal(stderr)
		}
		var sc struct{ Key string }
		_ = json.Unmarshal([]byte(out), &sc)
		code, out, stderr = run(t, "retrieval", "from-artifacts", "--score-key", sc.Key, "--store", st)
		if code != 0 {
			t.Fatal(stderr)
		}
		got := reportOf(t, out)["extractor_results"].([]any)[0].(map[string]any)
		if got["name"] != c.name || !reflect.DeepEqual(got, want) {
			a, _ := json.MarshalIndent(got, "", " ")
			b, _ := json.MarshalIndent(want, "", " ")
			t.Errorf("%s:\nartifact %s\nlocal %s", c.name, a, b)
		}
	}
}

// withoutCacheStatus drops cache_status (SPEC §9.5), which says how a local
// run obtained its endpoints and so is not part of what a reconstruction
// reproduces.
func withoutCacheStatus(rep map[string]any) map[string]any {
	for _, r := range rep["extractor_results"].([]any) {
		delete(r.(map[string]any), "cache_status")
	}
	return rep
}

// The artifact commands' outputs obey SPEC §6.1 like run's: targets are
// checked before any work (an input or a duplicate target is refused with
// exit 2 and nothing changes), from-artifacts commits its reports and
// --output-json as one set, and a device target stays a device.
func TestArtifactOutputTargets(t *testing.T) {
	dir := t.TempDir()
	spec := artifactDataset(t, dir, artifactCase{name: "tgt", dtype: "float32", similarity: "cosine"}, 4, 6)
	st := "mem://" + t.Name()
	_, key := runArtifactFlow(t, st, spec, 1)
	specBefore, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	before := treesnap.Take(t, out)
	for _, c := range []struct {
		args []string
		frag string
	}{
		{[]string{"retrieval", "write-relevance", "--spec", spec, "--output-json", spec}, "input"},
		{[]string{"retrieval", "plan", "--spec", spec, "--total-shards", "1", "--output-json", spec}, "input"},
		{[]string{"retrieval", "from-artifacts", "--score-key", key, "--json", filepath.Join(out, "r"), "--markdown", filepath.Join(out, "r")}, "--markdown"},
		{[]string{"retrieval", "from-artifacts", "--score-key", key, "--csv", filepath.Join(out, "c"), "--output-json", filepath.Join(out, "c")}, "--output-json"},
		{[]string{"retrieval", "from-artifacts", "--score-key", key, "--json", out}, "directory"},
	} {
		code, stdout, stderr := run(t, append(c.args, "--store", st)...)
		if code != 2 || !strings.Contains(stderr, c.frag) || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %s", c.args, code, stdout, stderr)
		}
	}
	if after, _ := os.ReadFile(spec); !bytes.Equal(after, specBefore) {
		t.Error("the run file was changed")
	}
	treesnap.Same(t, "a refused command", before, treesnap.Take(t, out))

	// One set: the reports and the JSON document all land.
	code, _, stderr := run(t, "retrieval", "from-artifacts", "--score-key", key, "--store", st,
		"--json", filepath.Join(out, "r.json"), "--markdown", filepath.Join(out, "r.md"), "--output-json", filepath.Join(out, "doc.json"))
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, n := range []string{"r.json", "r.md", "doc.json"} {
		if fi, err := os.Stat(filepath.Join(out, n)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", n, err)
		}
	}

	// A device node given as --output-json is written directly (the old
	// code renamed a regular file over it); a FIFO without mknod rights.
	dev := filepath.Join(dir, "null")
	if err := mknodChar(dev, 1, 3); err != nil {
		if err := mkfifo(dev); err != nil {
			t.Skipf("neither mknod nor mkfifo: %v", err)
		}
		go func() { // drain the FIFO so the writer can finish
			if f, err := os.Open(dev); err == nil {
				_, _ = io.Copy(io.Discard, f)
				f.Close()
			}
		}()
	}
	if code, _, stderr := run(t, "retrieval", "ls", "--store", st, "--output-json", dev); code != 0 {
		t.Fatal(stderr)
	}
	if fi, err := os.Lstat(dev); err != nil || fi.Mode().IsRegular() {
		t.Fatalf("%s is no longer a device or FIFO: %v %v", dev, fi.Mode(), err)
	}
}

// A worker whose extractor recipe no longer matches the plan (here: a
// precomputed table rewritten after planning) refuses to encode, naming the
// plan, the extractor and both recipe hashes.
func TestEmbedShardRefusesChangedRecipe(t *testing.T) {
	dir := t.TempDir()
	spec := artifactDataset(t, dir, artifactCase{name: "recipe", dtype: "float32", similarity: "cosine"}, 4, 6)
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 1))
	writeEndpoint(t, dir, "tq", rng, 4, 6, "float32")
	writeEndpoint(t, dir, "tg", rng, 6, 6, "float32")
	withTables := strings.Replace(string(data), "{name: tables, type: precomputed}", "{name: tables, type: precomputed, queries: tq.npy, gallery: tg.npy}", 1)
	if withTables == string(data) {
		t.Fatal("fixture changed: no precomputed extractor line")
	}
	writeFile(t, dir, "run.yaml", withTables)
	st := "mem://" + t.Name()
	planPath := filepath.Join(dir, "plan.json")
	if code, _, stderr := run(t, "retrieval", "plan", "--spec", spec, "--total-shards", "1", "--output-json", planPath, "--store", st); code != 0 {
		t.Fatal(stderr)
	}
	writeEndpoint(t, dir, "tq", rand.New(rand.NewPCG(12, 1)), 4, 6, "float32") // same shape, other values
	code, _, stderr := run(t, "retrieval", "embed-shard", "--plan", planPath, "--extractor", "tables", "--side", "query", "--shard-index", "0", "--store", st)
	if code != 1 || !strings.Contains(stderr, "changed since planning") || !strings.Contains(stderr, planPath) || !strings.Contains(stderr, "plan says") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
