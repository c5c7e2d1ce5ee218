package capi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/x448/float16"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/capi"
	"github.com/vertebrae-eval/vertebrae/cmd/internal/cli"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// problem is a random query/gallery pair with IDs, qrels and labels.
type problem struct {
	q, g       []float32
	nq, ng, d  int
	qids, gids []string
	qlab, glab []string
	qrels      capi.Pairs
}

func newProblem(seed uint64, nq, ng, d int) problem {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := problem{nq: nq, ng: ng, d: d, q: make([]float32, nq*d), g: make([]float32, ng*d)}
	for i := range p.q {
		p.q[i] = float32(rng.NormFloat64())
	}
	for i := range p.g {
		// Coarse values make exact ties, which the tie rule must break alike.
		p.g[i] = float32(math.Round(rng.NormFloat64()*4) / 4)
	}
	for i := range nq {
		p.qids = append(p.qids, "q"+strconv.Itoa(i))
		p.qlab = append(p.qlab, "c"+strconv.Itoa(i%4))
		for j := range 1 + i%3 {
			p.qrels.QueryIDs = append(p.qrels.QueryIDs, p.qids[i])
			p.qrels.GalleryIDs = append(p.qrels.GalleryIDs, "g"+strconv.Itoa((i*7+j*13)%ng))
			p.qrels.Grades = append(p.qrels.Grades, float64(1+j))
		}
	}
	for j := range ng {
		p.gids = append(p.gids, "g"+strconv.Itoa(j))
		p.glab = append(p.glab, "c"+strconv.Itoa(j%5))
	}
	return p
}

func arrayOf(data []float32, rows, cols int) *capi.Array {
	return &capi.Array{Data: unsafe.Pointer(&data[0]), Rows: int64(rows), Cols: int64(cols), DType: capi.Float32}
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func npyFile(t *testing.T, dir, name string, data []float32, rows, cols int) string {
	t.Helper()
	var b bytes.Buffer
	if err := npy.WriteFloat32(&b, []int{rows, cols}, data); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, b.Bytes())
}

func lines(ss []string) []byte { return []byte(strings.Join(ss, "\n") + "\n") }

func qrelsTSV(p capi.Pairs) []byte {
	var b strings.Builder
	for i := range p.QueryIDs {
		b.WriteString(p.QueryIDs[i] + "\t" + p.GalleryIDs[i] + "\t" + strconv.FormatFloat(p.Grades[i], 'g', -1, 64) + "\n")
	}
	return []byte(b.String())
}

// withoutTimings decodes a report and drops the wall-clock seconds, the
// only values that differ between two runs of one evaluation.
func withoutTimings(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("bad JSON report: %v\n%s", err, data)
	}
	for _, r := range m["extractor_results"].([]any) {
		delete(r.(map[string]any), "runtime")
	}
	return m
}

// cliReport runs `vertebrae retrieval run` in-process and returns its JSON.
func cliReport(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	out := filepath.Join(dir, "cli.json")
	var stdout, stderr bytes.Buffer
	args = append([]string{"retrieval", "run", "--quiet", "--json", out}, args...)
	if code := cli.Run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("CLI exit %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEvaluateEqualsTheCLI: each request gives the report `retrieval run`
// writes for the same data as files and the same options as flags.
func TestEvaluateEqualsTheCLI(t *testing.T) {
	t.Parallel()
	p := newProblem(1, 23, 157, 9)
	dir := t.TempDir()
	qf, gf := npyFile(t, dir, "q.npy", p.q, p.nq, p.d), npyFile(t, dir, "g.npy", p.g, p.ng, p.d)
	qidf, gidf := writeFile(t, dir, "q.txt", lines(p.qids)), writeFile(t, dir, "g.txt", lines(p.gids))
	qrf := writeFile(t, dir, "qrels.tsv", qrelsTSV(p.qrels))
	qlf, glf := writeFile(t, dir, "ql.txt", lines(p.qlab)), writeFile(t, dir, "gl.txt", lines(p.glab))
	excl := capi.Pairs{QueryIDs: []string{"q0", "q5"}, GalleryIDs: []string{"g0", "g42"}}
	exf := writeFile(t, dir, "excl.tsv", []byte("q0\tg0\nq5\tg42\n"))
	dense := make([]float64, p.nq*p.ng)
	for i := range p.qrels.QueryIDs {
		qi, _ := strconv.Atoi(p.qrels.QueryIDs[i][1:])
		gi, _ := strconv.Atoi(p.qrels.GalleryIDs[i][1:])
		dense[qi*p.ng+gi] = p.qrels.Grades[i]
	}
	var denseNPY bytes.Buffer
	if err := npy.WriteFloat64(&denseNPY, []int{p.nq, p.ng}, dense); err != nil {
		t.Fatal(err)
	}
	densef := writeFile(t, dir, "dense.npy", denseNPY.Bytes())

	files := []string{"--queries", qf, "--gallery", gf, "--query-ids", qidf, "--gallery-ids", gidf}
	ids := `"query_ids": ` + jsonOf(p.qids) + `, "gallery_ids": ` + jsonOf(p.gids)
	qrels := `"qrels": ` + jsonOf(p.qrels)
	cases := []struct {
		name    string
		args    []string
		request string
		dense   bool
		loo     bool
	}{
		{"defaults", append(files, "--qrels", qrf), "{" + ids + ", " + qrels + "}", false, false},
		{"row-number IDs", []string{"--queries", qf, "--gallery", gf, "--qrels", writeFile(t, dir, "rn.tsv", []byte("0\t3\t1\n1\t4\t2\n2\t5\t1\n")), "--drop-queries-without-positives"},
			`{"qrels": {"query_ids": ["0", "1", "2"], "gallery_ids": ["3", "4", "5"], "grades": [1, 2, 1]}, "drop_queries_without_positives": true}`, false, false},
		{"float32 dot bidirectional", append(files, "--qrels", qrf, "--precision", "float32", "--similarity", "dot", "--k", "1,3", "--primary", "mrr", "--bidirectional", "--drop-queries-without-positives"),
			"{" + ids + ", " + qrels + `, "precision": "float32", "similarity": "dot", "k": [1, 3], "primary": "mrr", "bidirectional": true, "drop_queries_without_positives": true}`, false, false},
		{"labels squared_l2", append(files, "--query-labels", qlf, "--gallery-labels", glf, "--similarity", "squared_l2", "--gain", "linear"),
			"{" + ids + `, "query_labels": ` + jsonOf(p.qlab) + `, "gallery_labels": ` + jsonOf(p.glab) + `, "similarity": "squared_l2", "gain": "linear"}`, false, false},
		{"leave-one-out", []string{"--queries", qf, "--query-ids", qidf, "--query-labels", qlf, "--leave-one-out", "--worst-queries", "3"},
			`{"query_ids": ` + jsonOf(p.qids) + `, "query_labels": ` + jsonOf(p.qlab) + `, "leave_one_out": true, "worst_queries": 3}`, false, true},
		{"exclusions, drop, linear, declared", append(files, "--qrels", qrf, "--exclusions", exf, "--drop-queries-without-positives", "--gain", "linear", "--dataset-id", "mine", "--dataset-revision", "v2", "--no-per-query", "--name", "e5"),
			"{" + ids + ", " + qrels + `, "exclusions": ` + jsonOf(excl) + `, "drop_queries_without_positives": true, "gain": "linear", "dataset_id": "mine", "dataset_revision": "v2", "per_query": false, "name": "e5"}`, false, false},
		{"dense relevance", []string{"--queries", qf, "--gallery", gf, "--qrels", densef, "--max-memory-bytes", "2GiB"}, `{"max_memory_bytes": "2GiB"}`, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			want := cliReport(t, t.TempDir(), c.args...)
			req, err := capi.ParseEvaluateRequest([]byte(c.request))
			if err != nil {
				t.Fatal(err)
			}
			in := capi.Inputs{Queries: arrayOf(p.q, p.nq, p.d)}
			if !c.loo {
				in.Gallery = arrayOf(p.g, p.ng, p.d)
			}
			if c.dense {
				in.Relevance = &capi.Array{Data: unsafe.Pointer(&dense[0]), Rows: int64(p.nq), Cols: int64(p.ng), DType: capi.Float64}
			}
			got, err := capi.Evaluate(context.Background(), req, in)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := withoutTimings(t, got), withoutTimings(t, want); !reflect.DeepEqual(a, b) {
				t.Fatalf("report differs from the CLI's:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestArraysAreViewedNotCopied: contiguous arrays are the caller's memory;
// padded rows and float16 arrays give the same report as contiguous float32.
func TestArraysAreViewedNotCopied(t *testing.T) {
	t.Parallel()
	p := newProblem(2, 11, 64, 5)
	m, err := arrayOf(p.g, p.ng, p.d).Matrix("gallery")
	if err != nil {
		t.Fatal(err)
	}
	if &m.Float32Data()[0] != &p.g[0] {
		t.Fatal("a contiguous array was copied")
	}
	if !m.IsReadOnly() {
		t.Fatal("the view is not read-only: evaluation would clone it")
	}

	req, err := capi.ParseEvaluateRequest([]byte(`{"qrels": ` + jsonOf(p.qrels) + `, "query_ids": ` + jsonOf(p.qids) + `, "gallery_ids": ` + jsonOf(p.gids) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	evaluate := func(g *capi.Array) map[string]any {
		out, err := capi.Evaluate(context.Background(), req, capi.Inputs{Queries: arrayOf(p.q, p.nq, p.d), Gallery: g})
		if err != nil {
			t.Fatal(err)
		}
		return withoutTimings(t, out)
	}
	want := evaluate(arrayOf(p.g, p.ng, p.d))

	// Every row padded by 3 elements (a column slice of a wider array).
	padded := make([]float32, p.ng*(p.d+3))
	for i := range p.ng {
		copy(padded[i*(p.d+3):], p.g[i*p.d:(i+1)*p.d])
		padded[i*(p.d+3)+p.d] = float32(math.NaN()) // outside the row: never read
	}
	strided := &capi.Array{Data: unsafe.Pointer(&padded[0]), Rows: int64(p.ng), Cols: int64(p.d), RowStride: int64(4 * (p.d + 3)), DType: capi.Float32}
	if got := evaluate(strided); !reflect.DeepEqual(got, want) {
		t.Fatal("padded rows give another report")
	}

	// float16 input evaluates as the CLI's float16 file does; the values
	// are multiples of 1/4, exact in float16, so the report is the same.
	half := make([]uint16, len(p.g))
	for i, v := range p.g {
		half[i] = float16.Fromfloat32(v).Bits()
	}
	h := &capi.Array{Data: unsafe.Pointer(&half[0]), Rows: int64(p.ng), Cols: int64(p.d), DType: capi.Float16}
	hm, _ := h.Matrix("gallery")
	if hm.DType() != matrix.Float16 || &hm.Float16Bits()[0] != &half[0] {
		t.Fatal("float16 array copied or mistyped")
	}
	got := evaluate(h)
	// The dtype is part of the result's metadata; the numbers must agree.
	for _, k := range []string{"forward", "similarity"} {
		a := got["extractor_results"].([]any)[0].(map[string]any)[k]
		b := want["extractor_results"].([]any)[0].(map[string]any)[k]
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("float16 gallery changes %s", k)
		}
	}
}

// TestErrorsAreClassified: each class of failure has its code and the
// CLI's message naming the argument, row or option.
func TestErrorsAreClassified(t *testing.T) {
	t.Parallel()
	p := newProblem(3, 5, 20, 4)
	base := `"qrels": ` + jsonOf(p.qrels) + `, "query_ids": ` + jsonOf(p.qids) + `, "gallery_ids": ` + jsonOf(p.gids)
	nan := append([]float32(nil), p.g...)
	nan[7*p.d+2] = float32(math.NaN())
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	dupIDs := append([]string(nil), p.gids...)
	dupIDs[9] = "g3"
	cases := []struct {
		name    string
		request string
		gallery []float32
		ctx     context.Context
		code    capi.Code
		msg     []string
	}{
		{"NaN names row and ID", "{" + base + "}", nan, nil, capi.Input, []string{"gallery: Gallery embeddings must contain only finite numeric values; row 7 (ID \"g7\"), column 2 is NaN"}},
		{"duplicate gallery ID", `{"qrels": ` + jsonOf(p.qrels) + `, "gallery_ids": ` + jsonOf(dupIDs) + "}", nil, nil, capi.Input, []string{"gallery_ids:", "unique", `"g3" appears at index 3 and 9`}},
		{"unknown qrels ID", `{"qrels": {"query_ids": ["q0"], "gallery_ids": ["nope"], "grades": [1]}, "query_ids": ` + jsonOf(p.qids) + `, "gallery_ids": ` + jsonOf(p.gids) + "}", nil, nil, capi.Input, []string{"nope"}},
		{"bad similarity", "{" + base + `, "similarity": "cos"}`, nil, nil, capi.Usage, []string{"similarity must be one of"}},
		{"bad primary", "{" + base + `, "primary": "ndcg@7"}`, nil, nil, capi.Usage, []string{"primary:", "ndcg@7"}},
		{"unknown option", "{" + base + `, "simlarity": "dot"}`, nil, nil, capi.Usage, []string{`unknown field "simlarity"`}},
		{"wrong type", "{" + base + `, "k": "1,5"}`, nil, nil, capi.Usage, []string{"k must be a list"}},
		{"two relevance sources", "{" + base + `, "query_labels": ["a"], "gallery_labels": ["b"]}`, nil, nil, capi.Usage, []string{"exactly one relevance source"}},
		{"unequal qrels columns", `{"qrels": {"query_ids": ["q0"], "gallery_ids": [], "grades": [1]}}`, nil, nil, capi.Usage, []string{"equal lengths"}},
		{"memory budget", "{" + base + `, "max_memory_bytes": 64, "allow_disk_spill": false}`, nil, nil, capi.Memory, []string{"Retriever 'precomputed' query embeddings is estimated to require 80 bytes, exceeding the memory budget of 64 bytes"}},
		{"cancelled", "{" + base + "}", nil, cancelled, capi.Cancelled, []string{"interrupted"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := c.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			g := p.g
			if c.gallery != nil {
				g = c.gallery
			}
			req, err := capi.ParseEvaluateRequest([]byte(c.request))
			if err == nil {
				_, err = capi.Evaluate(ctx, req, capi.Inputs{Queries: arrayOf(p.q, p.nq, p.d), Gallery: arrayOf(g, p.ng, p.d)})
			}
			if err == nil {
				t.Fatal("no error")
			}
			if code := capi.Classify(ctx, err); code != c.code {
				t.Fatalf("code %d, want %d: %v", code, c.code, err)
			}
			msg := capi.Message(ctx, err)
			if strings.Contains(msg, "RetrievalConfig.") {
				t.Fatalf("message %q names the configuration field, not the option", msg)
			}
			for _, s := range c.msg {
				if !strings.Contains(strings.ToLower(msg), strings.ToLower(s)) {
					t.Fatalf("message %q lacks %q", msg, s)
				}
			}
		})
	}
}

// TestCompareEqualsTheCLI: merging two in-memory reports gives what
// `vertebrae retrieval compare a.json b.json` writes.
func TestCompareEqualsTheCLI(t *testing.T) {
	t.Parallel()
	p := newProblem(4, 30, 90, 6)
	p2 := newProblem(5, 30, 90, 6)
	dir := t.TempDir()
	var reports []string
	var files []string
	for i, g := range [][]float32{p.g, p2.g} {
		name := []string{"a", "b"}[i]
		req, err := capi.ParseEvaluateRequest([]byte(`{"name": "` + name + `", "qrels": ` + jsonOf(p.qrels) + `, "query_ids": ` + jsonOf(p.qids) + `, "gallery_ids": ` + jsonOf(p.gids) + "}"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := capi.Evaluate(context.Background(), req, capi.Inputs{Queries: arrayOf(p.q, p.nq, p.d), Gallery: arrayOf(g, p.ng, p.d)})
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, string(out))
		files = append(files, writeFile(t, dir, name+".json", out))
	}
	out := filepath.Join(dir, "cmp.json")
	var stdout, stderr bytes.Buffer
	args := append([]string{"retrieval", "compare", "--quiet", "--json", out, "--bootstrap", "200", "--permutations", "300", "--seed", "9", "--compare-metrics", "mrr"}, files...)
	if code := cli.Run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("CLI exit %d: %s", code, stderr.String())
	}
	want, _ := os.ReadFile(out)
	req, err := capi.ParseCompareRequest([]byte(`{"reports": ` + jsonOf(reports) + `, "bootstrap": 200, "permutations": 300, "seed": 9, "metrics": ["mrr"]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := capi.Compare(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("compare differs from the CLI's:\n got %s\nwant %s", got, want)
	}

	// A report of another task is refused, naming what differs.
	other := newProblem(4, 30, 90, 6)
	other.qrels.Grades[0]++
	req2, _ := capi.ParseEvaluateRequest([]byte(`{"name": "c", "qrels": ` + jsonOf(other.qrels) + `, "query_ids": ` + jsonOf(p.qids) + `, "gallery_ids": ` + jsonOf(p.gids) + "}"))
	c, err := capi.Evaluate(context.Background(), req2, capi.Inputs{Queries: arrayOf(p.q, p.nq, p.d), Gallery: arrayOf(p.g, p.ng, p.d)})
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := capi.ParseCompareRequest([]byte(`{"reports": ` + jsonOf([]string{reports[0], string(c)}) + `, "sources": ["a", "c"]}`))
	_, err = capi.Compare(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "reports differ in their relevance: a and c") {
		t.Fatalf("got %v", err)
	}
}

// TestRenderWritesAllOrNothing: Markdown is returned; HTML, CSV and
// figures are written; a bad target is a usage error and writes nothing.
func TestRenderWritesAllOrNothing(t *testing.T) {
	t.Parallel()
	p := newProblem(7, 8, 30, 3)
	req, _ := capi.ParseEvaluateRequest([]byte(`{"qrels": ` + jsonOf(p.qrels) + `, "query_ids": ` + jsonOf(p.qids) + `, "gallery_ids": ` + jsonOf(p.gids) + "}"))
	rep, err := capi.Evaluate(context.Background(), req, capi.Inputs{Queries: arrayOf(p.q, p.nq, p.d), Gallery: arrayOf(p.g, p.ng, p.d)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	render := func(format, path string) ([]byte, error) {
		r, err := capi.ParseRenderRequest([]byte(`{"report": ` + jsonOf(string(rep)) + `, "format": "` + format + `", "path": ` + jsonOf(path) + "}"))
		if err != nil {
			return nil, err
		}
		return capi.Render(context.Background(), r, nil)
	}
	md, err := render("markdown", "")
	if err != nil || !bytes.Contains(md, []byte("ndcg@10")) {
		t.Fatalf("markdown: %v\n%s", err, md)
	}
	for _, f := range []struct{ format, path, want string }{
		{"html", filepath.Join(dir, "r.html"), "<html"},
		{"csv", filepath.Join(dir, "r.csv"), "query_id"},
		{"plots", filepath.Join(dir, "plots"), ""},
	} {
		if _, err := render(f.format, f.path); err != nil {
			t.Fatalf("%s: %v", f.format, err)
		}
		if f.format == "plots" {
			ents, err := os.ReadDir(f.path)
			if err != nil || len(ents) == 0 {
				t.Fatalf("plots: %v, %d files", err, len(ents))
			}
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil || !bytes.Contains(data, []byte(f.want)) {
			t.Fatalf("%s: %v", f.format, err)
		}
	}
	_, err = render("html", dir) // a directory: refused, nothing written
	if capi.Classify(context.Background(), err) != capi.Usage {
		t.Fatalf("html onto a directory: %v", err)
	}
	if _, err := render("pdf", filepath.Join(dir, "x")); capi.Classify(context.Background(), err) != capi.Usage {
		t.Fatalf("pdf: %v", err)
	}
}
