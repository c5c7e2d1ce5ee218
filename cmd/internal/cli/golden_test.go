package cli

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

var update = flag.Bool("update", false, "rewrite golden files")

// timings are the only report values that vary between runs.
var timings = regexp.MustCompile(`("(extraction|scoring)_seconds": )[0-9.e+-]+`)

// The JSON report is a public contract: its full text for SPEC §4.10
// example 1 (declared identity) is pinned in a golden file.
func TestJSONReportGolden(t *testing.T) {
	f := newFixture(t)
	code, stdout, stderr := run(t, "retrieval", "run", "--queries", f.q, "--gallery", f.g,
		"--qrels", writeFile(t, f.dir, "bi.qrels", "0 0 0 3\n0 0 1 1\n1 0 2 2\n"),
		"--k", "1,2", "--primary", "ndcg@2", "--dataset-id", "example-1", "--dataset-revision", "1", "--json", "-", "--name", "pair")
	if code != 0 {
		t.Fatal(stderr)
	}
	got := timings.ReplaceAllString(stdout, "${1}0")
	golden := filepath.Join("testdata", "example1.golden.json")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("JSON report differs from %s (run with -update after checking the change):\n%s", golden, got)
	}
	if !json.Valid([]byte(got)) {
		t.Error("invalid JSON")
	}
}

// Dense and CSR .npz embedding files give the same report as .npy.
func TestNPZEmbeddings(t *testing.T) {
	f := newFixture(t)
	qrels := f.qrels(t)
	args := func(q, g string) []string {
		return []string{"retrieval", "run", "--queries", q, "--gallery", g, "--qrels", qrels, "--json", "-", "--dataset-id", "d", "--dataset-revision", "1"}
	}
	_, ref, _ := run(t, args(f.q, f.g)...)
	qd, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	var dense bytes.Buffer
	if err := npz.WriteDense(&dense, "emb", qd); err != nil {
		t.Fatal(err)
	}
	gs, err := matrix.NewCSR64(3, 2, []int64{0, 1, 3, 4}, []int32{0, 0, 1, 1}, []float64{1, 0.7, 0.7, 1})
	if err != nil {
		t.Fatal(err)
	}
	var sparse bytes.Buffer
	if err := npz.WriteCSR(&sparse, gs); err != nil {
		t.Fatal(err)
	}
	qp := writeFile(t, f.dir, "q.npz", dense.String())
	gp := writeFile(t, f.dir, "g.npz", sparse.String())
	code, got, stderr := run(t, args(qp, gp)...)
	if code != 0 {
		t.Fatal(stderr)
	}
	a, b := reportOf(t, ref), reportOf(t, got)
	ma, mb := forwardMetrics(t, a), forwardMetrics(t, b)
	if !equalJSON(ma, mb) {
		t.Errorf("metrics differ: %v vs %v", ma, mb)
	}
	// A multi-array archive needs a member name.
	code, _, stderr = run(t, args(writeFile(t, f.dir, "multi.npz", multiArchive(t, qd)), f.g)...)
	if code != 1 || !bytes.Contains([]byte(stderr), []byte("multi.npz")) {
		t.Errorf("multi-array archive without --queries-tensor: exit %d %s", code, stderr)
	}
	code, _, stderr = run(t, append(args(writeFile(t, f.dir, "multi2.npz", multiArchive(t, qd)), f.g), "--queries-tensor", "b")...)
	if code != 0 {
		t.Errorf("--queries-tensor b: exit %d %s", code, stderr)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// multiArchive builds an .npz with members "a" (a 1×2 array) and "b" (m).
func multiArchive(t *testing.T, m *matrix.Dense) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	one, _ := matrix.FromRows([][]float64{{1, 1}})
	for name, arr := range map[string]*matrix.Dense{"a.npy": one, "b.npy": m} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := npy.WriteDense(w, arr); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// A BEIR folder works as it is: queries.jsonl and corpus.jsonl give the IDs
// (rows in file order), qrels/test.tsv has the `query-id corpus-id score`
// header, and judgements may come in any order.
func TestBEIRLayout(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
	writeFile(t, dir, "queries.jsonl", `{"_id": "q-b", "text": "second?"}`+"\n"+`{"_id": "q-a", "text": "first?"}`+"\n")
	writeFile(t, dir, "corpus.jsonl", `{"_id": "d3", "title": "", "text": "x"}`+"\n"+`{"_id": "d1", "text": "y"}`+"\n"+`{"_id": "d2", "text": "z"}`+"\n")
	writeFile(t, dir, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq-a\td1\t1\nq-b\td2\t2\nq-b\td3\t1\n")
	q := writeNPY(t, dir, "q.npy", [][]float64{{0, 1}, {1, 0}})                 // q-b, q-a
	g := writeNPY(t, dir, "g.npy", [][]float64{{0.6, 0.8}, {1, 0.1}, {0.1, 1}}) // d3, d1, d2
	code, stdout, stderr := run(t, "retrieval", "run", "--queries", q, "--gallery", g,
		"--query-ids", filepath.Join(dir, "queries.jsonl"), "--gallery-ids", filepath.Join(dir, "corpus.jsonl"),
		"--qrels", filepath.Join(dir, "qrels", "test.tsv"), "--gain", "linear", "--k", "1,2", "--primary", "ndcg@2", "--json", "-")
	if code != 0 {
		t.Fatal(stderr)
	}
	m := forwardMetrics(t, reportOf(t, stdout))
	// q-a ranks d1 first; q-b ranks d2 (grade 2) first and d3 (grade 1) second.
	if m["mrr"] != 1.0 || m["ndcg@2"] != 1.0 || m["recall@1"] != 0.75 {
		t.Errorf("metrics %v", m)
	}
}
