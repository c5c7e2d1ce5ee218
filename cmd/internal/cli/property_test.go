package cli

import (
	"bufio"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/files"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
)

// randomFiles writes random embeddings and a qrels file. With ties, values
// come from {-1, 0, 1}, so many scores tie exactly and zero rows appear.
func randomFiles(t *testing.T, dir string, r *rand.Rand, nq, ng, d int, ties, graded bool) (q, g, qrels string, rel map[string]map[string]float64) {
	t.Helper()
	mk := func(n int) [][]float64 {
		rows := make([][]float64, n)
		for i := range rows {
			rows[i] = make([]float64, d)
			for k := range rows[i] {
				if ties {
					rows[i][k] = float64(r.IntN(3) - 1)
				} else {
					rows[i][k] = r.NormFloat64()
				}
			}
		}
		return rows
	}
	q = writeNPY(t, dir, "q.npy", mk(nq))
	g = writeNPY(t, dir, "g.npy", mk(ng))
	rel = map[string]map[string]float64{}
	var b strings.Builder
	for i := 0; i < nq; i++ {
		qid := strconv.Itoa(i)
		rel[qid] = map[string]float64{}
		for _, j := range r.Perm(ng)[:1+r.IntN(5)] {
			grade := 1.0
			if graded {
				grade = float64(1 + r.IntN(3))
			}
			gid := strconv.Itoa(j)
			rel[qid][gid] = grade
			b.WriteString(qid + " 0 " + gid + " " + strconv.FormatFloat(grade, 'g', -1, 64) + "\n")
		}
	}
	qrels = writeFile(t, dir, "rel.qrels", b.String())
	return
}

// stripPerformance removes the values allowed to differ between runs that
// differ only in performance knobs: timings and the recorded batch sizes.
func stripPerformance(rep map[string]any) {
	strip := func(cfg any) {
		m := cfg.(map[string]any)
		delete(m, "query_batch_size")
		delete(m, "gallery_batch_size")
	}
	strip(rep["metadata"].(map[string]any)["retrieval_config"])
	for _, r := range rep["extractor_results"].([]any) {
		rm := r.(map[string]any)
		for _, dir := range []string{"forward", "reverse"} {
			if d, ok := rm[dir].(map[string]any); ok {
				strip(d["metadata"].(map[string]any)["config"])
			}
		}
	}
}

// Kernels, threads and block sizes are performance knobs: every metric,
// diagnostic and warning must be identical to the bit.
func TestBlockAndThreadInvariance(t *testing.T) {
	defer kernel.Use("auto")
	r := rand.New(rand.NewPCG(11, 12))
	for _, variant := range []struct {
		sim, precision string
		ties           bool
	}{{"cosine", "float64", false}, {"dot", "float64", true}, {"squared_l2", "float32", true}, {"cosine", "float32", false}} {
		dir := t.TempDir()
		q, g, qrels, _ := randomFiles(t, dir, r, 37, 150, 5, variant.ties, true)
		if variant.sim == "cosine" && variant.ties {
			t.Fatal("cosine fixtures must not contain zero rows")
		}
		var ref map[string]any
		var refRun []byte
		for _, k := range kernel.Available() {
			if err := kernel.Use(k); err != nil {
				t.Fatal(err)
			}
			for _, threads := range []string{"1", "2", "3"} {
				for _, qb := range []string{"1", "7", "128"} {
					for _, gb := range []string{"1", "13", "10000"} {
						runPath := filepath.Join(dir, "r"+threads+qb+gb+".run")
						code, stdout, stderr := run(t, "retrieval", "run", "--queries", q, "--gallery", g, "--qrels", qrels,
							"--similarity", variant.sim, "--precision", variant.precision, "--bidirectional=false", "--json", "-", "--k", "1,5,10",
							"--threads", threads, "--query-batch-size", qb, "--gallery-batch-size", gb, "--run", runPath, "--run-depth", "20")
						if code != 0 {
							t.Fatal(stderr)
						}
						rep := reportOf(t, stdout)
						stripPerformance(rep)
						runData, _ := os.ReadFile(runPath)
						if ref == nil {
							ref, refRun = rep, runData
							continue
						}
						if !reflect.DeepEqual(rep, ref) {
							t.Fatalf("%+v kernel=%s threads=%s qb=%s gb=%s: report differs", variant, k, threads, qb, gb)
						}
						if string(runData) != string(refRun) {
							t.Fatalf("%+v kernel=%s threads=%s qb=%s gb=%s: run differs", variant, k, threads, qb, gb)
						}
					}
				}
			}
		}
	}
}

// Bidirectional results are also block-invariant, and the reverse direction
// equals a forward run with the files swapped.
func TestBidirectionalSymmetry(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	q, g, _, rel := randomFiles(t, dir, r, 20, 20, 4, false, true)
	// Give every gallery item a reverse relation: add g_i → q_i.
	var b, swapped strings.Builder
	for qi := 0; qi < 20; qi++ {
		qid := strconv.Itoa(qi)
		rel[qid][qid] = 1 + float64(qi%2)
		ids := make([]string, 0, len(rel[qid]))
		for gid := range rel[qid] {
			ids = append(ids, gid)
		}
		sort.Strings(ids)
		for _, gid := range ids {
			grade := strconv.FormatFloat(rel[qid][gid], 'g', -1, 64)
			b.WriteString(qid + " 0 " + gid + " " + grade + "\n")
			swapped.WriteString(gid + " 0 " + qid + " " + grade + "\n")
		}
	}
	qrels := writeFile(t, dir, "bi.qrels", b.String())
	sw := writeFile(t, dir, "sw.qrels", swapped.String())
	code, stdout, stderr := run(t, "retrieval", "run", "--queries", q, "--gallery", g, "--qrels", qrels, "--bidirectional", "--json", "-")
	if code != 0 {
		t.Fatal(stderr)
	}
	rep := reportOf(t, stdout)
	res := rep["extractor_results"].([]any)[0].(map[string]any)
	code, stdout, stderr = run(t, "retrieval", "run", "--queries", g, "--gallery", q, "--qrels", sw, "--json", "-")
	if code != 0 {
		t.Fatal(stderr)
	}
	swappedRes := reportOf(t, stdout)["extractor_results"].([]any)[0].(map[string]any)
	rev, fwd2 := res["reverse"].(map[string]any), swappedRes["forward"].(map[string]any)
	if !reflect.DeepEqual(rev["metrics"], fwd2["metrics"]) || !reflect.DeepEqual(rev["diagnostics"], fwd2["diagnostics"]) {
		t.Error("reverse direction differs from the swapped forward run")
	}
	want := (res["forward"].(map[string]any)["score"].(float64) + rev["score"].(float64)) / 2
	if res["primary_score"].(float64) != want {
		t.Errorf("primary_score %v, want %v", res["primary_score"], want)
	}
}

// An independent check: on random embeddings (no ties) with binary
// relevance, the metrics equal a sort-everything implementation written
// here, and the full-depth TREC run reproduces them.
func TestMetricsAgainstSortEverything(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	dir := t.TempDir()
	const nq, ng, d = 25, 200, 8
	q, g, qrels, rel := randomFiles(t, dir, r, nq, ng, d, false, false)
	runPath := filepath.Join(dir, "full.run")
	code, stdout, stderr := run(t, "retrieval", "run", "--queries", q, "--gallery", g, "--qrels", qrels, "--similarity", "dot",
		"--k", "1,3,10,500", "--primary", "ndcg@10", "--json", "-", "--run", runPath, "--run-depth", "0")
	if code != 0 {
		t.Fatal(stderr)
	}
	got := forwardMetrics(t, reportOf(t, stdout))

	// Score every pair with a plain loop and sort everything.
	qm, gm := readRows(t, q), readRows(t, g)
	ranked := map[string][]string{}
	for i, qr := range qm {
		type cand struct {
			id    string
			score float64
		}
		cs := make([]cand, len(gm))
		for j, gr := range gm {
			s := 0.0
			for k := range qr {
				s += qr[k] * gr[k]
			}
			cs[j] = cand{strconv.Itoa(j), s}
		}
		sort.Slice(cs, func(a, b int) bool { return cs[a].score > cs[b].score })
		for _, c := range cs {
			ranked[strconv.Itoa(i)] = append(ranked[strconv.Itoa(i)], c.id)
		}
	}
	want := independentMetrics(ranked, rel, []int{1, 3, 10, 500})
	compareMetrics(t, "sort-everything", got, want)

	// The exported full ranking gives the same numbers.
	fromRun := map[string][]string{}
	f, err := os.Open(runPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 6 || fields[1] != "Q0" || fields[5] != "precomputed" {
			t.Fatalf("bad run line %q", sc.Text())
		}
		rank, _ := strconv.Atoi(fields[3])
		if rank != len(fromRun[fields[0]])+1 {
			t.Fatalf("ranks not consecutive: %q", sc.Text())
		}
		fromRun[fields[0]] = append(fromRun[fields[0]], fields[2])
		lines++
	}
	if lines != nq*ng {
		t.Fatalf("full-depth run has %d lines, want %d", lines, nq*ng)
	}
	compareMetrics(t, "TREC run", got, independentMetrics(fromRun, rel, []int{1, 3, 10, 500}))
}

func readRows(t *testing.T, path string) [][]float64 {
	t.Helper()
	var closers files.Closers
	m, err := files.ReadMatrix(context.Background(), path, "", &closers)
	if err != nil {
		t.Fatal(err)
	}
	defer closers.Close()
	rows := make([][]float64, m.Rows())
	for i := range rows {
		rows[i] = make([]float64, m.Cols())
		m.RowFloat64(i, rows[i])
	}
	return rows
}

// independentMetrics computes binary-relevance metrics from full rankings.
func independentMetrics(ranked map[string][]string, rel map[string]map[string]float64, ks []int) map[string]float64 {
	sum := map[string]float64{}
	for qid, list := range ranked {
		relevant := rel[qid]
		p := float64(len(relevant))
		var hits, ap, rr float64
		found := map[int]float64{}
		dcg := map[int]float64{}
		for i, gid := range list {
			rank := i + 1
			if _, ok := relevant[gid]; !ok {
				continue
			}
			hits++
			if rr == 0 {
				rr = 1 / float64(rank)
			}
			ap += hits / float64(rank)
			for _, k := range ks {
				if rank <= k {
					found[k]++
					dcg[k] += 1 / math.Log2(float64(rank)+1)
				}
			}
		}
		sum["mrr"] += rr
		sum["map"] += ap / p
		for _, k := range ks {
			ks := strconv.Itoa(k)
			idcg := 0.0
			for j := 1; j <= k && j <= int(p); j++ {
				idcg += 1 / math.Log2(float64(j)+1)
			}
			sum["precision@"+ks] += found[k] / float64(k)
			sum["recall@"+ks] += found[k] / p
			hit := 0.0
			if found[k] > 0 {
				hit = 1
			}
			sum["hit_rate@"+ks] += hit
			sum["ndcg@"+ks] += dcg[k] / idcg
		}
	}
	for k := range sum {
		sum[k] /= float64(len(ranked))
	}
	return sum
}

func compareMetrics(t *testing.T, what string, got map[string]any, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d metrics, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k].(float64)
		if !ok || math.Abs(g-w) > 1e-12 {
			t.Errorf("%s: %s = %v, want %v", what, k, got[k], w)
		}
	}
}
