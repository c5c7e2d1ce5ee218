//go:build unix

package cli

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

// embed-shard uploading to a real S3-compatible server process that is
// stopped (SIGSTOP) in the middle of the upload: with short store
// timeouts it fails (exit 1) in bounded time naming the endpoint and the
// stall; with the default ones Ctrl-C ends it with exit 130 within a
// second; either way the re-run after the server resumes succeeds. A
// normal run against the server prints nothing on stderr (no SDK log
// lines).
func TestEmbedShardOnStalledS3(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts an S3 server process")
	}
	srv := storetest.StartS3Process(t)
	dir := t.TempDir()
	bin := cliBinary(t)
	const rows, cols = 200_000, 64 // 51 MB of float32: a multipart upload
	rng := rand.New(rand.NewPCG(3, 1))
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = rng.Float32() + 0.1
	}
	g, _ := matrix.NewDense32(rows, cols, v)
	writeMatrix(t, dir, "g.npy", g)
	writeNPY(t, dir, "q.npy", [][]float64{make([]float64, cols)})
	writeFile(t, dir, "ql.txt", "a\n")
	writeFile(t, dir, "gl.txt", strings.Repeat("a\n", rows))
	spec := writeFile(t, dir, "run.yaml", `version: 1
dataset:
  id: stall
  revision: "1"
  queries: {path: q.npy}
  gallery: {path: g.npy}
  labels: {queries: ql.txt, gallery: gl.txt}
extractors:
  - {name: tables, type: precomputed}
`)
	planPath := filepath.Join(dir, "plan.json")
	if code, _, stderr := run(t, "retrieval", "plan", "--spec", spec, "--store", srv.URI, "--output-json", planPath); code != 0 {
		t.Fatal(stderr)
	}
	shardArgs := func(uri string) []string {
		return []string{"retrieval", "embed-shard", "--plan", planPath, "--extractor", "tables", "--side", "gallery", "--shard-index", "0", "--store", uri}
	}
	// start runs the CLI and stops the server once it has received 1 MB
	// of the upload.
	start := func(uri string) (*exec.Cmd, chan error, *bytes.Buffer) {
		t.Helper()
		cmd := exec.Command(bin, shardArgs(uri)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		base, err := processIO(srv.Pid())
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		deadline := time.Now().Add(60 * time.Second)
		for {
			if n, err := processIO(srv.Pid()); err == nil && n-base > 1<<20 {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("embed-shard ended before the upload was seen (%v): %s", err, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the upload did not start within 60 s")
			}
			time.Sleep(time.Millisecond)
		}
		srv.Stop()
		return cmd, done, &stderr
	}
	wait := func(done chan error, limit time.Duration) (int, time.Duration) {
		t.Helper()
		t0 := time.Now()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if err == nil {
				return 0, time.Since(t0)
			}
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			return ee.ExitCode(), time.Since(t0)
		case <-time.After(limit):
			t.Fatalf("still running %v later", limit)
		}
		return 0, 0
	}
	noDump := func(stderr string) {
		t.Helper()
		for _, bad := range []string{"goroutine ", "panic:", "WARN", "DEBUG", "SDK "} {
			if strings.Contains(stderr, bad) {
				t.Errorf("stderr holds %q:\n%s", bad, stderr)
			}
		}
	}

	t.Run("timeouts", func(t *testing.T) {
		cmd, done, stderr := start(srv.URI + "&idle_timeout=1s&timeout=2s&max_attempts=2&max_backoff=100ms")
		defer cmd.Process.Kill()
		code, took := wait(done, 60*time.Second)
		srv.Continue()
		t.Logf("exit %d %v after the server stopped: %s", code, took.Round(time.Millisecond), stderr.String())
		if code != ExitFailure {
			t.Errorf("exit %d, want %d", code, ExitFailure)
		}
		for _, want := range []string{srv.Endpoint, "idle_timeout=1s", "shards/"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr does not name %q", want)
			}
		}
		noDump(stderr.String())
	})
	t.Run("interrupt", func(t *testing.T) {
		cmd, done, stderr := start(srv.URI)
		defer cmd.Process.Kill()
		time.Sleep(500 * time.Millisecond) // blocked on the stopped server
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		code, took := wait(done, 30*time.Second)
		srv.Continue()
		t.Logf("exit %d %v after SIGINT: %s", code, took.Round(time.Millisecond), stderr.String())
		if code != ExitInterrupted {
			t.Errorf("exit %d, want %d", code, ExitInterrupted)
		}
		if took > time.Second {
			t.Errorf("exit %v after SIGINT, want within 1 s", took)
		}
		noDump(stderr.String())
	})
	t.Run("rerun", func(t *testing.T) {
		cmd := exec.Command(bin, shardArgs(srv.URI)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("re-run after the server resumed: %v\n%s", err, stderr.String())
		}
		noDump(stderr.String())
		if stderr.Len() != 0 {
			t.Errorf("a successful run printed on stderr:\n%s", stderr.String())
		}
	})
}

var ioCounterLine = regexp.MustCompile(`(?m)^[rw]char: (\d+)$`)

// processIO is the number of bytes process pid has read plus written
// through system calls (rchar + wchar of Linux /proc/PID/io).
func processIO(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, m := range ioCounterLine.FindAllSubmatch(data, -1) {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		total += n
	}
	return total, nil
}
