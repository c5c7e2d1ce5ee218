package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/beam/internal/localrun"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// TestMain points TMPDIR at a directory removed afterwards (each LOOPBACK
// run leaves an empty temp file).
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "vertebrae-beam-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// runFile writes a run file over two tiny float64 tables on a small grid
// (ties happen).
func runFile(t *testing.T, dir string) string {
	t.Helper()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	table := func(name string, rows int, row func(i int) []float64) {
		var vals []float64
		for i := 0; i < rows; i++ {
			vals = append(vals, row(i)...)
		}
		m, err := matrix.NewDense64(rows, 3, vals)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := npy.WriteDense(&buf, m); err != nil {
			t.Fatal(err)
		}
		write(name, buf.String())
	}
	table("q.npy", 5, func(i int) []float64 { return []float64{1, float64(i % 3), float64((i*2)%5 - 2)} })
	table("g.npy", 8, func(j int) []float64 { return []float64{1, float64(j%4 - 1), float64(j % 3)} })
	var qrels strings.Builder
	for j := 0; j < 8; j++ {
		fmt.Fprintf(&qrels, "q%d 0 g%d %d\n", j%5, j, 1+j%2)
	}
	write("qids.txt", "q0\nq1\nq2\nq3\nq4\n")
	write("gids.txt", "g0\ng1\ng2\ng3\ng4\ng5\ng6\ng7\n")
	write("rel.qrels", qrels.String())
	return write("run.yaml", `version: 1
dataset:
  id: beam-cmd
  revision: "1"
  queries: {path: q.npy, ids: qids.txt}
  gallery: {path: g.npy, ids: gids.txt}
  qrels: {path: rel.qrels, format: trec}
retrieval: {similarity: dot, ks: [1, 3], primary_metric: ndcg@3, bidirectional: true}
extractors:
  - {name: tables, type: precomputed}
`)
}

func results(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("bad report: %v\n%s", err, data)
	}
	rs := m["extractor_results"].([]any)
	for _, r := range rs {
		delete(r.(map[string]any), "runtime")
		delete(r.(map[string]any), "cache_status")
	}
	return []any{rs, m["ranking"]}
}

// `vertebrae-beam run` with Beam options passed through (runner=prism,
// modulo gallery shards, query blocks) writes --json equal to the local
// run's results.
func TestRunWritesTheLocalResult(t *testing.T) {
	dir := t.TempDir()
	spec := runFile(t, dir)
	local := filepath.Join(dir, "local.json")
	localrun.JSON(t, spec, local)
	var stderr bytes.Buffer
	out := filepath.Join(dir, "beam.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout bytes.Buffer
	code := run(ctx, []string{"--spec", spec, "--store", filepath.Join(dir, "store"), "--total-shards", "3", "--shard-by", "modulo",
		"--query-block", "2", "--json", out, "--beam-option", "runner=prism", "--beam-option", "job_name=vertebrae-test"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout with --json: %q", stdout.String())
	}
	want, _ := os.ReadFile(local)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := results(t, got), results(t, want); !reflect.DeepEqual(a, b) {
		t.Fatalf("results differ:\nbeam  %v\nlocal %v", a, b)
	}
}

// Usage errors exit 2 before any work; a failed run exits 1 and writes no
// report.
func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	spec := runFile(t, dir)
	st := filepath.Join(dir, "store")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--store", st}, 2, "--spec and --store are required"},
		{[]string{"--spec", spec, "--store", st, "--beam-option", "nosuch=1"}, 2, `Beam has no pipeline option "nosuch"`},
		{[]string{"--spec", spec, "--store", st, "--beam-option", "runner"}, 2, "want key=value"},
		{[]string{"--spec", spec, "--store", st, "--shard-by", "random"}, 2, "--shard-by must be contiguous or modulo"},
		{[]string{"--spec", spec, "--store", st, "--total-shards", "0"}, 2, "--total-shards must be >= 1"},
		{[]string{"--spec", spec, "--store", st, "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"--spec", spec, "--store", st, "extra"}, 2, "unexpected arguments"},
		{[]string{"--spec", filepath.Join(dir, "missing.yaml"), "--store", st, "--json", filepath.Join(dir, "r.json")}, 1, "missing.yaml"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), c.args, &bytes.Buffer{}, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr.String(), c.code, c.msg)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.json")); !os.IsNotExist(err) {
		t.Errorf("a failed run left its report: %v", err)
	}
	if _, err := os.Stat(st); !os.IsNotExist(err) {
		t.Errorf("usage errors touched the store: %v", err)
	}
}

// A PROCESS environment's start (--id, --provision_endpoint) boots; a
// worker start from a boot program (--worker) and commands do not; a
// boot without a provision endpoint fails before touching the harness.
func TestBootArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		boot bool
	}{
		{[]string{"--id='job-001[x]_go'", "--provision_endpoint=localhost:1"}, true},
		{[]string{"-id=w", "-provision_endpoint", "localhost:1"}, true},
		{[]string{"--worker=true", "--id=w", "--provision_endpoint=localhost:1", "--control_endpoint=localhost:2"}, false},
		{[]string{"--worker", "--id=w", "--control_endpoint=localhost:2"}, false},
		{[]string{"--id=w"}, false},
		{[]string{"run", "--spec", "x"}, false},
	} {
		if got := bootArgs(c.args); got != c.boot {
			t.Errorf("bootArgs(%q) = %v, want %v", c.args, got, c.boot)
		}
	}
	if err := boot([]string{"--id=''", "--provision_endpoint=localhost:1"}); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("boot without an id: %v", err)
	}
	if err := boot([]string{"--nosuch"}); err == nil {
		t.Error("boot with an unknown flag succeeded")
	}
}
