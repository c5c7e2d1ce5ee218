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
