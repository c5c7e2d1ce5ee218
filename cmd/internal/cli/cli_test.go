package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// run executes the CLI in-process and returns exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	if strings.Contains(errb.String(), "goroutine ") || strings.Contains(errb.String(), "panic") {
		t.Fatalf("stack trace on stderr: %s", errb.String())
	}
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeNPY(t *testing.T, dir, name string, rows [][]float64) string {
	t.Helper()
	m, err := matrix.FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	return writeMatrix(t, dir, name, m)
}

func writeMatrix(t *testing.T, dir, name string, m *matrix.Dense) string {
	t.Helper()
	var buf bytes.Buffer
	if err := npy.WriteDense(&buf, m); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, buf.String())
}

// SPEC §4.10 example 1 as files.
type fixture struct {
	dir, q, g string
}

func newFixture(t *testing.T) fixture {
	dir := t.TempDir()
	return fixture{
		dir: dir,
		q:   writeNPY(t, dir, "q.npy", [][]float64{{1, 0}, {0, 1}}),
		g:   writeNPY(t, dir, "g.npy", [][]float64{{1, 0}, {0.7, 0.7}, {0, 1}}),
	}
}

func (f fixture) qrels(t *testing.T) string {
	return writeFile(t, f.dir, "rel.qrels", "0 0 0 3\n0 0 1 1\n1 0 2 2\n")
}

// reportOf decodes a JSON report and drops timings (the only values that
// may differ between runs).
func reportOf(t *testing.T, data string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("bad JSON report: %v\n%s", err, data)
	}
	for _, r := range m["extractor_results"].([]any) {
		delete(r.(map[string]any), "runtime")
	}
	return m
}

func forwardMetrics(t *testing.T, rep map[string]any) map[string]any {
	t.Helper()
	r := rep["extractor_results"].([]any)[0].(map[string]any)
	return r["forward"].(map[string]any)["metrics"].(map[string]any)
}

func TestRunExample1AllOutputs(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(f.dir, "out")
	code, stdout, stderr := run(t, "retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", f.qrels(t),
		"--k", "1,2", "--primary", "ndcg@2",
		"--json", filepath.Join(out, "r.json"), "--markdown", filepath.Join(out, "r.md"), "--csv", filepath.Join(out, "r.csv"),
		"--run", filepath.Join(out, "r.run"), "--run-depth", "0", "--write-qrels", filepath.Join(out, "eligible.qrels"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stdout != "" { // --markdown FILE: the report goes there only
		t.Errorf("stdout should be empty with --markdown FILE, got %q", stdout)
	}
	data, _ := os.ReadFile(filepath.Join(out, "r.json"))
	rep := reportOf(t, string(data))
	want := map[string]any{"mrr": 1.0, "map": 1.0, "precision@1": 1.0, "recall@1": 0.75, "hit_rate@1": 1.0, "ndcg@1": 1.0,
		"precision@2": 0.75, "recall@2": 1.0, "hit_rate@2": 1.0, "ndcg@2": 1.0}
	if got := forwardMetrics(t, rep); !reflect.DeepEqual(got, want) {
		t.Errorf("metrics %v", got)
	}
	md, _ := os.ReadFile(filepath.Join(out, "r.md"))
	if !strings.HasPrefix(string(md), "# vertebrae retrieval report\n") {
		t.Errorf("--markdown file: %.80q", md)
	}
	csv, _ := os.ReadFile(filepath.Join(out, "r.csv"))
	wantCSV := "extractor,direction,query_id,mrr,map,precision@1,recall@1,hit_rate@1,ndcg@1,precision@2,recall@2,hit_rate@2,ndcg@2\n" +
		"precomputed,forward,0,1,1,1,0.5,1,1,1,1,1,1\n" +
		"precomputed,forward,1,1,1,1,1,1,1,0.5,1,1,1\n"
	if string(csv) != wantCSV {
		t.Errorf("csv:\n%s", csv)
	}
	runFile, _ := os.ReadFile(filepath.Join(out, "r.run"))
	wantRun := "0 Q0 0 1 1 precomputed\n0 Q0 1 2 0.7071067811865475 precomputed\n0 Q0 2 3 0 precomputed\n" +
		"1 Q0 2 1 1 precomputed\n1 Q0 1 2 0.7071067811865475 precomputed\n1 Q0 0 3 0 precomputed\n"
	if string(runFile) != wantRun {
		t.Errorf("run:\n%s", runFile)
	}
	q, _ := os.ReadFile(filepath.Join(out, "eligible.qrels"))
	if string(q) != "0 0 0 3\n0 0 1 1\n1 0 2 2\n" {
		t.Errorf("qrels export:\n%s", q)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 5 {
		t.Errorf("unexpected files in output dir: %v", entries)
	}
}

func TestJSONToStdout(t *testing.T) {
	f := newFixture(t)
	code, stdout, stderr := run(t, "retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", f.qrels(t), "--json", "-")
	if code != 0 {
		t.Fatal(stderr)
	}
	rep := reportOf(t, stdout)
	if rep["schema_version"].(float64) != 1 || !strings.HasSuffix(stdout, "}\n") || strings.Contains(stdout, "# vertebrae") {
		t.Errorf("stdout is not just the JSON report:\n%s", stdout)
	}
	md := rep["metadata"].(map[string]any)
	if len(md["protocol_fingerprint"].(string)) != 64 {
		t.Error("missing protocol fingerprint")
	}
	code, stdout, _ = run(t, "retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", f.qrels(t), "--quiet")
	if code != 0 || stdout != "" {
		t.Errorf("--quiet printed %q", stdout)
	}
}

// Every relevance form gives the same report.
func TestQrelsForms(t *testing.T) {
	f := newFixture(t)
	base := []string{"retrieval", "run", "--queries", f.q, "--gallery", f.g, "--json", "-", "--k", "1,2", "--primary", "ndcg@2"}
	var dense bytes.Buffer
	if err := npy.WriteFloat64(&dense, []int{2, 3}, []float64{3, 1, 0, 0, 0, 2}); err != nil {
		t.Fatal(err)
	}
	// Row 0 stores (0,1) as 0.5+0.5 and an explicit zero at (0,2); indices are unsorted.
	var sparseOK bytes.Buffer
	if err := npz.WriteSparseRelevance(&sparseOK, &npz.SparseRelevance{Rows: 2, Cols: 3, Indptr: []int64{0, 4, 5},
		Indices: []int64{1, 2, 0, 1, 2}, Data: []float64{0.5, 0, 3, 0.5, 2}}); err != nil {
		t.Fatal(err)
	}
	forms := map[string][]string{
		"trec":   {"--qrels", f.qrels(t)},
		"tsv3":   {"--qrels", writeFile(t, f.dir, "r.tsv", "query_id\tgallery_id\tgrade\n0\t0\t3\n0\t1\t1\n1\t2\t2\n")},
		"tsv4":   {"--qrels", writeFile(t, f.dir, "r4.tsv", "0\tQ0\t0\t3\n0\tQ0\t1\t1\n1\tQ0\t2\t2\n")},
		"csv":    {"--qrels", writeFile(t, f.dir, "r.csv", "query_id,gallery_id,grade\n0,0,3\n0,1,1\n1,2,2\n")},
		"jsonl":  {"--qrels", writeFile(t, f.dir, "r.jsonl", `{"query_id":"0","gallery_id":"0","grade":3}`+"\n"+`{"query_id":0,"gallery_id":1,"grade":1}`+"\n"+`{"query_id":"1","gallery_id":"2","grade":2}`+"\n")},
		"npy":    {"--qrels", writeFile(t, f.dir, "rel.npy", dense.String())},
		"npz":    {"--qrels", writeFile(t, f.dir, "rel.npz", sparseOK.String())},
		"format": {"--qrels", writeFile(t, f.dir, "rel.data", "0 0 0 3\n0 0 1 1\n1 0 2 2\n"), "--qrels-format", "trec"},
	}
	var ref map[string]any
	for name, extra := range forms {
		code, stdout, stderr := run(t, append(append([]string{}, base...), extra...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		rep := reportOf(t, stdout)
		if ref == nil {
			ref = rep
			continue
		}
		if !reflect.DeepEqual(rep, ref) {
			t.Errorf("%s: report differs", name)
		}
	}
}

// Embedding files in float16, float32 and float64 with exactly representable
// values give the same metrics; ID files and exclusions are honoured.
func TestEmbeddingDtypesIDsExclusions(t *testing.T) {
	dir := t.TempDir()
	qv := []float64{1, 0, 0, 1}
	gv := []float64{1, 0, 0.5, 0.5, 0, 1}
	f16 := func(v []float64) []uint16 {
		out := make([]uint16, len(v))
		for i, x := range v {
			out[i] = float16.Fromfloat32(float32(x)).Bits()
		}
		return out
	}
	f32 := func(v []float64) []float32 {
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out
	}
	q16, _ := matrix.NewDense16(2, 2, f16(qv))
	g16, _ := matrix.NewDense16(3, 2, f16(gv))
	q32, _ := matrix.NewDense32(2, 2, f32(qv))
	g32, _ := matrix.NewDense32(3, 2, f32(gv))
	q64, _ := matrix.NewDense64(2, 2, qv)
	g64, _ := matrix.NewDense64(3, 2, gv)
	qids := writeFile(t, dir, "qids.txt", "alpha\nbeta\n")
	gids := writeFile(t, dir, "gids.txt", "x\ny\nz\n")
	qrels := writeFile(t, dir, "r.qrels", "alpha 0 x 1\nalpha 0 y 1\nbeta 0 z 1\n")
	excl := writeFile(t, dir, "ex.tsv", "query_id gallery_id\nalpha\tx\n")
	var ref map[string]any
	for _, pair := range [][2]*matrix.Dense{{q16, g16}, {q32, g32}, {q64, g64}} {
		qp := writeMatrix(t, dir, "q.npy", pair[0])
		gp := writeMatrix(t, dir, "g.npy", pair[1])
		code, stdout, stderr := run(t, "retrieval", "run", "--queries", qp, "--gallery", gp, "--query-ids", qids, "--gallery-ids", gids,
			"--qrels", qrels, "--exclusions", excl, "--json", "-", "--k", "1", "--primary", "ndcg@1", "--dataset-id", "d", "--dataset-revision", "1")
		if code != 0 {
			t.Fatal(stderr)
		}
		rep := reportOf(t, stdout)
		m := forwardMetrics(t, rep)
		// alpha: x excluded, y is the only eligible positive; y scores 0.707 vs z 0 → rank 1.
		if m["mrr"] != 1.0 || m["recall@1"] != 1.0 {
			t.Errorf("metrics %v", m)
		}
		if rep["dataset_summary"].(map[string]any)["n_exclusions"] != 1.0 {
			t.Error("exclusion not counted")
		}
		r := rep["extractor_results"].([]any)[0].(map[string]any)
		delete(r["compression_metadata"].(map[string]any), "dtype")
		if ref == nil {
			ref = rep
		} else if !reflect.DeepEqual(ref, rep) {
			t.Error("dtype changed the report")
		}
	}
}

func TestLabelsAndLeaveOneOut(t *testing.T) {
	dir := t.TempDir()
	x := writeNPY(t, dir, "x.npy", [][]float64{{1, 0}, {0.9, 0.1}, {0, 1}, {0.1, 0.9}})
	txt := writeFile(t, dir, "l.txt", "cat\ncat\ndog\ndog\n")
	jsonl := writeFile(t, dir, "l.jsonl", "1\n1\n2\n2\n")
	var ints bytes.Buffer
	if err := npy.WriteInt64(&ints, []int{4}, []int64{7, 7, 9, 9}); err != nil {
		t.Fatal(err)
	}
	npyLabels := writeFile(t, dir, "l.npy", ints.String())
	for _, labels := range []string{txt, jsonl, npyLabels} {
		code, stdout, stderr := run(t, "retrieval", "run", "--queries", x, "--query-labels", labels, "--leave-one-out", "--json", "-", "--k", "1", "--primary", "ndcg@1")
		if code != 0 {
			t.Fatalf("%s: %s", labels, stderr)
		}
		rep := reportOf(t, stdout)
		if m := forwardMetrics(t, rep); m["mrr"] != 1.0 {
			t.Errorf("%s: %v", labels, m)
		}
		sum := rep["dataset_summary"].(map[string]any)
		if sum["n_exclusions"] != 4.0 || sum["metadata"].(map[string]any)["leave_one_out"] != true {
			t.Errorf("summary %v", sum)
		}
	}
	// Query and gallery labels without leave-one-out: self pairs count.
	code, stdout, stderr := run(t, "retrieval", "run", "--queries", x, "--gallery", x, "--query-labels", txt, "--gallery-labels", txt, "--json", "-")
	if code != 0 {
		t.Fatal(stderr)
	}
	if m := forwardMetrics(t, reportOf(t, stdout)); m["mrr"] != 1.0 || m["recall@1"] != 0.5 {
		t.Errorf("%v", m)
	}
	// Multi-label .jsonl is rejected.
	multi := writeFile(t, dir, "m.jsonl", "[1,2]\n1\n2\n2\n")
	code, _, stderr = run(t, "retrieval", "run", "--queries", x, "--query-labels", multi, "--leave-one-out")
	if code != 1 || !strings.Contains(stderr, "label-derived relevance is single-label") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	// A unique label leaves an item without eligible positive.
	uniq := writeFile(t, dir, "u.txt", "cat\ncat\ndog\nbird\n")
	code, _, stderr = run(t, "retrieval", "run", "--queries", x, "--query-labels", uniq, "--leave-one-out")
	if code != 1 || !strings.Contains(stderr, `missing for ["2", "3"]`) {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

func TestInputErrors(t *testing.T) {
	f := newFixture(t)
	qrels := f.qrels(t)
	nan := writeNPY(t, f.dir, "nan.npy", [][]float64{{1, 0}, {0, 1}, {0, 1}})
	raw, _ := os.ReadFile(nan)
	// Replace the last value by NaN in place (little-endian float64).
	copy(raw[len(raw)-8:], []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	nanPath := writeFile(t, f.dir, "nan2.npy", string(raw))
	wide := writeNPY(t, f.dir, "wide.npy", [][]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}})
	cases := []struct {
		name  string
		args  []string
		frags []string
	}{
		{"bad npy header", []string{"--gallery", writeFile(t, f.dir, "bad.npy", "\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'  \n")}, []string{"bad.npy", "malformed"}},
		{"truncated npy", []string{"--gallery", writeFile(t, f.dir, "trunc.npy", string(raw[:len(raw)-3]))}, []string{"trunc.npy", "truncated"}},
		{"nan", []string{"--gallery", nanPath}, []string{"nan2.npy", "must contain only finite numeric values", "row 2", `"2"`, "column 1"}},
		{"negative grade", []string{"--qrels", writeFile(t, f.dir, "neg.qrels", "0 0 0 1\n1 0 2 -1\n")}, []string{"neg.qrels:2", "Relevance grades must be finite and non-negative"}},
		{"unknown id", []string{"--qrels", writeFile(t, f.dir, "unk.qrels", "0 0 0 1\n1 0 nope 1\n")}, []string{"unk.qrels:2", "Relevance record references an unknown query or gallery ID", `"nope"`}},
		{"duplicate record", []string{"--qrels", writeFile(t, f.dir, "dup.qrels", "0 0 0 1\n1 0 2 1\n0 0 0 0\n")}, []string{"dup.qrels:3", "Duplicate query/gallery relevance records are not allowed"}},
		{"width mismatch", []string{"--gallery", wide}, []string{"Query and gallery embedding dimensions must match", "width 2", "width 3"}},
		{"int dtype", []string{"--gallery", func() string {
			var b bytes.Buffer
			_ = npy.WriteInt64(&b, []int{3, 2}, []int64{1, 0, 0, 1, 1, 1})
			return writeFile(t, f.dir, "int.npy", b.String())
		}()}, []string{"int.npy", "unsupported dtype"}},
		{"1d", []string{"--gallery", func() string {
			var b bytes.Buffer
			_ = npy.WriteFloat64(&b, []int{3}, []float64{1, 0, 0})
			return writeFile(t, f.dir, "flat.npy", b.String())
		}()}, []string{"flat.npy", "must be a 2D array"}},
		{"unknown extension", []string{"--gallery", writeFile(t, f.dir, "g.bin", "x")}, []string{"g.bin", "unsupported embedding file format"}},
		{"missing file", []string{"--gallery", filepath.Join(f.dir, "nope.npy")}, []string{"nope.npy"}},
		{"unknown exclusion", []string{"--exclusions", writeFile(t, f.dir, "ex.tsv", "0 zz\n")}, []string{"ex.tsv:1", "Exclusion references an unknown query or gallery ID", `"zz"`}},
		{"ids misaligned", []string{"--query-ids", writeFile(t, f.dir, "ids.txt", "a\n")}, []string{"query IDs must align with their input collections"}},
		{"ids bom", []string{"--query-ids", writeFile(t, f.dir, "bom.txt", "\ufeffa\nb\n")}, []string{"bom.txt", "byte order mark"}},
		{"zero norm", []string{"--gallery", writeNPY(t, f.dir, "z.npy", [][]float64{{1, 0}, {0, 0}, {0, 1}})}, []string{`Gallery embeddings contain 1 zero-norm row(s): index 1 (ID "1")`}},
		{"bidirectional coverage", []string{"--qrels", writeFile(t, f.dir, "b.qrels", "0 0 0 1\n1 0 2 1\n"), "--bidirectional"}, []string{"bidirectional retrieval requires", `["1"]`}},
		{"guard", []string{"--max-pairwise-comparisons", "5"}, []string{"Exact retrieval would exceed max_pairwise_comparisons", "6 > 5"}},
	}
	for _, c := range cases {
		out := filepath.Join(f.dir, "out-"+strings.ReplaceAll(c.name, " ", "_"), "r.json")
		args := []string{"retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", qrels, "--json", out}
		// Later flags override earlier ones.
		args = append(args, c.args...)
		code, stdout, stderr := run(t, args...)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1 (%s)", c.name, code, stderr)
			continue
		}
		if stdout != "" {
			t.Errorf("%s: stdout %q", c.name, stdout)
		}
		if !strings.HasPrefix(stderr, "vertebrae: ") || strings.Count(strings.TrimRight(stderr, "\n"), "\n") > 0 {
			t.Errorf("%s: stderr must be one 'vertebrae: ' line: %q", c.name, stderr)
		}
		for _, frag := range c.frags {
			if !strings.Contains(stderr, frag) {
				t.Errorf("%s: %q lacks %q", c.name, stderr, frag)
			}
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: output written despite failure", c.name)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	f := newFixture(t)
	qrels := f.qrels(t)
	base := []string{"retrieval", "run", "--queries", f.q, "--gallery", f.g}
	cases := []struct {
		name string
		args []string
		frag string
	}{
		{"no command", nil, "a command is required"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"unknown subcommand", []string{"retrieval", "frobnicate"}, "unknown command"},
		{"unknown flag", append(append([]string{}, base...), "--qrels", qrels, "--nope"), "unknown flag"},
		{"k zero", append(append([]string{}, base...), "--qrels", qrels, "--k", "0"), "--k entries must be >= 1"},
		{"k malformed", append(append([]string{}, base...), "--qrels", qrels, "--k", "1,x"), "--k"},
		{"primary not in k", append(append([]string{}, base...), "--qrels", qrels, "--k", "1,5", "--primary", "ndcg@10"), "--primary must be one of mrr, map, precision@1, recall@1, hit_rate@1, ndcg@1, precision@5, recall@5, hit_rate@5, ndcg@5; got \"ndcg@10\" (the cut-off 10 is not in --k)"},
		{"similarity", append(append([]string{}, base...), "--qrels", qrels, "--similarity", "l1"), "--similarity must be one of cosine, dot, squared_l2"},
		{"batch", append(append([]string{}, base...), "--qrels", qrels, "--gallery-batch-size", "0"), "--gallery-batch-size must be >= 1"},
		{"malformed int", append(append([]string{}, base...), "--qrels", qrels, "--threads", "two"), "invalid argument"},
		{"missing queries", []string{"retrieval", "run", "--gallery", f.g, "--qrels", qrels}, "--queries is required"},
		{"no relevance", base, "exactly one relevance source is required"},
		{"two relevance", append(append([]string{}, base...), "--qrels", qrels, "--query-labels", qrels, "--gallery-labels", qrels), "exactly one relevance source is required"},
		{"loo different", append(append([]string{}, base...), "--query-labels", qrels, "--leave-one-out"), "--leave-one-out requires the query and gallery inputs to be the same file"},
		{"qrels-format alone", append(append([]string{}, base...), "--query-labels", qrels, "--gallery-labels", qrels, "--qrels-format", "tsv"), "--qrels-format requires --qrels"},
		{"run-depth alone", append(append([]string{}, base...), "--qrels", qrels, "--run-depth", "5"), "--run-depth requires --run"},
		{"run-depth negative", append(append([]string{}, base...), "--qrels", qrels, "--run", filepath.Join(f.dir, "x.run"), "--run-depth", "-1"), "--run-depth must be >= 0"},
		{"identity half", append(append([]string{}, base...), "--qrels", qrels, "--dataset-id", "x"), "--dataset-id and --dataset-revision must be given together"},
		{"bad qrels format", append(append([]string{}, base...), "--qrels", qrels, "--qrels-format", "xml"), "--qrels-format"},
	}
	for _, c := range cases {
		code, _, stderr := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.frag) || !strings.HasPrefix(stderr, "vertebrae: ") {
			t.Errorf("%s: exit %d, stderr %q (want 2 and %q)", c.name, code, stderr, c.frag)
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := run(t, "version")
	if code != 0 || !strings.Contains(stdout, "vertebrae ") || !strings.Contains(stdout, "go1.") {
		t.Errorf("%d %q", code, stdout)
	}
	want := "onnxruntime: not compiled in (built without cgo)"
	if onnx.Compiled {
		want = "onnxruntime: compiled in; library not found"
		if lib, err := onnx.ResolveLibrary(""); err == nil {
			want = "onnxruntime: compiled in; " + lib + " (ONNX Runtime "
		}
	}
	if !strings.Contains(stdout, want) {
		t.Errorf("version output lacks %q:\n%s", want, stdout)
	}
}

func TestInterruptedRunExits130(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(f.dir, "never.json")
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", f.qrels(t), "--json", out}, &stdout, &stderr)
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want 130 (%s)", code, stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("interrupted run wrote its report")
	}
}

func TestBenchCommand(t *testing.T) {
	code, stdout, stderr := run(t, "bench", "--queries", "20", "--gallery", "300", "--dim", "17", "--positives", "2",
		"--repeat", "3", "--calibrate", "20ms", "--similarity", "cosine", "--precision", "float32")
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, frag := range []string{"kernel ", "run 3:", "median:", "GFLOP/s", "peak RSS", "FMA ceiling"} {
		if !strings.Contains(stdout, frag) {
			t.Errorf("bench output lacks %q:\n%s", frag, stdout)
		}
	}
	// --storage picks the element type of the synthetic matrices (the
	// header says which), and --write stores them in it.
	for _, tc := range []struct{ args, want string }{
		{"", "dense float64 storage"}, {"--precision float32", "dense float32 storage"},
		{"--storage float32", "dense float32 storage"}, {"--precision float32 --storage float64", "dense float64 storage"},
	} {
		args := append([]string{"bench", "--queries", "3", "--gallery", "40", "--dim", "5", "--calibrate", "0"}, strings.Fields(tc.args)...)
		if code, stdout, stderr := run(t, args...); code != 0 || !strings.Contains(stdout, tc.want) {
			t.Errorf("bench %s: exit %d, want %q in\n%s%s", tc.args, code, tc.want, stdout, stderr)
		}
	}
	if code, _, _ := run(t, "bench", "--storage", "int8"); code != 2 {
		t.Errorf("--storage int8: exit %d, want 2", code)
	}
	if code, _, stderr := run(t, "bench", "--storage", "float64", "--nnz", "3"); code != 2 || !strings.Contains(stderr, "dense problems only") {
		t.Errorf("--storage with --nnz: exit %d, %s", code, stderr)
	}
	stored := t.TempDir()
	if code, _, stderr := run(t, "bench", "--queries", "3", "--gallery", "40", "--dim", "5", "--storage", "float32", "--write", stored); code != 0 {
		t.Fatal(stderr)
	}
	if g, err := npy.ReadMatrix(filepath.Join(stored, "gallery.npy")); err != nil || g.DType() != matrix.Float32 {
		t.Errorf("--storage float32 --write: %v, %v", g, err)
	}
	// The written problem runs through `retrieval run`.
	dir := t.TempDir()
	if code, _, stderr := run(t, "bench", "--queries", "5", "--gallery", "50", "--dim", "4", "--write", dir); code != 0 {
		t.Fatal(stderr)
	}
	code, _, stderr = run(t, "retrieval", "run", "--queries", filepath.Join(dir, "queries.npy"), "--gallery", filepath.Join(dir, "gallery.npy"),
		"--qrels", filepath.Join(dir, "qrels.tsv"), "--quiet")
	if code != 0 {
		t.Fatal(stderr)
	}
	code, stdout, stderr = run(t, "bench", "--queries", "10", "--gallery", "200", "--dim", "1000", "--nnz", "5", "--calibrate", "0")
	if code != 0 || !strings.Contains(stdout, "sparse (5 non-zeros per row") {
		t.Errorf("sparse bench: %d %s %s", code, stdout, stderr)
	}
	if code, _, _ := run(t, "bench", "--positives", "0"); code != 2 {
		t.Errorf("bad bench flags: exit %d", code)
	}
}

// Relevance problems found by the dataset name the file they came from.
func TestRelevanceErrorsNameTheFile(t *testing.T) {
	f := newFixture(t)
	var dense bytes.Buffer
	if err := npy.WriteFloat64(&dense, []int{2, 2}, []float64{1, 0, 0, 1}); err != nil { // 2×2, gallery has 3
		t.Fatal(err)
	}
	shape := writeFile(t, f.dir, "shape.npy", dense.String())
	var neg bytes.Buffer
	if err := npy.WriteFloat64(&neg, []int{2, 3}, []float64{1, 0, 0, 0, -2, 1}); err != nil {
		t.Fatal(err)
	}
	negPath := writeFile(t, f.dir, "neg.npy", neg.String())
	labels := writeFile(t, f.dir, "short.txt", "a\n")
	glabels := writeFile(t, f.dir, "g.txt", "a\nb\na\n")
	cases := []struct {
		args  []string
		frags []string
	}{
		{[]string{"--qrels", shape}, []string{"shape.npy: Dense relevance must have shape (n_queries, n_gallery)"}},
		{[]string{"--qrels", negPath}, []string{"neg.npy: Relevance grades must be finite and non-negative", `gallery "1"`}},
		{[]string{"--query-labels", labels, "--gallery-labels", glabels}, []string{"short.txt, ", "g.txt: labels must align with their input collections"}},
	}
	for _, c := range cases {
		code, _, stderr := run(t, append([]string{"retrieval", "run", "--queries", f.q, "--gallery", f.g}, c.args...)...)
		if code != 1 {
			t.Errorf("%v: exit %d: %s", c.args, code, stderr)
		}
		for _, frag := range c.frags {
			if !strings.Contains(stderr, frag) {
				t.Errorf("%q lacks %q", stderr, frag)
			}
		}
	}
}
