package cli

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/columnar"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// cmpFixture: 40 labelled queries against 60 labelled gallery items in 6
// classes; embeddings are class centroids plus noise, with three noise
// levels (three backbones of different quality).
type cmpFixture struct {
	dir, qLabels, gLabels string
	pairs                 map[string][2]string // name → (queries, gallery)
}

func newCmpFixture(t *testing.T) cmpFixture {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	const classes, dim, nq, ng = 6, 8, 40, 60
	centroid := make([][]float64, classes)
	for c := range centroid {
		centroid[c] = make([]float64, dim)
		for j := range centroid[c] {
			centroid[c][j] = r.NormFloat64()
		}
	}
	label := func(i int) int { return (i * 7) % classes }
	var ql, gl strings.Builder
	for i := 0; i < nq; i++ {
		ql.WriteString(string(rune('a'+label(i))) + "\n")
	}
	for i := 0; i < ng; i++ {
		gl.WriteString(string(rune('a'+label(i+3))) + "\n")
	}
	f := cmpFixture{dir: dir, pairs: map[string][2]string{},
		qLabels: writeFile(t, dir, "ql.txt", ql.String()), gLabels: writeFile(t, dir, "gl.txt", gl.String())}
	emb := func(n, off int, noise float64) [][]float64 {
		rows := make([][]float64, n)
		for i := range rows {
			rows[i] = make([]float64, dim)
			for j := range rows[i] {
				rows[i][j] = centroid[label(i+off)][j] + noise*r.NormFloat64()
			}
		}
		return rows
	}
	for _, b := range []struct {
		name  string
		noise float64
	}{{"sharp", 0.3}, {"blurry", 1.2}, {"noisy", 2.5}} {
		f.pairs[b.name] = [2]string{writeNPY(t, dir, b.name+"_q.npy", emb(nq, 0, b.noise)), writeNPY(t, dir, b.name+"_g.npy", emb(ng, 3, b.noise))}
	}
	return f
}

func (f cmpFixture) runArgs(name string, extra ...string) []string {
	p := f.pairs[name]
	args := []string{"retrieval", "run", "--queries", p[0], "--gallery", p[1], "--query-labels", f.qLabels, "--gallery-labels", f.gLabels,
		"--dataset-id", "cmp", "--dataset-revision", "1", "--name", name, "--bootstrap", "400", "--permutations", "500", "--quiet"}
	return append(args, extra...)
}

func (f cmpFixture) pairArgs(names []string, extra ...string) []string {
	args := []string{"retrieval", "compare", "--query-labels", f.qLabels, "--gallery-labels", f.gLabels,
		"--dataset-id", "cmp", "--dataset-revision", "1", "--bootstrap", "400", "--permutations", "500", "--quiet"}
	for _, n := range names {
		args = append(args, "--pair", n+"="+f.pairs[n][0]+","+f.pairs[n][1])
	}
	return append(args, extra...)
}

// comparisonOf returns the canonical JSON text of a report's comparison.
func comparisonOf(t *testing.T, report string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(report), &m); err != nil {
		t.Fatalf("bad report: %v", err)
	}
	c, ok := m["comparison"]
	if !ok {
		t.Fatal("report has no comparison section")
	}
	return string(c)
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	return stdout
}

// A run with compression variants has a comparison whose JSON is the same
// for --threads 1 and 2 and between repeated runs.
func TestRunComparisonDeterministic(t *testing.T) {
	f := newCmpFixture(t)
	args := func(threads string) []string {
		return f.runArgs("sharp", "--compress", "prefix:2", "--compress", "prefix:4", "--compare-metrics", "mrr,recall@5", "--threads", threads, "--json", "-")
	}
	ref := comparisonOf(t, mustRun(t, args("1")...))
	for _, threads := range []string{"2", "1"} {
		if got := comparisonOf(t, mustRun(t, args(threads)...)); got != ref {
			t.Fatalf("--threads %s: comparison differs", threads)
		}
	}
	var c struct {
		Settings struct{ Metrics, Results []string }
		Blocks   []struct{ Metric string }
	}
	if err := json.Unmarshal([]byte(ref), &c); err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Settings.Metrics, ",") != "ndcg@10,mrr,recall@5" || len(c.Settings.Results) != 3 || len(c.Blocks) != 3 {
		t.Errorf("comparison %s", ref)
	}
}

// compare of reports: the comparison does not depend on the order of the
// reports and equals that of compare --pair over the same embeddings.
func TestCompareReportsOrderAndPairs(t *testing.T) {
	f := newCmpFixture(t)
	paths := map[string]string{}
	for name := range f.pairs {
		paths[name] = filepath.Join(f.dir, name+".json")
		mustRun(t, f.runArgs(name, "--json", paths[name])...)
	}
	base := []string{"retrieval", "compare", "--bootstrap", "400", "--permutations", "500", "--json", "-", "--quiet"}
	ref := comparisonOf(t, mustRun(t, append(base, paths["sharp"], paths["blurry"], paths["noisy"])...))
	if got := comparisonOf(t, mustRun(t, append(base, paths["noisy"], paths["sharp"], paths["blurry"])...)); got != ref {
		t.Fatal("comparison depends on the order of the reports")
	}
	pairs := comparisonOf(t, mustRun(t, f.pairArgs([]string{"blurry", "noisy", "sharp"}, "--json", "-")...))
	if pairs != ref {
		t.Fatalf("compare --pair and compare of reports differ:\n%s\n%s", pairs, ref)
	}
	// The sharp backbone beats both others significantly.
	var c struct {
		Blocks []struct {
			Results []struct {
				Name  string
				Beats []string
			}
		}
	}
	if err := json.Unmarshal([]byte(ref), &c); err != nil {
		t.Fatal(err)
	}
	if top := c.Blocks[0].Results[0]; top.Name != "sharp" || strings.Join(top.Beats, ",") != "blurry,noisy" {
		t.Errorf("top result %+v", top)
	}
}

// compare refuses reports of other datasets or protocols, duplicate names
// and reports without per-query values.
func TestCompareRefusals(t *testing.T) {
	f := newCmpFixture(t)
	write := func(file string, name string, extra ...string) string {
		p := filepath.Join(f.dir, file)
		mustRun(t, f.runArgs(name, append(extra, "--json", p)...)...)
		return p
	}
	a := write("a.json", "sharp")
	b := write("b.json", "blurry")
	otherRev := write("rev.json", "noisy", "--dataset-revision", "2")
	otherK := write("k.json", "noisy", "--gain", "linear")
	noPQ := write("nopq.json", "noisy", "--no-per-query")
	for _, c := range []struct {
		name  string
		files []string
		code  int
		frag  string
	}{
		{"dataset identity", []string{a, otherRev}, 1, "dataset identities"},
		{"protocol", []string{a, otherK}, 1, "protocol fingerprint"},
		{"duplicate", []string{a, b, a}, 1, "duplicate extractor result name"},
		{"no per-query", []string{a, noPQ}, 1, "per-query values"},
		{"metric above 1", []string{a, tamper(t, b, "big.json", func(fw map[string]any) {
			fw["metrics"].(map[string]any)["mrr"] = 1.5
		})}, 1, `big.json: extractor_results[0] ("blurry") forward: metric mrr = 1.5 is impossible`},
		{"negative count", []string{a, tamper(t, b, "neg.json", func(fw map[string]any) {
			fw["metadata"].(map[string]any)["n_queries"] = -3
		})}, 1, "negative count (n_queries -3"},
		{"per-query mean", []string{a, tamper(t, b, "mean.json", func(fw map[string]any) {
			col := fw["per_query"].(map[string]any)["metrics"].(map[string]any)["mrr"].([]any)
			col[0] = 1 - col[0].(float64)/2
		})}, 1, "metric mrr = "},
	} {
		code, _, stderr := run(t, append([]string{"retrieval", "compare", "--quiet"}, c.files...)...)
		if code != c.code || !strings.Contains(stderr, c.frag) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d with %q", c.name, code, stderr, c.code, c.frag)
		}
	}
	// Two pairs with one name fail before anything is evaluated.
	dup := f.pairArgs([]string{"sharp"}, "--pair", "sharp="+f.pairs["noisy"][0]+","+f.pairs["noisy"][1])
	if code, _, stderr := run(t, dup...); code != 1 || !strings.Contains(stderr, "duplicate extractor result name") {
		t.Errorf("duplicate --pair names: exit %d, %s", code, stderr)
	}
	// The report without per_query really has none; with them it has.
	data, _ := os.ReadFile(noPQ)
	if strings.Contains(string(data), "per_query") {
		t.Error("--no-per-query report still holds per_query")
	}
	if data, _ := os.ReadFile(a); !strings.Contains(string(data), `"per_query"`) {
		t.Error("report lacks per_query")
	}
}

func TestCompareUsageErrors(t *testing.T) {
	f := newCmpFixture(t)
	a := filepath.Join(f.dir, "a.json")
	mustRun(t, f.runArgs("sharp", "--json", a)...)
	for _, c := range []struct {
		args []string
		frag string
	}{
		{[]string{"retrieval", "compare"}, "REPORT.json"},
		{[]string{"retrieval", "compare", a, "--test", "wilcoxon"}, "--test"},
		{[]string{"retrieval", "compare", a, "--ci-method", "normal"}, "--ci-method"},
		{[]string{"retrieval", "compare", a, "--alpha", "1.5"}, "--alpha"},
		{[]string{"retrieval", "compare", a, "--run", filepath.Join(f.dir, "x.run")}, "--run"},
		{[]string{"retrieval", "compare", a, "--compare", "some"}, "--compare"},
		{[]string{"retrieval", "compare", a, "--k", "1,2"}, "--k cannot be used when comparing reports"},
		{f.pairArgs([]string{"sharp"}), "at least two pairs"},
		{f.pairArgs([]string{"sharp", "blurry"}, "--baseline", "nope"), "--baseline"},
		{f.runArgs("sharp", "--compare-metrics", "ndcg@7"), "--compare-metrics"},
		{f.runArgs("sharp", "--compress", "prefix:2", "--baseline", "sharp[prefix_3]"), "is not a result of this run (results: sharp, sharp[prefix_truncate_2])"},
	} {
		code, _, stderr := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.frag) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q", c.args, code, stderr, c.frag)
		}
	}
}

// compare of reports writes every report format from the merged results:
// the CSV from the per_query blocks read back, the Markdown with intervals.
func TestCompareReportsOutputs(t *testing.T) {
	f := newCmpFixture(t)
	a, b := filepath.Join(f.dir, "a.json"), filepath.Join(f.dir, "b.json")
	mustRun(t, f.runArgs("sharp", "--json", a, "--csv", filepath.Join(f.dir, "a.csv"))...)
	mustRun(t, f.runArgs("noisy", "--json", b)...)
	csvPath, mdPath := filepath.Join(f.dir, "m.csv"), filepath.Join(f.dir, "m.md")
	mustRun(t, "retrieval", "compare", a, b, "--bootstrap", "300", "--permutations", "300", "--csv", csvPath, "--markdown", mdPath, "--quiet")
	csv, single := mustRead(t, csvPath), mustRead(t, filepath.Join(f.dir, "a.csv"))
	if lines := strings.Count(csv, "\n"); lines != 1+2*40 {
		t.Errorf("merged CSV has %d lines, want header + 80", lines)
	}
	// The sharp rows equal those the original run wrote.
	if !strings.Contains(csv, strings.TrimPrefix(single, strings.SplitN(single, "\n", 2)[0]+"\n")) {
		t.Error("merged CSV rows differ from the original run's")
	}
	md := mustRead(t, mdPath)
	for _, want := range []string{"| key | rank | extractor |", "| a | 1 | sharp |", "<sup>b</sup>", "## Comparison"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

// compare --pair with ID columns: every pair must list the dataset's IDs
// in the same order, otherwise per-query values would pair other queries.
func TestComparePairIDColumns(t *testing.T) {
	dir := t.TempDir()
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	g, _ := matrix.FromRows([][]float64{{1, 0}, {0.7, 0.7}, {0, 1}})
	pq := func(name string, m *matrix.Dense, ids []string) string {
		var buf bytes.Buffer
		if err := columnar.WriteParquet(&buf, "emb", m, "id", ids, 2, true); err != nil {
			t.Fatal(err)
		}
		return writeFile(t, dir, name, buf.String())
	}
	qa, ga := pq("qa.parquet", q, []string{"q1", "q2"}), pq("ga.parquet", g, []string{"g1", "g2", "g3"})
	qb, gb := pq("qb.parquet", q, []string{"q2", "q1"}), pq("gb.parquet", g, []string{"g1", "g2", "g3"})
	qrels := writeFile(t, dir, "rel.qrels", "q1 0 g1 1\nq2 0 g3 1\n")
	args := []string{"retrieval", "compare", "--qrels", qrels, "--query-id-column", "id", "--gallery-id-column", "id", "--quiet", "--bootstrap", "50", "--permutations", "50",
		"--pair", "a=" + qa + "," + ga}
	if code, _, stderr := run(t, append(args, "--pair", "b="+qa+","+gb)...); code != 0 {
		t.Fatalf("same IDs: exit %d: %s", code, stderr)
	}
	code, _, stderr := run(t, append(args, "--pair", "b="+qb+","+gb)...)
	if code != 1 || !strings.Contains(stderr, "qb.parquet") || !strings.Contains(stderr, "differ from those of the first pair") {
		t.Errorf("reordered IDs: exit %d: %s", code, stderr)
	}
}

// compare of one run report reproduces the comparison the run wrote: the
// per_query values read back are the values the run compared.
func TestCompareReproducesRunComparison(t *testing.T) {
	f := newCmpFixture(t)
	p := filepath.Join(f.dir, "v.json")
	mustRun(t, f.runArgs("sharp", "--compress", "prefix:2", "--compress", "quantize:int8", "--compare-metrics", "map", "--json", p)...)
	data := mustRead(t, p)
	again := mustRun(t, "retrieval", "compare", p, "--bootstrap", "400", "--permutations", "500", "--compare-metrics", "map", "--json", "-", "--quiet")
	if comparisonOf(t, again) != comparisonOf(t, data) {
		t.Fatal("compare of the run's report gives another comparison than the run")
	}
}

// tamper rewrites the first result's forward score result of report src
// into dir/name.
func tamper(t *testing.T, src, name string, edit func(forward map[string]any)) string {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(mustRead(t, src)), &rep); err != nil {
		t.Fatal(err)
	}
	edit(rep["extractor_results"].([]any)[0].(map[string]any)["forward"].(map[string]any))
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, filepath.Dir(src), name, string(out))
}
