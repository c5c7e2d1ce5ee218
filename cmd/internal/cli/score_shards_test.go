package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// shardDataset writes a run file whose gallery has exactly duplicated rows
// (ties across and within shards), queries equal to some gallery rows,
// graded relevance covering every gallery item (so the reverse direction is
// defined), and exclusions of positives and negatives.
func shardDataset(t *testing.T, dir, similarity string, bidirectional bool, nq, ng int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(12, uint64(len(similarity))))
	const d = 4
	gal := make([][]float64, ng)
	for j := range gal {
		switch {
		case j > 2 && j%4 == 3:
			gal[j] = gal[j/2] // duplicate of an earlier row
		default:
			gal[j] = make([]float64, d)
			for k := range gal[j] {
				gal[j][k] = float64(rng.IntN(5)-2) / 2
			}
			gal[j][j%d] = 1 // nonzero norm
		}
	}
	qs := make([][]float64, nq)
	for i := range qs {
		if i%3 == 1 {
			qs[i] = gal[(5*i)%ng] // a query equal to a gallery row
			continue
		}
		qs[i] = make([]float64, d)
		for k := range qs[i] {
			qs[i][k] = float64(rng.IntN(5)-2) / 2
		}
		qs[i][i%d] = 1
	}
	gm, _ := matrix.FromRows(gal)
	qm, _ := matrix.FromRows(qs)
	writeMatrix(t, dir, "q.npy", qm)
	writeMatrix(t, dir, "g.npy", gm)
	var qids, gids, qrels, excl strings.Builder
	for i := range nq {
		fmt.Fprintf(&qids, "q%d\n", i)
	}
	for j := range ng {
		fmt.Fprintf(&gids, "g%d\n", j)
	}
	seen := map[[2]int]bool{}
	rel := func(q, g, grade int) {
		if !seen[[2]int{q, g}] {
			seen[[2]int{q, g}] = true
			fmt.Fprintf(&qrels, "q%d 0 g%d %d\n", q, g, grade)
		}
	}
	for j := range ng {
		rel(j%nq, j, 1+j%3)
	}
	for i := range nq {
		rel(i, (i+3)%ng, 2)
		rel(i, (i+7)%ng, 1)
	}
	// Rows 1, 3 and 7 are equal: tied positives of q5 (odd queries have no
	// exclusions), whose ranks only the index tie rule decides.
	rel(5, 1, 2)
	rel(5, 3, 1)
	rel(5, 7, 3)
	for i := 0; i < nq; i += 2 {
		fmt.Fprintf(&excl, "q%d g%d\n", i, (i+7)%ng) // an excluded positive
		fmt.Fprintf(&excl, "q%d g%d\n", i, (i+1)%ng) // an excluded negative (or positive)
	}
	writeFile(t, dir, "qids.txt", qids.String())
	writeFile(t, dir, "gids.txt", gids.String())
	writeFile(t, dir, "rel.qrels", qrels.String())
	writeFile(t, dir, "ex.txt", excl.String())
	return writeFile(t, dir, "run.yaml", fmt.Sprintf(`version: 1
dataset:
  id: shards
  revision: "1"
  queries: {path: q.npy, ids: qids.txt}
  gallery: {path: g.npy, ids: gids.txt}
  qrels: {path: rel.qrels, format: trec}
  exclusions: ex.txt
retrieval: {similarity: %s, ks: [1, 3, 5], primary_metric: ndcg@5, bidirectional: %v, worst_queries: 4, query_batch_size: 3, gallery_batch_size: 4}
extractors:
  - {name: tables, type: precomputed}
`, similarity, bidirectional))
}

// artifactKeys drives plan → embed-shard → merge → write-relevance through
// the CLI and returns the query, gallery and relevance keys.
func artifactKeys(t *testing.T, storeURI, spec string, shards int) (q, g, rel string) {
	t.Helper()
	planPath := filepath.Join(filepath.Dir(spec), "plan.json")
	mustCLI(t, storeURI, "retrieval", "plan", "--spec", spec, "--total-shards", fmt.Sprint(shards), "--output-json", planPath)
	plan, err := readPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, ep := range plan.Extractors[0].Endpoints {
		for _, sh := range ep.Shards {
			mustCLI(t, storeURI, "retrieval", "embed-shard", "--plan", planPath, "--extractor", "tables", "--side", ep.Side, "--shard-index", fmt.Sprint(sh.ShardIndex))
		}
		mustCLI(t, storeURI, "retrieval", "merge", "--plan", planPath, "--extractor", "tables", "--side", ep.Side)
		keys[ep.Side] = ep.OutputKey
	}
	var r struct{ Key string }
	if err := json.Unmarshal([]byte(mustCLI(t, storeURI, "retrieval", "write-relevance", "--spec", spec)), &r); err != nil {
		t.Fatal(err)
	}
	return keys["query"], keys["gallery"], r.Key
}

func mustCLI(t *testing.T, storeURI string, args ...string) string {
	t.Helper()
	code, stdout, stderr := run(t, append(args, "--store", storeURI)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	return stdout
}

// scoreSharded runs the N gallery-shard scores and the finalize step under
// outputKey and returns finalize's output document.
//
// Layouts "local" and "local-modulo" are contiguous and modulo shards that
// read only their rows: every shard's --stage positives first, then the
// count stages.
func scoreSharded(t *testing.T, storeURI, spec string, keys [3]string, outputKey string, total int, layout string, extra ...string) map[string]any {
	t.Helper()
	base := []string{"retrieval", "score", "--query-key", keys[0], "--gallery-key", keys[1], "--relevance-key", keys[2],
		"--config", spec, "--output-key", outputKey, "--total-shards", fmt.Sprint(total)}
	base = append(base, extra...)
	if l, ok := strings.CutPrefix(layout, "local"); ok {
		layout = "contiguous"
		if l == "-modulo" {
			layout = "modulo"
		}
		for i := range total {
			var doc map[string]any
			out := mustCLI(t, storeURI, append(base, "--shard-index", fmt.Sprint(i), "--stage", "positives", "--shard-by", layout)...)
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			if doc["artifact_type"] != "retrieval_evaluation_positives" || doc["key"] != fmt.Sprintf("%s/positives/%05d-of-%05d", outputKey, i, total) {
				t.Fatalf("positives stage %d printed %v", i, doc)
			}
		}
	}
	for i := range total {
		var doc map[string]any
		out := mustCLI(t, storeURI, append(base, "--shard-index", fmt.Sprint(i), "--shard-by", layout)...)
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%s/partials/%05d-of-%05d", outputKey, i, total)
		if doc["artifact_type"] != "retrieval_evaluation_partial" || doc["key"] != want || doc["score_key"] != outputKey ||
			doc["shard_index"] != float64(i) || doc["total_shards"] != float64(total) || doc["evaluation_fingerprint"] == "" {
			t.Fatalf("shard %d printed %v", i, doc)
		}
	}
	var fin map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, storeURI, append(base, "--finalize")...)), &fin); err != nil {
		t.Fatal(err)
	}
	return fin
}

// SPEC §11.3 acceptance: for N ∈ {1, 2, 3, 7} gallery shards, contiguous
// and modulo, bidirectional on and off, cosine, dot and squared_l2, with
// ties (duplicated rows) and exclusions, the N shard scores + finalize +
// from-artifacts give the JSON of `retrieval run` on the same files
// (timings and cache status aside), and finalize prints what the unsharded
// score prints.
func TestShardedScoreMatchesLocalRun(t *testing.T) {
	for _, sim := range []string{"cosine", "dot", "squared_l2"} {
		for _, bidir := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-bidir-%v", sim, bidir), func(t *testing.T) {
				dir := t.TempDir()
				spec := shardDataset(t, dir, sim, bidir, 8, 15)
				local := filepath.Join(dir, "local.json")
				if code, _, stderr := run(t, "retrieval", "run", "--spec", spec, "--json", local, "--quiet"); code != 0 {
					t.Fatal(stderr)
				}
				want := withoutCacheStatus(reportOf(t, mustRead(t, local)))
				st := "mem://" + t.Name()
				q, g, r := artifactKeys(t, st, spec, 2)
				keys := [3]string{q, g, r}
				var plain map[string]any
				if err := json.Unmarshal([]byte(mustCLI(t, st, "retrieval", "score", "--query-key", q, "--gallery-key", g,
					"--relevance-key", r, "--config", spec, "--output-key", "scores/plain")), &plain); err != nil {
					t.Fatal(err)
				}
				for _, total := range []int{1, 2, 3, 7} {
					for _, layout := range []string{"contiguous", "modulo", "local", "local-modulo"} {
						key := fmt.Sprintf("scores/n%d-%s", total, layout)
						fin := scoreSharded(t, st, spec, keys, key, total, layout)
						plain["key"] = key
						if !reflect.DeepEqual(fin, plain) {
							t.Errorf("N=%d %s: finalize printed %v, unsharded score %v", total, layout, fin, plain)
						}
						rep := reportOf(t, mustCLI(t, st, "retrieval", "from-artifacts", "--score-key", key))
						if !reflect.DeepEqual(rep["extractor_results"], want["extractor_results"]) {
							a, _ := json.MarshalIndent(rep["extractor_results"], "", " ")
							b, _ := json.MarshalIndent(want["extractor_results"], "", " ")
							t.Fatalf("N=%d %s: extractor results differ:\nsharded %s\nlocal %s", total, layout, a, b)
						}
						if !reflect.DeepEqual(rep["ranking"], want["ranking"]) {
							t.Errorf("N=%d %s: ranking %v, want %v", total, layout, rep["ranking"], want["ranking"])
						}
						wm, gm := want["metadata"].(map[string]any), rep["metadata"].(map[string]any)
						if gm["protocol_fingerprint"] != wm["protocol_fingerprint"] || !reflect.DeepEqual(gm["retrieval_config"], wm["retrieval_config"]) {
							t.Errorf("N=%d %s: metadata %v, local %v", total, layout, gm, wm)
						}
					}
				}
			})
		}
	}
}

// finalize fails (exit 1) naming the partial key when a partial is
// missing, was scored for another evaluation (different fingerprint), for
// another shard count or with another layout; nothing is written at the
// score key then.
func TestFinalizeRejectsMissingAndForeignPartials(t *testing.T) {
	dir := t.TempDir()
	spec := shardDataset(t, dir, "cosine", true, 6, 11)
	st := "mem://" + t.Name()
	q, g, r := artifactKeys(t, st, spec, 1)
	other := writeFile(t, dir, "other.yaml", strings.Replace(mustRead(t, spec), "ks: [1, 3, 5]", "ks: [1, 2, 5]", 1))
	score := func(config, key string, total int, extra ...string) []string {
		return append([]string{"retrieval", "score", "--query-key", q, "--gallery-key", g, "--relevance-key", r,
			"--config", config, "--output-key", key, "--total-shards", fmt.Sprint(total), "--store", st}, extra...)
	}
	part := func(key string, i, n int) string { return fmt.Sprintf("%s/partials/%05d-of-%05d", key, i, n) }
	for _, c := range []struct {
		name  string
		setup [][]string // shard runs before finalize
		final []string
		frag  string
	}{
		{"missing", [][]string{score(spec, "s/missing", 3, "--shard-index", "0"), score(spec, "s/missing", 3, "--shard-index", "2")},
			score(spec, "s/missing", 3, "--finalize"), part("s/missing", 1, 3) + ": missing partial"},
		{"foreign fingerprint", [][]string{score(spec, "s/foreign", 2, "--shard-index", "0"), score(other, "s/foreign", 2, "--shard-index", "1")},
			score(spec, "s/foreign", 2, "--finalize"), part("s/foreign", 1, 2) + ": foreign partial: evaluation fingerprint"},
		{"other total", [][]string{score(spec, "s/total", 3, "--shard-index", "0"), score(spec, "s/total", 3, "--shard-index", "1"), score(spec, "s/total", 3, "--shard-index", "2")},
			score(spec, "s/total", 2, "--finalize"), part("s/total", 0, 2) + ": missing partial"},
		{"mixed layouts", [][]string{score(spec, "s/layout", 2, "--shard-index", "0"), score(spec, "s/layout", 2, "--shard-index", "1", "--shard-by", "modulo")},
			score(spec, "s/layout", 2, "--finalize"), part("s/layout", 1, 2) + ": foreign partial: shard_by \"modulo\""},
		{"other layout", [][]string{score(spec, "s/want", 1, "--shard-index", "0")},
			score(spec, "s/want", 1, "--finalize", "--shard-by", "modulo"), part("s/want", 0, 1) + ": foreign partial: shard_by \"contiguous\""},
	} {
		for _, args := range c.setup {
			if code, _, stderr := run(t, args...); code != 0 {
				t.Fatalf("%s: %v: %s", c.name, args, stderr)
			}
		}
		code, _, stderr := run(t, c.final...)
		if code != 1 || !strings.Contains(stderr, c.frag) {
			t.Errorf("%s: exit %d, %s", c.name, code, stderr)
		}
		key := c.final[slicesIndex(c.final, "--output-key")+1]
		if code, _, _ := run(t, "retrieval", "from-artifacts", "--score-key", key, "--store", st); code != 1 {
			t.Errorf("%s: a failed finalize left a score artifact at %s", c.name, key)
		}
	}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// Re-running a shard (as a job array does after a crash) rewrites identical
// content, and the shard index comes from JOB_COMPLETION_INDEX or
// SLURM_ARRAY_TASK_ID when --shard-index is absent.
func TestScoreShardIdempotentAndIndexFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	spec := shardDataset(t, dir, "dot", true, 6, 11)
	st := filepath.Join(dir, "store")
	q, g, r := artifactKeys(t, st, spec, 1)
	base := []string{"retrieval", "score", "--query-key", q, "--gallery-key", g, "--relevance-key", r, "--config", spec,
		"--total-shards", "3", "--shard-by", "modulo", "--store", st}
	t.Setenv("JOB_COMPLETION_INDEX", "0")
	for _, env := range []struct{ k8s, slurm, want string }{{"0", "", "00000-of-00003"}, {"", "1", "00001-of-00003"}, {"", "", "00002-of-00003"}} {
		t.Setenv("JOB_COMPLETION_INDEX", env.k8s)
		t.Setenv("SLURM_ARRAY_TASK_ID", env.slurm)
		args := base
		if env.k8s == "" && env.slurm == "" {
			args = append(args, "--shard-index", "2")
		}
		code, out, stderr := run(t, args...)
		if code != 0 || !strings.Contains(out, env.want) {
			t.Fatalf("%+v: exit %d %s %s", env, code, out, stderr)
		}
	}
	snap := storeSnapshot(t, st)
	if code, _, stderr := run(t, append(base, "--shard-index", "1")...); code != 0 {
		t.Fatal(stderr)
	}
	if again := storeSnapshot(t, st); !reflect.DeepEqual(snap, again) {
		t.Error("re-running shard 1 changed the store")
	}
	fin := append(slicesWithout(base, "--shard-by", "modulo"), "--finalize")
	code, out1, stderr := run(t, fin...)
	if code != 0 {
		t.Fatal(stderr)
	}
	snap = storeSnapshot(t, st)
	if code, out2, _ := run(t, fin...); code != 0 || out1 != out2 || !reflect.DeepEqual(snap, storeSnapshot(t, st)) {
		t.Error("re-running finalize changed its output or the store")
	}
}

// slicesWithout drops the flag and its value.
func slicesWithout(s []string, flag, value string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] == flag && i+1 < len(s) && s[i+1] == value {
			i++
			continue
		}
		out = append(out, s[i])
	}
	return out
}

// Storage types and precisions: float16, float32 and CSR endpoints, the
// float32 working precision, label-derived relevance, sharded in both
// layouts, equal `retrieval run`.
func TestShardedScoreStorageTypes(t *testing.T) {
	for _, c := range []struct {
		ac        artifactCase
		precision string
	}{
		{artifactCase{name: "f16-cosine", dtype: "float16", similarity: "cosine"}, "float64"},
		{artifactCase{name: "f32-dot-bidir", dtype: "float32", similarity: "dot", bidirectional: true}, "float32"},
		{artifactCase{name: "csr-cosine-bidir", dtype: "csr", similarity: "cosine", bidirectional: true}, "float64"},
		{artifactCase{name: "csr-l2-f32", dtype: "csr", similarity: "squared_l2"}, "float32"},
		{artifactCase{name: "f32-dot-labels-bidir", dtype: "float32", similarity: "dot", bidirectional: true, labels: true}, "float64"},
	} {
		t.Run(c.ac.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := artifactDataset(t, dir, c.ac, 7, 11)
			spec = writeFile(t, dir, "run.yaml", strings.Replace(mustRead(t, spec), "worst_queries: 3}", "worst_queries: 3, precision: "+c.precision+"}", 1))
			if !strings.Contains(mustRead(t, spec), "precision: "+c.precision) {
				t.Fatal("the run file has no precision")
			}
			local := filepath.Join(dir, "local.json")
			if code, _, stderr := run(t, "retrieval", "run", "--spec", spec, "--json", local, "--quiet"); code != 0 {
				t.Fatal(stderr)
			}
			want := withoutCacheStatus(reportOf(t, mustRead(t, local)))
			st := "mem://" + t.Name()
			q, g, r := artifactKeys(t, st, spec, 2)
			for _, layout := range []string{"contiguous", "modulo"} {
				key := "scores/" + layout
				scoreSharded(t, st, spec, [3]string{q, g, r}, key, 3, layout)
				rep := reportOf(t, mustCLI(t, st, "retrieval", "from-artifacts", "--score-key", key))
				if !reflect.DeepEqual(rep["extractor_results"], want["extractor_results"]) {
					t.Fatalf("%s: extractor results differ from the local run", layout)
				}
			}
		})
	}
}

// VERTEBRAE_SCREEN=off (exhaustive exact scoring in every shard) gives the
// screened local run's numbers.
func TestShardedScoreScreenOff(t *testing.T) {
	dir := t.TempDir()
	spec := shardDataset(t, dir, "dot", true, 8, 15)
	local := filepath.Join(dir, "local.json")
	if code, _, stderr := run(t, "retrieval", "run", "--spec", spec, "--json", local, "--quiet"); code != 0 {
		t.Fatal(stderr)
	}
	want := withoutCacheStatus(reportOf(t, mustRead(t, local)))
	t.Setenv("VERTEBRAE_SCREEN", "off")
	st := "mem://" + t.Name()
	q, g, r := artifactKeys(t, st, spec, 1)
	scoreSharded(t, st, spec, [3]string{q, g, r}, "scores/off", 3, "modulo")
	if rep := reportOf(t, mustCLI(t, st, "retrieval", "from-artifacts", "--score-key", "scores/off")); !reflect.DeepEqual(rep["extractor_results"], want["extractor_results"]) {
		t.Fatal("exhaustive sharded scoring differs from the screened local run")
	}
}

// A worker's memory budget covers the endpoints it loads: four shards that
// read only their rows fit 40 % of what the unsharded score needs, which
// fails (exit 1) with the memory message.
func TestShardedScoreUnderBudget(t *testing.T) {
	dir := t.TempDir()
	spec := shardDataset(t, dir, "dot", false, 6, 120)
	st := "mem://" + t.Name()
	q, g, r := artifactKeys(t, st, spec, 1)
	base := []string{"retrieval", "score", "--query-key", q, "--gallery-key", g, "--relevance-key", r, "--config", spec}
	var plain map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, st, append(slices.Clip(base), "--output-key", "scores/plain")...)), &plain); err != nil {
		t.Fatal(err)
	}
	// 6 queries + 120 gallery rows of 4 float64 values: 4032 bytes.
	budget := fmt.Sprint(4032 * 4 / 10)
	code, _, stderr := run(t, append(slices.Clip(base), "--store", st, "--output-key", "scores/whole", "--max-memory-bytes", budget)...)
	if code != 1 || !strings.Contains(stderr, "exceeding the memory budget of "+budget+" bytes") {
		t.Fatalf("unsharded under 40%%: exit %d: %s", code, stderr)
	}
	fin := scoreSharded(t, st, spec, [3]string{q, g, r}, "scores/local", 4, "local", "--max-memory-bytes", budget)
	plain["key"] = "scores/local"
	if !reflect.DeepEqual(fin, plain) {
		t.Fatalf("finalize printed %v, unsharded score %v", fin, plain)
	}
}

// A modulo shard with the positives stage reads the extraction shard with
// its index when the gallery was embedded in as many shards: with the
// merged gallery file damaged, N = 3 (embedded in 3) still scores, bit for
// bit, while N = 2 (which must stream the merged file) fails naming it.
// (A bidirectional modulo shard reads its reverse block, a contiguous run
// of rows, from the merged file.)
func TestModuloShardsReadExtractionShards(t *testing.T) {
	dir := t.TempDir()
	spec := shardDataset(t, dir, "cosine", false, 8, 15)
	st := filepath.Join(dir, "store")
	q, g, r := artifactKeys(t, st, spec, 3)
	var plain map[string]any
	if err := json.Unmarshal([]byte(mustCLI(t, st, "retrieval", "score", "--query-key", q, "--gallery-key", g,
		"--relevance-key", r, "--config", spec, "--output-key", "scores/plain")), &plain); err != nil {
		t.Fatal(err)
	}
	arrays, err := filepath.Glob(filepath.Join(st, filepath.FromSlash(g), "array-*.npy"))
	if err != nil || len(arrays) != 1 {
		t.Fatalf("gallery array files %v (%v)", arrays, err)
	}
	b, err := os.ReadFile(arrays[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-2] ^= 0x10
	if err := os.WriteFile(arrays[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	fin := scoreSharded(t, st, spec, [3]string{q, g, r}, "scores/mod3", 3, "local-modulo")
	plain["key"] = "scores/mod3"
	if !reflect.DeepEqual(fin, plain) {
		t.Fatalf("finalize printed %v, unsharded score %v", fin, plain)
	}
	code, _, stderr := run(t, "retrieval", "score", "--query-key", q, "--gallery-key", g, "--relevance-key", r, "--config", spec,
		"--output-key", "scores/mod2", "--total-shards", "2", "--shard-index", "0", "--shard-by", "modulo", "--stage", "positives", "--store", st)
	if code != 1 || !strings.Contains(stderr, "checksum mismatch") || !strings.Contains(stderr, g) {
		t.Fatalf("N=2 over the damaged merged file: exit %d: %s", code, stderr)
	}
}
