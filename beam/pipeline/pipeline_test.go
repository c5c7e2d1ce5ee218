package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/beam/internal/localrun"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store/location"
)

// TestMain initialises Beam after the test flags are parsed (beam.Init
// must follow flag.Parse) and points TMPDIR at a directory removed
// afterwards: every LOOPBACK run leaves an empty temp file behind.
func TestMain(m *testing.M) {
	flag.Parse()
	tmp, err := os.MkdirTemp("", "vertebrae-beam-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	beam.Init()
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// dataset writes a run file over nq queries and ng gallery items on a small
// value grid (ties happen), with graded qrels (or, with labels, label-derived
// relevance of three classes) and exclusions.
func dataset(t *testing.T, dir, similarity string, bidirectional, labels bool, nq, ng int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, uint64(nq*100+ng)))
	write := func(name string, rows int) {
		vals := make([]float32, rows*5)
		for i := range vals {
			vals[i] = float32(rng.IntN(9)-4) / 4
		}
		for r := 0; r < rows; r++ {
			vals[r*5] = 1 // no zero rows under cosine
		}
		m, err := matrix.NewDense32(rows, 5, vals)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := npy.WriteDense(&buf, m); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, name, buf.String())
	}
	write("q.npy", nq)
	write("g.npy", ng)
	var qids, gids, qrels, excl, ql, gl strings.Builder
	for i := 0; i < nq; i++ {
		fmt.Fprintf(&qids, "q%d\n", i)
		fmt.Fprintf(&ql, "c%d\n", i%3)
	}
	for j := 0; j < ng; j++ {
		fmt.Fprintf(&gids, "g%d\n", j)
		fmt.Fprintf(&gl, "c%d\n", j%3)
		fmt.Fprintf(&qrels, "q%d 0 g%d %d\n", j%nq, j, 1+j%3)
	}
	for i := 0; i < nq; i++ {
		fmt.Fprintf(&qrels, "q%d 0 g%d 2\n", i, (i+1)%ng)
	}
	for i := 0; i < nq; i += 3 {
		fmt.Fprintf(&excl, "q%d g%d\nq%d g%d\n", i, (i+1)%ng, i, (i+2)%ng)
	}
	writeFile(t, dir, "qids.txt", qids.String())
	writeFile(t, dir, "gids.txt", gids.String())
	writeFile(t, dir, "rel.qrels", qrels.String())
	writeFile(t, dir, "ex.txt", excl.String())
	relevance := "qrels: {path: rel.qrels, format: trec}"
	if labels {
		writeFile(t, dir, "ql.txt", ql.String())
		writeFile(t, dir, "gl.txt", gl.String())
		relevance = "labels: {queries: ql.txt, gallery: gl.txt}"
	}
	return writeFile(t, dir, "run.yaml", fmt.Sprintf(`version: 1
dataset:
  id: beam
  revision: "1"
  queries: {path: q.npy, ids: qids.txt}
  gallery: {path: g.npy, ids: gids.txt}
  %s
  exclusions: ex.txt
retrieval: {similarity: %s, ks: [1, 3, 10], primary_metric: ndcg@3, bidirectional: %v, gain: linear, worst_queries: 3}
extractors:
  - {name: tables, type: precomputed}
`, relevance, similarity, bidirectional))
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// decode parses a JSON report keeping every number as its literal text, so
// comparisons are bit for bit.
func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("bad JSON report: %v\n%s", err, data)
	}
	for _, r := range m["extractor_results"].([]any) {
		delete(r.(map[string]any), "runtime")      // timings
		delete(r.(map[string]any), "cache_status") // artifact metadata
	}
	return m
}

// localRun is `vertebrae retrieval run --spec`: the trusted
// single-process evaluator.
func localRun(t *testing.T, spec string) []byte {
	t.Helper()
	return localrun.JSON(t, spec, filepath.Join(filepath.Dir(spec), "local.json"))
}

// The pipeline on Prism (LOOPBACK, in-process) gives the JSON of the local
// run: every extractor result (runtime and cache status aside), the
// ranking and the protocol, bit for bit, for 1 and 3 shards, one direction
// and bidirectional, graded qrels and label-derived relevance.
func TestPipelineOnPrismMatchesLocalRun(t *testing.T) {
	cases := []struct {
		similarity    string
		bidirectional bool
		shards, block int
		shardBy       string
		rerun         bool // run again on the same store: endpoints are cache hits
		labels        bool // label-derived relevance instead of graded qrels
	}{
		{"cosine", false, 1, 0, "contiguous", false, false},
		{"dot", true, 3, 2, "contiguous", true, false},
		{"squared_l2", false, 3, 3, "modulo", false, false},
		{"cosine", true, 1, 4, "modulo", false, false},
		{"cosine", true, 3, 0, "modulo", true, false},
		{"dot", true, 3, 2, "modulo", false, true},
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s-bidir=%v-N=%d-block=%d-%s-labels=%v", c.similarity, c.bidirectional, c.shards, c.block, c.shardBy, c.labels)
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			spec := dataset(t, dir, c.similarity, c.bidirectional, c.labels, 7, 11)
			want := decode(t, localRun(t, spec))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			opts := Options{Spec: spec, Store: filepath.Join(dir, "store"), TotalShards: c.shards, QueryBlock: c.block, ShardBy: c.shardBy}
			got, job, err := Run(ctx, "prism", opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.rerun {
				again, job2, err := Run(ctx, "prism", opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, ep := range job2.Plan.Extractors[0].Endpoints {
					if ep.CacheStatus != "hit" || len(ep.Shards) != 0 {
						t.Errorf("rerun: %s endpoint %s with %d shards", ep.Side, ep.CacheStatus, len(ep.Shards))
					}
				}
				if !reflect.DeepEqual(decode(t, again), decode(t, got)) {
					t.Errorf("rerun on cached endpoints differs:\n%s\nfirst:\n%s", again, got)
				}
			}
			if len(job.ScoreKeys) != 1 {
				t.Fatalf("score keys %v", job.ScoreKeys)
			}
			checkStages(t, ctx, opts.Store, job.ScoreKeys[0], c.shards, c.block == 0)
			rep := decode(t, got)
			for _, k := range []string{"extractor_results", "ranking", "schema_version"} {
				if !reflect.DeepEqual(rep[k], want[k]) {
					a, _ := json.MarshalIndent(rep[k], "", " ")
					b, _ := json.MarshalIndent(want[k], "", " ")
					t.Fatalf("%s differs:\npipeline %s\nlocal %s", k, a, b)
				}
			}
			wm, gm := want["metadata"].(map[string]any), rep["metadata"].(map[string]any)
			if gm["artifact_backed"] != true || gm["protocol_fingerprint"] != wm["protocol_fingerprint"] ||
				!reflect.DeepEqual(gm["retrieval_config"], wm["retrieval_config"]) {
				t.Errorf("metadata %v, local %v", gm, wm)
			}
		})
	}
}

// checkStages asserts what the scoring stages left under the score key:
// with staged scoring, the positives stage of every one of the n gallery
// shards (so the count shards took the shard-local path: ScorePartial reads
// only its rows when all n exist) and the n partials of the count stage;
// with query blocks, neither.
func checkStages(t *testing.T, ctx context.Context, storeURI, scoreKey string, n int, staged bool) {
	t.Helper()
	raw, err := location.Open(ctx, storeURI)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	st := artifact.New(raw)
	var want []string
	if staged {
		for i := range n {
			want = append(want, artifact.PositivesKey(scoreKey, i, n), artifact.PartialKey(scoreKey, i, n))
		}
	}
	var got []string
	for _, prefix := range []string{scoreKey + "/positives", scoreKey + "/partials"} {
		for key, err := range st.Keys(ctx, prefix) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, key)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stage artifacts under %s: %q, want %q", scoreKey, got, want)
	}
	for _, k := range want {
		if ok, err := st.Exists(ctx, k); err != nil || !ok {
			t.Errorf("%s: exists %v, %v", k, ok, err)
		}
	}
}
