//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store/local"
)

// interruptBudget is how long a command may take to exit after SIGINT,
// process teardown included (SPEC §6.1: exit 130).
const interruptBudget = time.Second

// interruptCase is a long command and where it leaves its outputs.
type interruptCase struct {
	name string
	// setup writes the fixture into dir and returns the command line (run
	// in dir) and root, the directory that holds every output the command
	// writes ("" for stdout only). root exists and is empty before a run.
	setup func(t *testing.T, dir string) (args []string, root string)
	// isTemp names the command's staging files under root; with it the
	// case is also interrupted while the largest output is written and
	// while it is synced.
	isTemp func(name string) bool
}

// SIGINT anywhere in a long command ends it with exit 130 within a second,
// without a stack trace, and leaves no output: every long loop checks the
// context, and large files are synced in interruptible steps. Each case
// runs once uninterrupted (its duration T and its largest output's size),
// then is interrupted at 20% and 60% of T and, where it stages files,
// while the largest one grows and once it is complete (being synced).
func TestInterruptExitsPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and writes several GB")
	}
	bin := cliBinary(t)
	outputTemp := func(name string) bool { return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-") }
	cases := []interruptCase{
		{
			// One class: every (query, gallery) pair is relevant, so the
			// label-derived qrels are 200 × 100,000 lines (~0.3 GB) from
			// inputs of a few MB.
			name: "run --write-qrels",
			setup: func(t *testing.T, dir string) ([]string, string) {
				writeTable(t, dir, "q.npy", 200, 4, 1)
				writeTable(t, dir, "g.npy", 100_000, 4, 2)
				writeFile(t, dir, "ql.txt", strings.Repeat("a\n", 200))
				writeFile(t, dir, "gl.txt", strings.Repeat("a\n", 100_000))
				return []string{"retrieval", "run", "--queries", "q.npy", "--gallery", "g.npy",
					"--query-labels", "ql.txt", "--gallery-labels", "gl.txt", "--quiet",
					"--write-qrels", filepath.Join("out", "rel.qrels"), "--json", filepath.Join("out", "report.json")}, "out"
			},
			isTemp: outputTemp,
		},
		{
			// A local embed-shard of a 250,000-row precomputed gallery
			// (128 MB): loading, encoding, the store upload and its sync.
			name: "embed-shard",
			setup: func(t *testing.T, dir string) ([]string, string) {
				const rows, cols = 250_000, 128
				writeTable(t, dir, "g.npy", rows, cols, 2)
				writeTable(t, dir, "q.npy", 1, cols, 1)
				writeFile(t, dir, "ql.txt", "a\n")
				writeFile(t, dir, "gl.txt", strings.Repeat("a\n", rows))
				spec := writeFile(t, dir, "run.yaml", `version: 1
dataset:
  id: interrupt
  revision: "1"
  queries: {path: q.npy}
  gallery: {path: g.npy}
  labels: {queries: ql.txt, gallery: gl.txt}
extractors:
  - {name: tables, type: precomputed}
`)
				storeDir := filepath.Join(dir, "store")
				planPath := filepath.Join(dir, "plan.json")
				if code, _, stderr := run(t, "retrieval", "plan", "--spec", spec, "--store", storeDir, "--output-json", planPath); code != 0 {
					t.Fatal(stderr)
				}
				return []string{"retrieval", "embed-shard", "--plan", planPath, "--extractor", "tables",
					"--side", "gallery", "--shard-index", "0", "--store", storeDir}, "store"
			},
			isTemp: func(name string) bool { return strings.HasPrefix(name, local.TempPrefix) },
		},
		{
			// Synthetic data, scoring and the FMA calibration.
			name: "bench",
			setup: func(t *testing.T, dir string) ([]string, string) {
				return []string{"bench", "--queries", "2048", "--gallery", "32768", "--dim", "768", "--calibrate", "1s"}, ""
			},
		},
		{
			// Synthetic data written as a 128 MB gallery file.
			name: "bench --write",
			setup: func(t *testing.T, dir string) ([]string, string) {
				return []string{"bench", "--queries", "1000", "--gallery", "250000", "--dim", "128",
					"--storage", "float32", "--write", "out"}, "out"
			},
			isTemp: outputTemp,
		},
		{
			// Reading and preparing 2,000,000 qrels lines, then scoring a
			// run of as many lines.
			name: "evaluate-run",
			setup: func(t *testing.T, dir string) ([]string, string) {
				writeRunAndQrels(t, dir, 1000, 2000)
				return []string{"retrieval", "evaluate-run", "--run", "big.run", "--qrels", "big.qrels", "--quiet",
					"--json", filepath.Join("out", "report.json"), "--csv", filepath.Join("out", "per-query.csv")}, "out"
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args, root := c.setup(t, dir)
			rootPath := ""
			if root != "" {
				rootPath = filepath.Join(dir, root)
				if err := os.MkdirAll(rootPath, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// The uninterrupted run: its duration and largest output.
			start := time.Now()
			code, stderr := runToEnd(t, bin, dir, args)
			total := time.Since(start)
			if code != 0 {
				t.Fatalf("uninterrupted run: exit %d: %s", code, stderr)
			}
			var final int64
			if rootPath != "" {
				final = largestFile(t, rootPath)
				if err := os.RemoveAll(rootPath); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(rootPath, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("uninterrupted: %v, largest output %d bytes", total.Round(time.Millisecond), final)

			type phase struct {
				name  string
				ready func(elapsed time.Duration) bool
				// ended adjusts the phase to an attempt that ended before
				// it (a run faster than the uninterrupted one).
				ended func(runtime time.Duration)
				// optional: the phase may be too short to be seen on a
				// fast file system.
				optional bool
			}
			var phases []phase
			for _, f := range []float64{0.2, 0.6} {
				at := time.Duration(f * float64(total))
				phases = append(phases, phase{name: fmt.Sprintf("at %.0f%% of the run", 100*f),
					ready: func(elapsed time.Duration) bool { return elapsed >= at },
					ended: func(runtime time.Duration) { at = time.Duration(f * float64(runtime)) }})
			}
			if c.isTemp != nil && final > 4<<20 {
				var last int64
				phases = append(phases,
					phase{name: "writing the largest output", ready: func(time.Duration) bool {
						n := largestTemp(rootPath, c.isTemp)
						growing := n > last && n >= 1<<20 && n < final/2
						last = n
						return growing
					}},
					phase{name: "syncing the largest output", optional: true, ready: func(time.Duration) bool {
						return largestTemp(rootPath, c.isTemp) == final
					}})
			}
			for _, ph := range phases {
				observed := false
				for attempt := 0; attempt < 3 && !observed; attempt++ {
					var latency, after time.Duration
					var code int
					var stderr string
					latency, after, code, stderr, observed = interruptWhen(t, bin, dir, args, ph.ready)
					if !observed {
						t.Logf("%s: attempt %d finished (in %v) before the phase was seen", ph.name, attempt+1, after.Round(time.Millisecond))
						if ph.ended != nil {
							ph.ended(after)
						}
						removeAllIn(t, rootPath)
						continue
					}
					t.Logf("%s: SIGINT after %v, exit %d in %v", ph.name, after.Round(time.Millisecond), code, latency.Round(time.Millisecond))
					if code != ExitInterrupted {
						t.Errorf("%s: exit %d, want %d; stderr: %s", ph.name, code, ExitInterrupted, stderr)
					}
					if latency > interruptBudget {
						t.Errorf("%s: exited %v after SIGINT, want at most %v", ph.name, latency.Round(time.Millisecond), interruptBudget)
					}
					if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
						t.Errorf("%s: stack trace on stderr: %s", ph.name, stderr)
					} else if !strings.Contains(stderr, "interrupted") {
						t.Errorf("%s: stderr %q does not say interrupted", ph.name, stderr)
					}
					if left := filesUnder(rootPath); len(left) > 0 {
						t.Errorf("%s: the interrupted run left %v", ph.name, left)
						removeAllIn(t, rootPath)
					}
				}
				if !observed {
					if ph.optional {
						t.Logf("%s: never observed (too short here); not tested", ph.name)
						continue
					}
					t.Errorf("%s: never observed in 3 attempts", ph.name)
				}
			}
		})
	}
}

// runToEnd runs the command in dir without interrupting it (bounded by two
// minutes) and returns its exit code and stderr.
func runToEnd(t *testing.T, bin, dir string, args []string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not finish in two minutes", args)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// interruptWhen starts the command, polls ready (with the time since the
// start) and sends SIGINT once it holds. It returns the time from the
// signal until the process was reaped, when the signal was sent, the exit
// code and stderr; observed is false when the command ended first (after
// is then its run time). Every wait is bounded.
func interruptWhen(t *testing.T, bin, dir string, args []string, ready func(time.Duration) bool) (latency, after time.Duration, code int, stderr string, observed bool) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case <-done:
			return 0, time.Since(start), cmd.ProcessState.ExitCode(), errb.String(), false
		case <-deadline:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%v: neither finished nor reached the phase in two minutes", args)
		default:
		}
		if ready(time.Since(start)) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	after = time.Since(start)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		<-done // it ended between the poll and the signal
		return 0, time.Since(start), cmd.ProcessState.ExitCode(), errb.String(), false
	}
	sent := time.Now()
	select {
	case <-done:
		latency = time.Since(sent)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v: still running 30 s after SIGINT", args)
	}
	return latency, after, cmd.ProcessState.ExitCode(), errb.String(), true
}

// writeTable writes a rows×cols float32 .npy of positive pseudo-random
// values (a cheap LCG: fixture creation stays fast at hundreds of MB).
func writeTable(t *testing.T, dir, name string, rows, cols int, seed uint32) {
	t.Helper()
	v := make([]float32, rows*cols)
	x := seed
	for i := range v {
		x = x*1664525 + 1013904223
		v[i] = float32(x>>8)/(1<<24) + 0.1
	}
	m, err := matrix.NewDense32(rows, cols, v)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := npy.WriteDense(bw, m); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeRunAndQrels writes big.qrels (docs judgements per query, every
// third one relevant) and big.run (docs ranked lines per query).
func writeRunAndQrels(t *testing.T, dir string, queries, docs int) {
	t.Helper()
	write := func(name string, line func(q, d int) string) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		for q := range queries {
			for d := range docs {
				bw.WriteString(line(q, d))
			}
		}
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	grade := func(q, d int) int {
		if (q+d)%3 == 0 {
			return 1
		}
		return 0
	}
	write("big.qrels", func(q, d int) string {
		return "q" + strconv.Itoa(q) + " 0 d" + strconv.Itoa(d) + " " + strconv.Itoa(grade(q, d)) + "\n"
	})
	write("big.run", func(q, d int) string {
		doc := (d*7919 + q) % docs // a permutation of the documents per query
		return "q" + strconv.Itoa(q) + " Q0 d" + strconv.Itoa(doc) + " " + strconv.Itoa(d+1) + " " +
			strconv.Itoa(docs-d) + " sys\n"
	})
}

// largestFile is the size of the largest regular file below root.
func largestFile(t *testing.T, root string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil && info.Size() > n {
			n = info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// largestTemp is the size of the largest staging file below root (0 when
// there is none); files may vanish while it walks.
func largestTemp(root string, isTemp func(string) bool) int64 {
	var n int64
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !isTemp(d.Name()) {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() > n {
			n = info.Size()
		}
		return nil
	})
	return n
}

// filesUnder lists the regular files below root (directories a store made
// are no artifact; a file is).
func filesUnder(root string) []string {
	if root == "" {
		return nil
	}
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// removeAllIn empties root (after a run that completed).
func removeAllIn(t *testing.T, root string) {
	t.Helper()
	if root == "" {
		return
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
}
