package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
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
	for j := range ng {
		fmt.Fprintf(&qrels, "q%d 0 g%d %d\n", j%nq, j, 1+j%3)
	}
	for i := range nq {
		fmt.Fprintf(&qrels, "q%d 0 g%d 2\n", i, (i+3)%ng)
		fmt.Fprintf(&qrels, "q%d 0 g%d 1\n", i, (i+7)%ng)
	}
	// Rows 1, 3 and 7 are equal: three tied positives of q5 (odd queries
	// have no exclusions), whose ranks only the index tie rule decides.
	fmt.Fprintf(&qrels, "q5 0 g1 2\nq5 0 g3 1\nq5 0 g7 3\n")
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
func scoreSharded(t *testing.T, storeURI, spec string, keys [3]string, outputKey string, total int, layout string) map[string]any {
	t.Helper()
	base := []string{"retrieval", "score", "--query-key", keys[0], "--gallery-key", keys[1], "--relevance-key", keys[2],
		"--config", spec, "--output-key", outputKey, "--total-shards", fmt.Sprint(total)}
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
					for _, layout := range []string{"contiguous", "modulo"} {
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
