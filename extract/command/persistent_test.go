package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// countLines counts the lines of path (0 when it does not exist).
func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// closeExtractor closes e at the end of the test, failing on an error.
func closeExtractor(t *testing.T, e *Extractor) {
	t.Helper()
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

// sameBits reports whether a and b have the same shape, dtype and bits.
func sameBits(t *testing.T, a, b *matrix.Dense) {
	t.Helper()
	if a.Rows() != b.Rows() || a.Cols() != b.Cols() || a.DType() != b.DType() {
		t.Fatalf("shape (%d, %d) %v vs (%d, %d) %v", a.Rows(), a.Cols(), a.DType(), b.Rows(), b.Cols(), b.DType())
	}
	for i := range a.Rows() {
		for j := range a.Cols() {
			if x, y := a.At(i, j), b.At(i, j); math.Float64bits(x) != math.Float64bits(y) {
				t.Fatalf("row %d col %d: %v vs %v", i, j, x, y)
			}
		}
	}
}

func manyTexts(n int) []string {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = strings.Repeat("abc", i%5) + " é " + strconv.Itoa(i*7919) + strings.Repeat("b", i%3)
	}
	return texts
}

// TestPersistentEqualsPerBatch encodes both sides with one process and
// compares them bit for bit with the per-batch mode's output.
func TestPersistentEqualsPerBatch(t *testing.T) {
	t.Parallel()
	texts := manyTexts(23)
	cases := []struct {
		name  string
		flags []string // of the per-batch reference
	}{
		{"per-batch jsonl", nil},
		{"per-batch object lines", []string{"-format", "object"}},
		{"per-batch npy f8", []string{"-format", "npy"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			startsPath, recPath := filepath.Join(dir, "starts"), filepath.Join(dir, "rec.jsonl")
			ref := newExtractor(t, Config{BatchSize: 4}, c.flags...)
			per := newExtractor(t, Config{BatchSize: 4, Persistent: true}, "-persistent", "-starts", startsPath, "-record", recPath)
			for _, side := range []struct {
				name  string
				start int
			}{{"query", 0}, {"gallery", 100}} {
				want, err := ref.Encode(context.Background(), side.name, side.start, textItems(side.name[:1], texts...))
				if err != nil {
					t.Fatal(err)
				}
				got, err := per.Encode(context.Background(), side.name, side.start, textItems(side.name[:1], texts...))
				if err != nil {
					t.Fatal(err)
				}
				sameBits(t, got, want)
			}
			if n := countLines(t, startsPath); n != 1 {
				t.Errorf("%d processes for 12 batches over both sides, want 1", n)
			}
			if err := per.Close(); err != nil {
				t.Fatal(err)
			}
			recs := readRecords(t, recPath) // written after stdin ended
			if len(recs) != 1 || len(recs[0].Stdin) != 12 {
				t.Fatalf("records %+v", recs)
			}
			r := recs[0]
			if _, set := r.Env["VERTEBRAE_SIDE"]; set {
				t.Errorf("VERTEBRAE_SIDE set for a worker serving both sides: %v", r.Env)
			}
			if r.Env["VERTEBRAE_BRANCH"] != "default" || r.Env["VERTEBRAE_MODALITY"] != "multimodal" {
				t.Errorf("env %v", r.Env)
			}
			wantFirst := `{"batch":0,"rows":[` +
				`{"index":0,"id":"q0","side":"query","modality":"text","value":" é 0","text":" é 0"},` +
				`{"index":1,"id":"q1","side":"query","modality":"text","value":"abc é 7919b","text":"abc é 7919b"},` +
				`{"index":2,"id":"q2","side":"query","modality":"text","value":"abcabc é 15838bb","text":"abcabc é 15838bb"},` +
				`{"index":3,"id":"q3","side":"query","modality":"text","value":"abcabcabc é 23757","text":"abcabcabc é 23757"}]}`
			if r.Stdin[0] != wantFirst {
				t.Errorf("first request\n%s\nwant\n%s", r.Stdin[0], wantFirst)
			}
			if !strings.HasPrefix(r.Stdin[11], `{"batch":11,"rows":[{"index":120,"id":"g20","side":"gallery",`) {
				t.Errorf("last request %s", r.Stdin[11])
			}
		})
	}
}

// TestPersistentThroughPipeline runs the §9.2 flow of package extract (query
// then gallery, batches of 2) and checks one process served it all.
func TestPersistentThroughPipeline(t *testing.T) {
	t.Parallel()
	startsPath := filepath.Join(t.TempDir(), "starts")
	queries, gallery := manyTexts(5), manyTexts(7)
	var rel []retrieval.Record
	for i := range queries {
		rel = append(rel, retrieval.Record{QueryID: strconv.Itoa(i), GalleryID: strconv.Itoa(i), Grade: 1})
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Texts(queries), Gallery: retrieval.Texts(gallery), Identity: retrieval.Declared("persistent", "1"),
	}, retrieval.RecordRelevance(rel))
	if err != nil {
		t.Fatal(err)
	}
	cfg := extract.EmbeddingConfig{BatchSize: 2, StreamingEnabled: true}
	var out [2]*extract.Encoded
	for i, persistent := range []bool{false, true} {
		flags := []string{}
		if persistent {
			flags = []string{"-persistent", "-starts", startsPath}
		}
		e := newExtractor(t, Config{Modality: "text", Persistent: persistent, BatchSize: 1000}, flags...)
		closeExtractor(t, e)
		if out[i], err = extract.Encode(context.Background(), ds, extract.Entry{Extractor: e.AsExtractor()}, cfg, nil); err != nil {
			t.Fatal(err)
		}
		defer out[i].Close()
	}
	if n := countLines(t, startsPath); n != 1 {
		t.Errorf("%d processes for 7 batches, want 1", n)
	}
	for _, pair := range [][2]matrix.Matrix{{out[0].Query, out[1].Query}, {out[0].Gallery, out[1].Gallery}} {
		a, aok := pair[0].(*matrix.Dense)
		b, bok := pair[1].(*matrix.Dense)
		if !aok || !bok {
			t.Fatalf("endpoints are %T and %T", pair[0], pair[1])
		}
		sameBits(t, b, a)
	}
}

// TestPersistentStartsOnce counts processes: one per branch per run, however
// many batches and concurrent callers, and a new one after Close.
func TestPersistentStartsOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		branches map[string]string
		use      []string // branch of each concurrent caller ("" = Encode)
		starts   int
	}{
		{"same modality", nil, []string{"", "", "", ""}, 1},
		{"one branch", map[string]string{"text_branch": "text", "image_branch": "image"}, []string{"text_branch", "text_branch", "text_branch"}, 1},
		{"two branches", map[string]string{"q": "text", "g": "text"}, []string{"q", "g", "q", "g"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			startsPath := filepath.Join(dir, "starts")
			e := newExtractor(t, Config{BatchSize: 2, Persistent: true, Branches: c.branches}, "-persistent", "-starts", startsPath, "-record", filepath.Join(dir, "rec"))
			texts := manyTexts(21) // 11 batches per caller
			var wg sync.WaitGroup
			errs := make([]error, len(c.use))
			for i, branch := range c.use {
				wg.Go(func() {
					side, start := "query", 10*i
					var m *matrix.Dense
					var err error
					if branch == "" {
						m, err = e.Encode(context.Background(), side, start, textItems("q", texts...))
					} else {
						m, err = e.EncodeBranch(context.Background(), branch, side, start, textItems("q", texts...))
					}
					if err == nil {
						for r, s := range texts {
							want := textVector(s, start+r)
							for j, w := range want {
								if got := m.At(r, j); got != w {
									err = fmt.Errorf("caller %d row %d col %d = %v, want %v", i, r, j, got, w)
								}
							}
						}
					}
					errs[i] = err
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if n := countLines(t, startsPath); n != c.starts {
				t.Errorf("%d processes, want %d", n, c.starts)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			recs := readRecords(t, filepath.Join(dir, "rec"))
			branches := map[string]bool{}
			for _, r := range recs {
				branches[r.Env["VERTEBRAE_BRANCH"]] = true
				// Concurrent callers' batches were serialised: the numbers
				// count each process's requests.
				for n, line := range r.Stdin {
					if !strings.HasPrefix(line, fmt.Sprintf(`{"batch":%d,"rows":[`, n)) {
						t.Errorf("request %d: %.40s", n, line)
					}
				}
			}
			if len(branches) != c.starts {
				t.Errorf("branches served %v", branches)
			}
			// Closed: the next batch starts a new process.
			if len(c.branches) == 0 {
				if _, err := e.Encode(context.Background(), "gallery", 0, textItems("g", "abc")); err != nil {
					t.Fatal(err)
				}
				if n := countLines(t, startsPath); n != c.starts+1 {
					t.Errorf("%d processes after Close and one more batch, want %d", n, c.starts+1)
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestPersistentFailures makes batch 1 (rows [7, 10) of the query side) go
// wrong in each way the protocol must catch.
func TestPersistentFailures(t *testing.T) {
	t.Parallel()
	const head = `command extractor "emb": query rows [7, 10), batch 1: `
	serving := "embedder: serving batch 1 (3 rows)" // the stderr tail
	cases := []struct {
		name  string
		cfg   Config
		flags []string
		want  []string
		is    error
		alive bool // the process survives the failure
	}{
		{name: "crash", flags: []string{"-fail"}, want: []string{head + "the program exited: exit status 3 before answering", "stderr (last lines):", "fatal: model exploded at batch 1"}},
		{name: "wrong batch number", flags: []string{"-wrong-batch"}, want: []string{head + "malformed output: reply is for batch 2, expected 1", serving}, is: ErrMalformed},
		{name: "too many rows", flags: []string{"-rows-delta", "1"}, want: []string{head + "returned 4 embeddings for 3 rows", serving}},
		{name: "too few rows", flags: []string{"-rows-delta", "-1"}, want: []string{head + "returned 2 embeddings for 3 rows", serving}},
		{name: "no rows", flags: []string{"-rows-delta", "-3"}, want: []string{head + "returned 0 embeddings for 3 rows", serving}},
		{name: "NaN as a string", flags: []string{"-nan-row", "1"}, want: []string{head + `embeddings[1]: malformed output: column 1 is not a number: "NaN"`, serving}, is: ErrMalformed},
		{name: "bare NaN", flags: []string{"-nan-row", "1", "-bare-nan"}, want: []string{head + "malformed output", "NaN and Infinity are not JSON numbers", serving}, is: ErrMalformed},
		{name: "overflow", flags: []string{"-nan-row", "2", "-overflow"}, want: []string{head + `embeddings[2]: row 9 (ID "q5") must contain only finite numeric values; column 1 (1e400) overflows float64`, serving}},
		{name: "ragged rows", flags: []string{"-ragged-row", "1"}, want: []string{head + "embeddings[1]: malformed output: ragged rows: 5 values, row 0 has 6", serving}, is: ErrMalformed},
		{name: "width changed", flags: []string{"-wide"}, want: []string{head + "malformed output: inconsistent widths: 7 columns, batch 0 had 6", serving}, is: ErrMalformed},
		{name: "truncated reply", flags: []string{"-malformed-line", "1"}, want: []string{head + "malformed output: unexpected end of JSON input", serving}, is: ErrMalformed},
		{name: "error reply", flags: []string{"-error-reply"}, want: []string{head + "worker reported an error: CUDA out of memory at batch 1", serving}, is: ErrWorkerReply, alive: true},
		{
			name: "timeout", cfg: Config{Timeout: 300 * time.Millisecond}, flags: []string{"-sleep", "1h"},
			want: []string{head + "timed out after 300ms (per-batch timeout)", serving}, is: ErrTimeout,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			cfg := c.cfg
			cfg.BatchSize, cfg.Persistent = 3, true
			e := newExtractor(t, cfg, append([]string{"-persistent", "-at", "1", "-pidfile", pidFile}, c.flags...)...)
			begin := time.Now()
			_, err := e.Encode(context.Background(), "query", 4, textItems("q", "ab", "bc", "ca", "abc", "b", "cc"))
			if err == nil {
				t.Fatal("no error")
			}
			if d := time.Since(begin); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error does not wrap %v: %v", c.is, err)
			}
			if len(msg) > 3000 {
				t.Errorf("error is %d bytes long; stderr must be bounded", len(msg))
			}
			if c.alive {
				if !processAlive(t, pidFile) {
					t.Error("the process was stopped after an error reply")
				}
			} else {
				waitGone(t, pidFile, false)
			}
			// A stopped process was reported by its batch, not again.
			if err := e.Close(); err != nil {
				t.Errorf("Close after the failure: %v", err)
			}
			waitGone(t, pidFile, false)
		})
	}
}

func TestPersistentCrashKeepsExitError(t *testing.T) {
	t.Parallel()
	e := newExtractor(t, Config{Persistent: true}, "-persistent", "-fail")
	_, err := e.Encode(context.Background(), "gallery", 0, textItems("g", "a"))
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Fatalf("want *exec.ExitError with code 3, got %v", err)
	}
}

// TestPersistentClose checks the end of the run: stdin closed, exit 0 within
// the timeout.
func TestPersistentClose(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cfg   Config
		flags []string
		want  []string
		is    error
	}{
		{name: "clean exit"},
		{name: "blank lines before replies", flags: []string{"-blank"}},
		{
			name: "non-zero exit", flags: []string{"-exit-code", "4"},
			want: []string{`command extractor "emb": persistent worker: the program failed at exit: exit status 4`, "embedder: stdin closed, exiting"},
		},
		{
			name: "does not exit", cfg: Config{Timeout: 300 * time.Millisecond}, flags: []string{"-linger", "1h"},
			want: []string{"persistent worker: timed out: still running 300ms after its stdin was closed", "embedder: stdin closed, exiting"}, is: ErrTimeout,
		},
		{
			name: "branch named", cfg: Config{Branches: map[string]string{"text_branch": "text"}}, flags: []string{"-exit-code", "1"},
			want: []string{`persistent worker (branch "text_branch"): the program failed at exit: exit status 1`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile, recPath := filepath.Join(dir, "pid"), filepath.Join(dir, "rec")
			cfg := c.cfg
			cfg.Persistent, cfg.BatchSize = true, 2
			e := newExtractor(t, cfg, append([]string{"-persistent", "-pidfile", pidFile, "-record", recPath}, c.flags...)...)
			var m *matrix.Dense
			var err error
			if len(cfg.Branches) > 0 {
				m, err = e.EncodeBranch(context.Background(), "text_branch", "query", 0, textItems("q", "ab", "c", "abc"))
			} else {
				m, err = e.Encode(context.Background(), "query", 0, textItems("q", "ab", "c", "abc"))
			}
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, m, [][]float64{textVector("ab", 0), textVector("c", 1), textVector("abc", 2)})
			begin := time.Now()
			err = e.Close()
			if d := time.Since(begin); d > 5*time.Second {
				t.Errorf("Close took %v", d)
			}
			if len(c.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q:\n%v", w, err)
					}
				}
				if c.is != nil && !errors.Is(err, c.is) {
					t.Errorf("error does not wrap %v: %v", c.is, err)
				}
			}
			if recs := readRecords(t, recPath); len(recs) != 1 || len(recs[0].Stdin) != 2 {
				t.Errorf("the program did not see its stdin end after 2 requests: %+v", recs)
			}
			waitGone(t, pidFile, false)
			if err := e.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}

	// Nothing to close.
	for _, cfg := range []Config{{Persistent: true}, {}} {
		if err := newExtractor(t, cfg).Close(); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// TestPersistentCancel cancels a batch in flight: the call returns within a
// second and the process, with the helper it started, is gone.
func TestPersistentCancel(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	e := newExtractor(t, Config{Persistent: true, BatchSize: 2}, "-persistent", "-at", "1", "-spawn", "-pidfile", pidFile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var canceledAt time.Time
	time.AfterFunc(500*time.Millisecond, func() {
		canceledAt = time.Now()
		cancel()
	})
	_, err := e.Encode(ctx, "query", 0, textItems("q", "a", "b", "c", "d"))
	returned := time.Now()
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "query rows [2, 4), batch 1: canceled") {
		t.Fatalf("want a cancellation of batch 1, got %v", err)
	}
	if d := returned.Sub(canceledAt); d > time.Second {
		t.Errorf("cancellation took %v", d)
	}
	waitGone(t, pidFile, false)         // reaped: no zombie
	waitGone(t, pidFile+".child", true) // killed with its group
	if _, err := e.Encode(ctx, "query", 0, textItems("q", "a")); !errors.Is(err, context.Canceled) {
		t.Errorf("already canceled: %v", err)
	}
	begin := time.Now()
	if err := e.Close(); err != nil || time.Since(begin) > time.Second {
		t.Errorf("Close after cancellation: %v after %v", err, time.Since(begin))
	}
}

// TestPersistentShutdownCanceled kills a process that ignores the end of its
// stdin when the context of Shutdown ends.
func TestPersistentShutdownCanceled(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	e := newExtractor(t, Config{Persistent: true}, "-persistent", "-linger", "1h", "-pidfile", pidFile)
	if _, err := e.Encode(context.Background(), "query", 0, textItems("q", "a")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := e.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 1500*time.Millisecond {
		t.Fatalf("got %v after %v", err, time.Since(begin))
	}
	waitGone(t, pidFile, false)
}

// processAlive reports whether the process in pidFile runs (not a zombie).
func processAlive(t *testing.T, pidFile string) bool {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("process checks read /proc")
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/" + string(pid) + "/stat")
	return err == nil && procState(string(stat)) != "Z"
}

// waitGone waits until the process in pidFile no longer exists; with
// zombieOK a zombie counts as gone (a grandchild is reaped by init, which a
// container may lack). Linux only.
func waitGone(t *testing.T, pidFile string, zombieOK bool) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + string(pid) + "/stat")
		if err != nil || zombieOK && procState(string(stat)) == "Z" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("process %s (%s) still there: %s", pid, filepath.Base(pidFile), stat)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPersistentConfig(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Name: "a", Argv: []string{"x"}, Persistent: true, Output: OutputNPY}); err == nil ||
		!strings.Contains(err.Error(), `output "npy" cannot be used with persistent`) {
		t.Errorf("npy output with persistent: %v", err)
	}
	for _, out := range []string{"", OutputAuto, OutputJSONL} {
		if _, err := New(Config{Name: "a", Argv: []string{"x"}, Persistent: true, Output: out}); err != nil {
			t.Errorf("output %q: %v", out, err)
		}
	}
	// persistent changes how rows reach the program, not the embeddings:
	// the recipe, hence the cache identity, is the same.
	cfg := Config{Name: "py", Argv: []string{"python3", "worker.py"}, Modality: "text", CacheIdentity: "e5@1"}
	plain, _ := New(cfg)
	cfg.Persistent = true
	per, _ := New(cfg)
	a, _ := json.Marshal(plain.Recipe())
	b, _ := json.Marshal(per.Recipe())
	if string(a) != string(b) {
		t.Errorf("recipes differ:\n%s\n%s", a, b)
	}
	ha, _ := extract.RecipeHash(plain)
	hb, _ := extract.RecipeHash(per)
	if ha != hb || !per.Persistent() || plain.Persistent() {
		t.Errorf("recipe hashes %s / %s", ha, hb)
	}
}

// findPython returns a python3 that can import numpy. It skips only when
// there is no python3 at all, and fails then too with
// VERTEBRAE_REQUIRE_PYTHON=1. VERTEBRAE_PYTHON names an interpreter to try
// first; /usr/bin/python3 (Debian's, with python3-numpy) is tried after the
// one on PATH.
func findPython(t *testing.T) string {
	t.Helper()
	var cands []string
	if p := os.Getenv("VERTEBRAE_PYTHON"); p != "" {
		cands = append(cands, p)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	if fileExists("/usr/bin/python3") {
		cands = append(cands, "/usr/bin/python3")
	}
	if len(cands) == 0 {
		msg := "python3 not found: the Python worker template is not tested (Debian: apt-get install python3 python3-numpy)"
		if os.Getenv("VERTEBRAE_REQUIRE_PYTHON") == "1" {
			t.Fatal(msg + "; VERTEBRAE_REQUIRE_PYTHON=1")
		}
		t.Skip(msg)
	}
	var tried []string
	for _, p := range cands {
		out, err := exec.Command(p, "-c", "import json, numpy").CombinedOutput()
		if err == nil {
			return p
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		tried = append(tried, fmt.Sprintf("%s: %v: %s", p, err, lines[len(lines)-1]))
	}
	msg := fmt.Sprintf("no python3 with numpy for the worker template (Debian: apt-get install python3-numpy; or set VERTEBRAE_PYTHON):\n%s", strings.Join(tried, "\n"))
	if os.Getenv("VERTEBRAE_REQUIRE_PYTHON") == "1" {
		t.Fatal(msg + "\nVERTEBRAE_REQUIRE_PYTHON=1")
	}
	t.Skip(msg)
	return ""
}

// TestPythonWorkerTemplate runs the shipped template end to end, as is and
// with its encode function replaced.
func TestPythonWorkerTemplate(t *testing.T) {
	t.Parallel()
	python := findPython(t)
	const placeholder = `    return [[len(t), t.count("a"), len(t.split())] for t in texts]`
	if !strings.Contains(PythonWorkerTemplate, "def encode(texts):") || !strings.Contains(PythonWorkerTemplate, placeholder) ||
		!strings.Contains(PythonWorkerTemplate, "REPLACE ME") {
		t.Fatal("the template's encode function changed; update this test")
	}
	if n := strings.Count(strings.TrimSpace(PythonWorkerTemplate), "\n") + 1; n > 25 {
		t.Errorf("the template has %d lines; keep it short", n)
	}
	texts := []string{"a cat", "", "banana bread", "naïve café ☕", "  spaced   out  ", `quote " and \ backslash`, "tab\tand\nnewline", "aaaa"}
	cases := []struct {
		name   string
		encode string // replaces the placeholder; "" keeps it
		want   []string
		is     error
	}{
		{name: "template"},
		{name: "model fails", encode: `    raise RuntimeError("model not loaded")`, want: []string{"batch 0: worker reported an error: RuntimeError: model not loaded"}, is: ErrWorkerReply},
		{name: "NaN from the model", encode: `    return np.full((len(texts), 4), np.nan)`, want: []string{"batch 0: worker reported an error: ValueError: Out of range float values are not JSON compliant"}, is: ErrWorkerReply},
		{name: "wrong count", encode: `    return [[1.0, 2.0]]`, want: []string{"batch 0: returned 1 embeddings for 3 rows"}},
		{name: "crash", encode: `    sys.exit("out of memory")`, want: []string{"batch 0: the program exited: exit status 1 before answering", "out of memory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := PythonWorkerTemplate
			if c.encode != "" {
				src = strings.Replace(src, placeholder, c.encode, 1)
			}
			script := filepath.Join(t.TempDir(), "worker.py")
			if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			e, err := New(Config{Name: "py", Argv: []string{python, script}, Modality: "text", Persistent: true, BatchSize: 3, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for _, side := range []string{"query", "gallery"} {
				m, err := e.Encode(context.Background(), side, 0, textItems(side[:1], texts...))
				if len(c.want) > 0 {
					if err == nil {
						t.Fatal("no error")
					}
					for _, w := range c.want {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("error lacks %q:\n%v", w, err)
						}
					}
					if c.is != nil && !errors.Is(err, c.is) {
						t.Errorf("error does not wrap %v: %v", c.is, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := make([][]float64, len(texts))
				for i, s := range texts {
					// Python's len counts code points and split() splits
					// on whitespace runs, like strings.Fields here.
					want[i] = []float64{float64(len([]rune(s))), float64(strings.Count(s, "a")), float64(len(strings.Fields(s)))}
				}
				checkRows(t, m, want)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseReply(t *testing.T) {
	t.Parallel()
	ids := []string{"a", "b"}
	m, err := parseReply([]byte(` {"batch": 3, "id": "ignored", "embeddings": [[1, -0.5e1], {"index": 8, "embedding": [1e-400, 3]}]}`+"\r\n"), 3, from(7), ids)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Float64Data(); m.Rows() != 2 || m.Cols() != 2 || got[0] != 1 || got[1] != -5 || got[2] != 0 || got[3] != 3 {
		t.Errorf("got %v", got)
	}
	cases := []struct {
		line string
		want string
		is   error
	}{
		{`[[1, 2], [3, 4]]`, "reply is not a JSON object", ErrMalformed},
		{``, "reply is not a JSON object", ErrMalformed},
		{`{"batch": 3, "embeddings": [[1, 2], [3, 4]]`, "unexpected end of JSON input", ErrMalformed},
		{`{"batch": 3, "embeddings": [[1, NaN], [3, 4]]}`, "NaN and Infinity are not JSON numbers", ErrMalformed},
		{`{"embeddings": [[1, 2], [3, 4]]}`, `reply has no "batch" field`, ErrMalformed},
		{`{"batch": 2, "embeddings": [[1, 2], [3, 4]]}`, "reply is for batch 2, expected 3", ErrMalformed},
		{`{"batch": "3", "embeddings": [[1, 2], [3, 4]]}`, `reply is for batch "3", expected 3`, ErrMalformed},
		{`{"batch": 3.5, "embeddings": [[1, 2], [3, 4]]}`, "reply is for batch 3.5", ErrMalformed},
		{`{"batch": 3, "error": "CUDA out of memory"}`, "worker reported an error: CUDA out of memory", ErrWorkerReply},
		{`{"batch": 3, "error": {"code": 7}, "embeddings": [[1, 2], [3, 4]]}`, `worker reported an error: {"code": 7}`, ErrWorkerReply},
		{`{"batch": 3, "error": null}`, `reply has neither "embeddings" nor "error"`, ErrMalformed},
		{`{"batch": 3, "embeddings": null}`, `"embeddings" must be an array of rows; got null`, ErrMalformed},
		{`{"batch": 3, "embeddings": [[1, 2]]}`, "returned 1 embeddings for 2 rows", nil},
		{`{"batch": 3, "embeddings": [[1, 2], [3, 4], [5, 6]]}`, "returned 3 embeddings for 2 rows", nil},
		{`{"batch": 3, "embeddings": [[1, 2], [3]]}`, "embeddings[1]: malformed output: ragged rows: 1 values, row 0 has 2", ErrMalformed},
		{`{"batch": 3, "embeddings": [[1, 2], []]}`, "embeddings[1]: malformed output: empty embedding", ErrMalformed},
		{`{"batch": 3, "embeddings": [[1, 2], [3, 1e999]]}`, `embeddings[1]: row 8 (ID "b") must contain only finite numeric values; column 1 (1e999) overflows float64`, nil},
		{`{"batch": 3, "embeddings": [[1, 2], [3, "4"]]}`, `embeddings[1]: malformed output: column 1 is not a number: "4"`, ErrMalformed},
		{`{"batch": 3, "embeddings": [[1, 2], {"index": 9, "embedding": [3, 4]}]}`, `"index" is 9, expected 8`, ErrMalformed},
	}
	for _, c := range cases {
		_, err := parseReply([]byte(c.line), 3, from(7), ids)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want %q, got %v", c.line, c.want, err)
			continue
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: error does not wrap %v: %v", c.line, c.is, err)
		}
	}
	long := `{"batch": 3, "error": "` + strings.Repeat("x", 10000) + `"}`
	if _, err := parseReply([]byte(long), 3, from(0), ids); err == nil || len(err.Error()) > maxReplyError+100 {
		t.Errorf("long error message not clipped: %d bytes", len(err.Error()))
	}
}

func FuzzParseReply(f *testing.F) {
	f.Add([]byte(`{"batch": 0, "embeddings": [[1, 2], [3, 4]]}`), 0, 2)
	f.Add([]byte(`{"batch": 1, "embeddings": [[1], {"embedding": [2]}, [3]]}`), 1, 3)
	f.Add([]byte(`{"batch": 2, "error": "boom"}`), 2, 1)
	f.Add([]byte(`{"batch": 0, "embeddings": [[1e400]]}`), 0, 1)
	f.Add([]byte(`{"batch":0,"embeddings":[[NaN]]}`), 0, 1)
	f.Fuzz(func(t *testing.T, line []byte, n, rows int) {
		if rows < 0 || rows > 64 {
			return
		}
		ids := make([]string, rows)
		for i := range ids {
			ids[i] = "id" + strconv.Itoa(i)
		}
		m, err := parseReply(line, n, from(5), ids)
		if err != nil {
			if m != nil {
				t.Fatal("matrix and error")
			}
			return
		}
		if m.Rows() != rows || rows > 0 && m.Cols() == 0 {
			t.Fatalf("shape (%d, %d) for %d rows", m.Rows(), m.Cols(), rows)
		}
		if _, _, bad := matrix.FirstNonFinite(m); bad {
			t.Fatal("non-finite value accepted")
		}
	})
}
