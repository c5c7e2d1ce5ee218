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
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

var (
	embedderPath string // built by TestMain
	embedderErr  error  // build failure other than a missing toolchain
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "command-embedder-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	embedderPath, embedderErr = buildEmbedder(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// goTool finds the toolchain running the tests, then any go on PATH.
func goTool() string {
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"+exe); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// buildEmbedder returns "" and no error when there is no toolchain.
func buildEmbedder(dir string) (string, error) {
	goBin := goTool()
	if goBin == "" {
		return "", nil
	}
	out := filepath.Join(dir, "embedder")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	cmd := exec.Command(goBin, "build", "-o", out, "./testdata/embedder")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./testdata/embedder: %w\n%s", err, msg)
	}
	return out, nil
}

func embedder(t *testing.T) string {
	t.Helper()
	if embedderErr != nil {
		t.Fatal(embedderErr)
	}
	if embedderPath == "" {
		t.Skip("no Go toolchain to build the test embedder")
	}
	return embedderPath
}

// newExtractor builds an extractor running the embedder with flags.
func newExtractor(t *testing.T, cfg Config, flags ...string) *Extractor {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "emb"
	}
	cfg.Argv = append([]string{embedder(t)}, flags...)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func textItems(prefix string, texts ...string) []Item {
	items := make([]Item, len(texts))
	for i, s := range texts {
		items[i] = Item{ID: prefix + strconv.Itoa(i), Text: s}
	}
	return items
}

// textVector mirrors the embedder's vector for a text at endpoint index.
func textVector(s string, index int) []float64 {
	n := float64(len([]rune(s)))
	return []float64{
		float64(strings.Count(s, "a")), float64(strings.Count(s, "b")), float64(strings.Count(s, "c")),
		n, float64(index) + 0.25, n / 3,
	}
}

// checkRows compares m with want exactly (after rounding want to m's dtype).
func checkRows(t *testing.T, m *matrix.Dense, want [][]float64) {
	t.Helper()
	if m.Rows() != len(want) || m.Cols() != len(want[0]) {
		t.Fatalf("shape (%d, %d), want (%d, %d)", m.Rows(), m.Cols(), len(want), len(want[0]))
	}
	for i, row := range want {
		for j, w := range row {
			if m.DType() == matrix.Float32 {
				w = float64(float32(w))
			}
			if got := m.At(i, j); got != w {
				t.Errorf("row %d col %d = %v, want %v", i, j, got, w)
			}
		}
	}
}

// readRecords parses the embedder's -record file, one entry per process.
type record struct {
	Args  []string          `json:"args"`
	Cwd   string            `json:"cwd"`
	Stdin []string          `json:"stdin"`
	Env   map[string]string `json:"env"`
}

func readRecords(t *testing.T, path string) []record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []record
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return recs
}

func TestEncodeJSONL(t *testing.T) {
	dir := t.TempDir()
	recPath := filepath.Join(dir, "rec.jsonl")
	work := t.TempDir()
	e := newExtractor(t, Config{Dir: work, Env: []string{"EMBEDDER_TOKEN=s3cret"}}, "-record", recPath)
	texts := []string{"abc", "banana", "", "cab <&> é"}
	m, err := e.Encode(context.Background(), "query", 10, textItems("q", texts...))
	if err != nil {
		t.Fatal(err)
	}
	if m.DType() != matrix.Float64 {
		t.Errorf("dtype %v, want float64", m.DType())
	}
	want := make([][]float64, len(texts))
	for i, s := range texts {
		want[i] = textVector(s, 10+i)
	}
	checkRows(t, m, want)

	recs := readRecords(t, recPath)
	if len(recs) != 1 {
		t.Fatalf("%d processes, want 1", len(recs))
	}
	r := recs[0]
	wantEnv := map[string]string{
		"VERTEBRAE_SIDE": "query", "VERTEBRAE_BRANCH": "default", "VERTEBRAE_MODALITY": "text", "EMBEDDER_TOKEN": "s3cret",
	}
	for k, v := range wantEnv {
		if r.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, r.Env[k], v)
		}
	}
	if real, _ := filepath.EvalSymlinks(work); r.Cwd != work && r.Cwd != real {
		t.Errorf("cwd %q, want %q", r.Cwd, work)
	}
	wantStdin := []string{
		`{"index":10,"id":"q0","side":"query","modality":"text","value":"abc","text":"abc"}`,
		`{"index":11,"id":"q1","side":"query","modality":"text","value":"banana","text":"banana"}`,
		`{"index":12,"id":"q2","side":"query","modality":"text","value":"","text":""}`,
		`{"index":13,"id":"q3","side":"query","modality":"text","value":"cab <&> é","text":"cab <&> é"}`,
	}
	if strings.Join(r.Stdin, "\n") != strings.Join(wantStdin, "\n") {
		t.Errorf("stdin:\n%s\nwant:\n%s", strings.Join(r.Stdin, "\n"), strings.Join(wantStdin, "\n"))
	}
}

func TestEncodeOutputFormats(t *testing.T) {
	texts := []string{"aab", "ccc", "abcabc"}
	want := make([][]float64, len(texts))
	for i, s := range texts {
		want[i] = textVector(s, 3+i)
	}
	cases := []struct {
		name   string
		output string
		flags  []string
		dtype  matrix.DType
	}{
		{"object lines", "", []string{"-format", "object"}, matrix.Float64},
		{"declared jsonl", OutputJSONL, nil, matrix.Float64},
		{"auto npy f8", "", []string{"-format", "npy"}, matrix.Float64},
		{"auto npy f4", OutputAuto, []string{"-format", "npy", "-dtype", "f4"}, matrix.Float32},
		{"declared npy f4", OutputNPY, []string{"-format", "npy", "-dtype", "f4"}, matrix.Float32},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newExtractor(t, Config{Output: c.output}, c.flags...)
			m, err := e.Encode(context.Background(), "gallery", 3, textItems("g", texts...))
			if err != nil {
				t.Fatal(err)
			}
			if m.DType() != c.dtype {
				t.Errorf("dtype %v, want %v", m.DType(), c.dtype)
			}
			checkRows(t, m, want)
		})
	}
}

func TestEncodeSplitsIntoBatches(t *testing.T) {
	recPath := filepath.Join(t.TempDir(), "rec.jsonl")
	for _, format := range []string{"jsonl", "npy"} {
		t.Run(format, func(t *testing.T) {
			os.Remove(recPath)
			e := newExtractor(t, Config{BatchSize: 2}, "-format", format, "-record", recPath)
			texts := []string{"a", "bb", "ccc", "abab", "cabbage"}
			m, err := e.Encode(context.Background(), "gallery", 100, textItems("g", texts...))
			if err != nil {
				t.Fatal(err)
			}
			want := make([][]float64, len(texts))
			for i, s := range texts {
				want[i] = textVector(s, 100+i)
			}
			checkRows(t, m, want)
			recs := readRecords(t, recPath)
			if len(recs) != 3 {
				t.Fatalf("%d processes, want 3 (batches of 2 over 5 rows)", len(recs))
			}
			for i, n := range []int{2, 2, 1} {
				if len(recs[i].Stdin) != n {
					t.Errorf("process %d got %d rows, want %d", i, len(recs[i].Stdin), n)
				}
			}
		})
	}
}

func TestEncodeImagePathsAndVectors(t *testing.T) {
	recPath := filepath.Join(t.TempDir(), "rec.jsonl")
	e := newExtractor(t, Config{Dir: t.TempDir()}, "-record", recPath)
	items := []Item{{ID: "i0", Path: "img/cab.png"}, {ID: "i1", Path: "/abs/banana.jpg"}}
	m, err := e.Encode(context.Background(), "gallery", 0, items)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m, [][]float64{textVector("cab.png", 0), textVector("banana.jpg", 1)})
	abs, err := filepath.Abs("img/cab.png")
	if err != nil {
		t.Fatal(err)
	}
	r := readRecords(t, recPath)[0]
	want, _ := json.Marshal(map[string]any{"index": 0, "id": "i0", "side": "gallery", "modality": "image", "value": abs, "path": abs})
	var got, wantMap map[string]any
	json.Unmarshal([]byte(r.Stdin[0]), &got)
	json.Unmarshal(want, &wantMap)
	if fmt.Sprint(got) != fmt.Sprint(wantMap) {
		t.Errorf("stdin row %s, want %s", r.Stdin[0], want)
	}
	if r.Env["VERTEBRAE_MODALITY"] != "image" {
		t.Errorf("VERTEBRAE_MODALITY %q, want image", r.Env["VERTEBRAE_MODALITY"])
	}

	m, err = e.Encode(context.Background(), "query", 7, []Item{{ID: "v", Vector: []float64{0.5, 1.5, -3}}})
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m, [][]float64{{-1, 3, 7.25}})
}

func TestEncodeBranch(t *testing.T) {
	recPath := filepath.Join(t.TempDir(), "rec.jsonl")
	e := newExtractor(t, Config{Branches: map[string]string{"text_branch": "text", "image_branch": "image"}}, "-record", recPath)
	if _, err := e.Encode(context.Background(), "query", 0, textItems("q", "a")); err == nil || !strings.Contains(err.Error(), "EncodeBranch") {
		t.Errorf("Encode on a branch encoder: %v", err)
	}
	if _, err := e.EncodeBranch(context.Background(), "audio", "query", 0, textItems("q", "a")); err == nil || !strings.Contains(err.Error(), `no branch "audio"`) {
		t.Errorf("unknown branch: %v", err)
	}
	m, err := e.EncodeBranch(context.Background(), "text_branch", "query", 0, textItems("q", "abc"))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, m, [][]float64{textVector("abc", 0)})
	if r := readRecords(t, recPath)[0]; r.Env["VERTEBRAE_BRANCH"] != "text_branch" || r.Env["VERTEBRAE_MODALITY"] != "text" {
		t.Errorf("env %v", r.Env)
	}
	_, err = e.EncodeBranch(context.Background(), "image_branch", "gallery", 0, textItems("g", "abc"))
	if err == nil || !strings.Contains(err.Error(), "image item has no path") || !strings.Contains(err.Error(), `(branch "image_branch")`) {
		t.Errorf("text item on image branch: %v", err)
	}

	plain := newExtractor(t, Config{})
	if _, err := plain.EncodeBranch(context.Background(), "text_branch", "query", 0, textItems("q", "a")); err == nil || !strings.Contains(err.Error(), "does not support branches") {
		t.Errorf("EncodeBranch without branches: %v", err)
	}
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		flags   []string
		want    []string
		notWant []string
		is      error
	}{
		{
			name:  "exit status and stderr tail",
			flags: []string{"-fail"},
			want: []string{`command extractor "emb"`, "query rows [4, 7)", "exit status 3",
				"fatal: model exploded", "noise line 81", "noise line 99", "stderr (last lines):"},
			notWant: []string{"noise line 80"},
		},
		{
			name:  "stderr bounded",
			flags: []string{"-big-stderr"},
			want:  []string{"query rows [4, 7)", "exit status 3", "xxxx"},
		},
		{name: "too many rows", flags: []string{"-rows-delta", "1"}, want: []string{"query rows [4, 7)", "returned 4 embeddings for 3 rows"}},
		{name: "too few rows", flags: []string{"-rows-delta", "-1"}, want: []string{"returned 2 embeddings for 3 rows"}},
		{name: "no rows npy", flags: []string{"-rows-delta", "-3", "-format", "npy"}, want: []string{"returned 0 embeddings for 3 rows"}},
		{name: "too many rows npy", flags: []string{"-rows-delta", "2", "-format", "npy"}, want: []string{"returned 5 embeddings for 3 rows"}},
		{
			name: "malformed line", flags: []string{"-malformed-line", "2"},
			want: []string{`command extractor "emb": query rows [4, 7): output line 2: malformed output`}, is: ErrMalformed,
		},
		{
			name: "NaN string in JSON", flags: []string{"-nan-row", "1"},
			want: []string{"query rows [4, 7)", "output line 2", "malformed output", `column 1 is not a number: "NaN"`}, is: ErrMalformed,
		},
		{
			name: "NaN in npy", flags: []string{"-nan-row", "2", "-format", "npy", "-dtype", "f4"},
			want: []string{"query rows [4, 7)", `row 6 (ID "q2") must contain only finite numeric values; column 1 is NaN`},
		},
		{name: "ragged", flags: []string{"-ragged-row", "1"}, want: []string{"output line 2", "ragged rows: 5 values, line 1 has 6"}, is: ErrMalformed},
		{
			name: "out of order object", flags: []string{"-format", "object", "-swap-index"},
			want: []string{"output line 1", `"index" is 5, expected 4`}, is: ErrMalformed,
		},
		{name: "trailing bytes after npy", flags: []string{"-format", "npy", "-trailing"}, want: []string{"stdout: trailing bytes after the npy data", "(5 more)"}, is: ErrMalformed},
		{name: "npy expected", cfg: Config{Output: OutputNPY}, want: []string{"stdout is not a .npy stream"}, is: ErrMalformed},
		{name: "jsonl expected", cfg: Config{Output: OutputJSONL}, flags: []string{"-format", "npy"}, want: []string{"stdout is a .npy stream"}, is: ErrMalformed},
		{
			name: "timeout", cfg: Config{Timeout: 200 * time.Millisecond}, flags: []string{"-sleep", "1h"},
			want: []string{"query rows [4, 7)", "timed out after 200ms"}, is: ErrTimeout,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newExtractor(t, c.cfg, c.flags...)
			begin := time.Now()
			_, err := e.Encode(context.Background(), "query", 4, textItems("q", "ab", "bc", "ca"))
			if err == nil {
				t.Fatal("no error")
			}
			if d := time.Since(begin); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			msg := err.Error()
			t.Log(msg)
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("error has %q:\n%s", w, msg)
				}
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error does not wrap %v: %v", c.is, err)
			}
			if len(msg) > 3000 {
				t.Errorf("error is %d bytes long; stderr must be bounded", len(msg))
			}
		})
	}
}

func TestExitErrorUnwraps(t *testing.T) {
	e := newExtractor(t, Config{}, "-fail")
	_, err := e.Encode(context.Background(), "gallery", 0, textItems("g", "a"))
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Fatalf("want *exec.ExitError with code 3, got %v", err)
	}
}

// TestProgramIgnoringStdin checks that a program exiting before reading its
// (larger than a pipe buffer) input is reported by its output, not as a
// broken pipe.
func TestProgramIgnoringStdin(t *testing.T) {
	e := newExtractor(t, Config{BatchSize: 5000}, "-no-read")
	texts := make([]string, 5000)
	for i := range texts {
		texts[i] = strings.Repeat("abc", 100)
	}
	_, err := e.Encode(context.Background(), "gallery", 0, textItems("g", texts...))
	if err == nil || !strings.Contains(err.Error(), "gallery rows [0, 5000): returned 0 embeddings for 5000 rows") {
		t.Fatalf("got %v", err)
	}
}

func TestMissingProgram(t *testing.T) {
	e, err := New(Config{Name: "gone", Argv: []string{filepath.Join(t.TempDir(), "no-such-program")}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Encode(context.Background(), "query", 0, textItems("q", "a"))
	if err == nil || !strings.Contains(err.Error(), `command extractor "gone": query rows [0, 1): cannot run`) {
		t.Fatalf("got %v", err)
	}
}

func TestCancelKillsProcess(t *testing.T) {
	e := newExtractor(t, Config{}, "-sleep", "1h")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	begin := time.Now()
	_, err := e.Encode(ctx, "query", 0, textItems("q", "a"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("cancellation took %v", d)
	}
	if _, err := e.Encode(ctx, "query", 0, textItems("q", "a")); !errors.Is(err, context.Canceled) {
		t.Errorf("already canceled: %v", err)
	}
}

// TestTimeoutKillsHelpers runs a program whose helper shares stdout: killing
// only the program would leave the pipe open until WaitDelay.
func TestTimeoutKillsHelpers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	e := newExtractor(t, Config{Timeout: 500 * time.Millisecond}, "-spawn", "-pidfile", pidFile)
	begin := time.Now()
	_, err := e.Encode(context.Background(), "gallery", 0, textItems("g", "a"))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("want timeout, got %v", err)
	}
	d := time.Since(begin)
	limit := 5 * time.Second
	if runtime.GOOS != "windows" && runtime.GOOS != "plan9" {
		limit = waitDelay // the process group is killed at once
	}
	if d >= limit {
		t.Errorf("timeout took %v", d)
	}
	if runtime.GOOS != "linux" {
		return
	}
	for _, f := range []string{pidFile, pidFile + ".child"} {
		pid, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Dead: gone, or a zombie waiting for a reaper.
		deadline := time.Now().Add(5 * time.Second)
		for {
			stat, err := os.ReadFile("/proc/" + string(pid) + "/stat")
			if err != nil || procState(string(stat)) == "Z" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("process %s from %s still running", pid, filepath.Base(f))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// procState extracts the state field from /proc/<pid>/stat ("pid (comm) S ...").
func procState(stat string) string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return ""
	}
	return stat[i+2 : i+3]
}

func TestEncodeInputChecks(t *testing.T) {
	e := newExtractor(t, Config{})
	ctx := context.Background()
	m, err := e.Encode(ctx, "query", 0, nil)
	if err != nil || m.Rows() != 0 || m.Cols() != 0 {
		t.Errorf("empty batch: %v, %v", m, err)
	}
	checks := []struct {
		side  string
		start int
		items []Item
		want  string
	}{
		{"both", 0, textItems("q", "a"), `side must be "query" or "gallery"`},
		{"query", -1, textItems("q", "a"), "negative start row -1"},
		{"query", 0, []Item{{ID: "bad", Text: "\xff"}}, `input row 0 (ID "bad"): ID, text or path is not valid UTF-8`},
		{"query", 0, []Item{{ID: "t", Text: "a"}, {ID: "p", Path: "x.png"}}, `input row 1 (ID "p"): modality image differs from the batch's text`},
		{"query", 0, []Item{{ID: "nan", Vector: []float64{math.NaN()}}}, `input row 0 (ID "nan"): cannot encode as JSON`},
	}
	for _, c := range checks {
		if _, err := e.Encode(ctx, c.side, c.start, c.items); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
	img := newExtractor(t, Config{Modality: "image"})
	if _, err := img.Encode(ctx, "gallery", 0, textItems("g", "a")); err == nil || !strings.Contains(err.Error(), "image item has no path") {
		t.Errorf("text item for image modality: %v", err)
	}
}

func TestNewValidation(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Argv: []string{"x"}}, "name must not be blank"},
		{Config{Name: "a"}, "command must name a program"},
		{Config{Name: "a", Argv: []string{""}}, "command must name a program"},
		{Config{Name: "a", Argv: []string{"x", "a\x00b"}}, "NUL byte"},
		{Config{Name: "a", Argv: []string{"x"}, Output: "csv"}, `unknown output format "csv"`},
		{Config{Name: "a", Argv: []string{"x"}, BatchSize: -1}, "batch_size must be >= 1"},
		{Config{Name: "a", Argv: []string{"x"}, Timeout: -time.Second}, "timeout must not be negative"},
		{Config{Name: "a", Argv: []string{"x"}, Env: []string{"NOEQUALS"}}, `env entry "NOEQUALS" is not KEY=VALUE`},
		{Config{Name: "a", Argv: []string{"x"}, Env: []string{"=v"}}, "is not KEY=VALUE"},
		{Config{Name: "a", Argv: []string{"x"}, Branches: map[string]string{"b": ""}}, "non-blank names and modalities"},
	}
	for _, c := range cases {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: want %q, got %v", c.cfg, c.want, err)
		}
	}
}

func TestRecipe(t *testing.T) {
	argv := []string{"python", "embed.py", "--model", "m"}
	e, err := New(Config{Name: "py", Argv: argv, Env: []string{"HF_TOKEN=hunter2", "A=1", "A=2"}, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	argv[1] = "changed.py" // New copied the slice
	got, err := json.Marshal(e.Recipe())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"argv":["python","embed.py","--model","m"],"batch_size":64,"branches":null,"cache_identity":null,` +
		`"cache_safe":false,"dir":null,"env_names":["A","HF_TOKEN"],"extractor_type":"command","modality":null,` +
		`"name":"py","output":"auto","path_identities":null,"streaming_safe":true}`
	if string(got) != want {
		t.Errorf("recipe\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(string(got), "hunter2") {
		t.Error("recipe leaks an env value")
	}
	if _, err := canonjson.Hash(e.Recipe()); err != nil {
		t.Errorf("recipe is not hashable: %v", err)
	}

	e, err = New(Config{
		Name: "py", Argv: []string{"run"}, Output: OutputNPY, BatchSize: 8, Modality: "text", Dir: "/m",
		Branches: map[string]string{"q": "text"}, BatchDependent: true, CacheIdentity: "e5-base@v2",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := e.Recipe()
	if r["cache_safe"] != true || r["cache_identity"] != "e5-base@v2" || r["output"] != "npy" || r["batch_size"] != 8 ||
		r["streaming_safe"] != false || r["dir"] != "/m" || r["modality"] != "text" {
		t.Errorf("recipe %v", r)
	}
	if e.StreamingSafe() || e.Type() != "command" || e.Name() != "py" || e.Modality() != "text" || e.BatchSize() != 8 {
		t.Error("accessors disagree with the config")
	}
	if _, err := canonjson.Hash(r); err != nil {
		t.Errorf("recipe is not hashable: %v", err)
	}
	if e, _ := New(Config{Name: "x", Argv: []string{"x"}, CacheIdentity: "  "}); e.Recipe()["cache_safe"] != false {
		t.Error("blank cache_identity made the recipe cache-safe")
	}
}
