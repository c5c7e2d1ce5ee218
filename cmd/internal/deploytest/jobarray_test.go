//go:build unix

package deploytest

// The simulated job array (issue #12, SPEC §11.4): the stage scripts of
// deploy/k8s run as a Kubernetes Indexed Job would run them, against a real
// S3-compatible server: every index of a stage is its own vertebrae process
// with JOB_COMPLETION_INDEX set, all of a stage at once; one embed shard, one
// positives stage and one score shard are killed with SIGKILL in the middle
// of their work and started again (what backoffLimitPerIndex does; a score
// shard tried before the positives retry must refuse naming the missing
// positives stage, and finalize, tried before the score retry, the missing
// partial); a finished score shard
// is re-run and must rewrite identical bytes; the report must then equal a
// local `retrieval run` on the same files. deploy/ci/jobarray.sh builds the
// binary and runs this test (.ci/run calls it with versitygw up).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/location"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

// EnvJobArrayBin names the vertebrae binary the simulation runs; without it
// the test is skipped, unless EnvRequireJobArray=1.
const (
	EnvJobArrayBin     = "VERTEBRAE_JOBARRAY_BIN"
	EnvRequireJobArray = "VERTEBRAE_REQUIRE_JOBARRAY"
)

// The data set: big enough that a shard still has megabytes to move and
// work to do after midShardIO (an embed shard uploads 5 MB, a score shard
// reads 16 MB and then scores), so it is caught mid-shard; small enough
// for a run of a few seconds.
const (
	simQueries = 1000
	simGallery = 20000
	simDim     = 192
	simShards  = 3
	simVictim  = 1         // the index that is killed
	midShardIO = 256 << 10 // bytes read or written through syscalls that show a shard is at work
)

type simProc struct {
	index          int
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
}

type simulation struct {
	t      *testing.T
	ctx    context.Context
	env    []string
	st     store.Store
	stages map[string]stage
}

func (s *simulation) start(st stage, index int) *simProc {
	p := &simProc{index: index, done: make(chan struct{})}
	p.cmd = exec.CommandContext(s.ctx, "/bin/sh", "-euc", strings.Join(st.script, "\n"))
	p.cmd.Env = append(append([]string(nil), s.env...), "JOB_COMPLETION_INDEX="+strconv.Itoa(index))
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		s.t.Fatalf("stage %s index %d: %v", st.name, index, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p
}

func (s *simulation) wait(st stage, p *simProc) {
	select {
	case <-p.done:
	case <-s.ctx.Done():
		s.t.Fatalf("stage %s index %d: still running at the deadline", st.name, p.index)
	}
	if p.err != nil {
		s.t.Fatalf("stage %s index %d: %v\nstdout: %s\nstderr: %s", st.name, p.index, p.err, p.stdout.String(), p.stderr.String())
	}
}

// startStage starts every index of a stage at once (the manifests'
// parallelism equals their completions).
func (s *simulation) startStage(name string, n int) (stage, []*simProc) {
	st, ok := s.stages[name]
	if !ok {
		s.t.Fatalf("no stage %s", name)
	}
	procs := make([]*simProc, n)
	for i := range procs {
		procs[i] = s.start(st, i)
	}
	return st, procs
}

// finishStage waits for a stage's processes. With victim >= 0 that index
// is first killed mid-shard (committed reports whether its output is
// already in the store), then, after the optional beforeRetry, started
// again.
func (s *simulation) finishStage(st stage, procs []*simProc, victim int, committed func() bool, beforeRetry ...func()) {
	if victim >= 0 {
		s.killMidShard(st, procs[victim], committed)
		for _, f := range beforeRetry {
			f()
		}
		procs[victim] = s.start(st, victim) // the retry of backoffLimitPerIndex
	}
	for _, p := range procs {
		s.wait(st, p)
	}
}

func (s *simulation) runStage(name string, n, victim int, committed func() bool) []*simProc {
	st, procs := s.startStage(name, n)
	s.finishStage(st, procs, victim, committed)
	return procs
}

// killMidShard waits until p has moved midShardIO bytes through read and
// write calls (the endpoints are memory-mapped, so for embed-shard this is
// the upload of its shard, for score the download of its inputs), stops it,
// checks that its output is not committed, and kills it with SIGKILL.
func (s *simulation) killMidShard(st stage, p *simProc, committed func() bool) {
	pid := p.cmd.Process.Pid
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.done:
			if p.err != nil {
				s.t.Fatalf("stage %s index %d: %v\nstderr: %s", st.name, p.index, p.err, p.stderr.String())
			}
			s.t.Fatalf("stage %s index %d finished before it could be killed mid-shard; the data set is too small for this machine", st.name, p.index)
		default:
		}
		if n, err := ioBytes(pid); err == nil && n >= midShardIO {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("stage %s index %d: did not start reading within 30 s", st.name, p.index)
		}
		time.Sleep(time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		s.t.Fatalf("SIGSTOP: %v", err)
	}
	if committed() {
		s.t.Fatalf("stage %s index %d: its output was committed before the kill; the data set is too small for this machine", st.name, p.index)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		s.t.Fatalf("SIGKILL: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		s.t.Fatalf("stage %s index %d: not dead 10 s after SIGKILL", st.name, p.index)
	}
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		s.t.Fatalf("stage %s index %d: want death by SIGKILL, got %v", st.name, p.index, p.err)
	}
	if committed() {
		s.t.Fatalf("stage %s index %d: output committed by a killed process", st.name, p.index)
	}
	s.t.Logf("stage %s: index %d killed mid-shard (output not committed), restarting it", st.name, p.index)
}

var ioCounter = regexp.MustCompile(`(?m)^[rw]char: (\d+)$`)

// ioBytes is the number of bytes process pid has read plus written through
// system calls (rchar + wchar of Linux /proc/PID/io).
func ioBytes(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	var total int64
	ms := ioCounter.FindAllSubmatch(data, -1)
	if len(ms) != 2 {
		return 0, errors.New("no rchar/wchar")
	}
	for _, m := range ms {
		n, err := strconv.ParseInt(string(m[1]), 10, 64)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// committedMatching reports whether the store holds a manifest whose name
// matches re.
func (s *simulation) committedMatching(re *regexp.Regexp) bool {
	for name, err := range s.st.List(s.ctx, "") {
		if err != nil {
			s.t.Fatalf("listing the store: %v", err)
		}
		if strings.HasSuffix(name, "/manifest.json") && re.MatchString(name) {
			return true
		}
	}
	return false
}

func (s *simulation) get(name string) []byte {
	rc, err := s.st.Get(s.ctx, name)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		s.t.Fatal(err)
	}
	return data
}

// simPositive is the gallery row of query i's k-th positive (k < 3; no
// two queries share one).
func simPositive(i, k int) int { return (i*7 + k*6151) % simGallery }

// writeSimDataset writes the files the ConfigMap's run file names below
// dir: float32 endpoints on a coarse grid (so scores tie), three graded
// positives per query, each a copy of the query with D, 1.5·D or 2·D of its
// values redrawn (with replacement), so that positives rank anywhere from the top to deep down.
func writeSimDataset(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(12, 2))
	draw := func() float32 { return float32(rng.IntN(9)-4) / 4 }
	random := func(rows int) []float32 {
		vals := make([]float32, rows*simDim)
		for i := range vals {
			vals[i] = draw()
		}
		return vals
	}
	q, g := random(simQueries), random(simGallery)
	var qrels strings.Builder
	qrels.WriteString("query_id\tgallery_id\tgrade\n")
	for i := 0; i < simQueries; i++ {
		for k := 0; k < 3; k++ {
			p := simPositive(i, k)
			copy(g[p*simDim:(p+1)*simDim], q[i*simDim:(i+1)*simDim])
			for n := 0; n < simDim*(2+k)/2; n++ {
				g[p*simDim+rng.IntN(simDim)] = draw()
			}
			fmt.Fprintf(&qrels, "q%d\tg%d\t%d\n", i, p, 3-k)
		}
	}
	write := func(name, idPrefix string, rows int, vals []float32) {
		for r := 0; r < rows; r++ {
			vals[r*simDim] = 1 // no zero rows under cosine
		}
		m, err := matrix.NewDense32(rows, simDim, vals)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := npy.WriteDense(&buf, m); err != nil {
			t.Fatal(err)
		}
		var ids strings.Builder
		for r := 0; r < rows; r++ {
			fmt.Fprintf(&ids, "%s%d\n", idPrefix, r)
		}
		for file, data := range map[string][]byte{name + ".npy": buf.Bytes(), name + "ids.txt": []byte(ids.String())} {
			if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("q", "q", simQueries, q)
	write("g", "g", simGallery, g)
	if err := os.WriteFile(filepath.Join(dir, "qrels.tsv"), []byte(qrels.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// simEnv is the shared set-up of the simulations: the ConfigMap's run file
// and the work volume moved below a temporary directory (its /work paths
// rewritten), the dataset, and the environment of the stage processes
// (the ConfigMap's parameters with smaller shard counts, the store URI and
// a PATH that finds the binary under test).
type simEnv struct {
	tmp, runFile, workDir, bin string
	env                        []string
	k                          *k8s
}

func newSimEnv(t *testing.T, storeURI string) *simEnv {
	t.Helper()
	bin := os.Getenv(EnvJobArrayBin)
	if bin == "" {
		msg := EnvJobArrayBin + " is not set (deploy/ci/jobarray.sh builds the binary and sets it)"
		if os.Getenv(EnvRequireJobArray) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	binAbs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(binAbs) != "vertebrae" {
		t.Fatalf("%s must name a file called vertebrae (the scripts run `vertebrae`)", EnvJobArrayBin)
	}
	fs, err := readDeploy()
	if err != nil {
		t.Fatal(err)
	}
	k, err := parseK8s(fs)
	if err != nil {
		t.Fatal(err)
	}
	e := &simEnv{tmp: t.TempDir(), bin: binAbs, k: k}
	params := k.configMaps["vertebrae-params"].Data
	e.workDir = filepath.Join(e.tmp, strings.TrimPrefix(params["VERTEBRAE_WORK"], "/"))
	e.runFile = filepath.Join(e.tmp, strings.TrimPrefix(params["VERTEBRAE_RUN_FILE"], "/"))
	runYAML := k.configMaps["vertebrae-run"].Data[filepath.Base(params["VERTEBRAE_RUN_FILE"])]
	runYAML = strings.ReplaceAll(runYAML, " "+params["VERTEBRAE_WORK"]+"/", " "+e.workDir+"/")
	if err := os.MkdirAll(filepath.Dir(e.runFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.runFile, []byte(runYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	writeSimDataset(t, filepath.Join(e.workDir, "dataset"))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "JOB_COMPLETION_INDEX", name == "SLURM_ARRAY_TASK_ID", name == "PATH", strings.HasPrefix(name, "VERTEBRAE_"):
			continue
		}
		e.env = append(e.env, kv)
	}
	for name, v := range params {
		switch name {
		case "VERTEBRAE_RUN_FILE":
			v = e.runFile
		case "VERTEBRAE_WORK":
			v = e.workDir
		case "VERTEBRAE_EMBED_SHARDS", "VERTEBRAE_SCORE_SHARDS":
			v = strconv.Itoa(simShards)
		}
		e.env = append(e.env, name+"="+v)
	}
	e.env = append(e.env, "VERTEBRAE_STORE="+storeURI, "PATH="+filepath.Dir(binAbs)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return e
}

// compareWithLocalRun runs `retrieval run` on the run file and compares
// its report with the one the stages wrote.
func (e *simEnv) compareWithLocalRun(ctx context.Context, t *testing.T) {
	t.Helper()
	local := filepath.Join(e.tmp, "local.json")
	cmd := exec.CommandContext(ctx, e.bin, "retrieval", "run", "--spec", e.runFile, "--json", local, "--quiet")
	cmd.Env = e.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	compareReports(t, filepath.Join(e.workDir, "report", "report.json"), local)
}

func TestSimulatedJobArray(t *testing.T) {
	if os.Getenv(EnvJobArrayBin) == "" {
		newSimEnv(t, "") // skips or fails
	}
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Fatalf("the simulation watches /proc/PID/io (Linux): %v", err)
	}
	uri := storetest.S3URIForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	st, err := location.Open(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newSimEnv(t, uri)
	k := e.k
	s := &simulation{t: t, ctx: ctx, env: e.env, st: st, stages: map[string]stage{}}
	for _, stg := range k.stages {
		s.stages[stg.name] = stg
	}

	start := time.Now()
	s.runStage("plan", 1, -1, nil)
	galleryShard := regexp.MustCompile(fmt.Sprintf(`/gallery/[^/]+/shards/%05d-of-%05d/manifest\.json$`, simVictim, simShards))
	// Both embed stages run side by side, as run.sh starts them.
	stq, pq := s.startStage("embed-query", simShards)
	s.runStage("embed-gallery", simShards, simVictim, func() bool { return s.committedMatching(galleryShard) })
	s.finishStage(stq, pq, -1, nil)
	s.runStage("merge", 1, -1, nil)
	// The positives stages (one per score shard): one is killed mid-shard;
	// a score shard started before its retry must refuse, naming the
	// missing positives stage, rather than fall back or count wrongly.
	positivesRe := func(i int) *regexp.Regexp {
		return regexp.MustCompile(fmt.Sprintf(`/positives/%05d-of-%05d/manifest\.json$`, i, simShards))
	}
	stPos, pprocs := s.startStage("positives", simShards)
	s.finishStage(stPos, pprocs, simVictim, func() bool { return s.committedMatching(positivesRe(simVictim)) }, func() {
		for i, p := range pprocs {
			if i != simVictim {
				s.wait(stPos, p)
			}
		}
		sc := s.start(s.stages["score"], 0)
		<-sc.done
		want := fmt.Sprintf("/positives/%05d-of-%05d", simVictim, simShards)
		if sc.err == nil || !strings.Contains(sc.stderr.String(), want) || !strings.Contains(sc.stderr.String(), "missing positives stage") {
			t.Errorf("score shard 0 with positives stage %s missing: %v, stderr %q", want, sc.err, sc.stderr.String())
		}
		t.Logf("score before the positives retry: %v: %s", sc.err, strings.TrimSpace(sc.stderr.String()))
	})
	for i := 0; i < simShards; i++ {
		if !s.committedMatching(positivesRe(i)) {
			t.Fatalf("positives stage %d of %d is not in the store", i, simShards)
		}
	}
	partial := regexp.MustCompile(fmt.Sprintf(`/partials/%05d-of-%05d/manifest\.json$`, simVictim, simShards))
	stScore, procs := s.startStage("score", simShards)
	s.finishStage(stScore, procs, simVictim, func() bool { return s.committedMatching(partial) }, func() {
		// With the killed shard's partial missing, finalize refuses,
		// naming it (the other shards may still be running: wait first).
		for i, p := range procs {
			if i != simVictim {
				s.wait(stScore, p)
			}
		}
		fin := s.start(s.stages["finalize"], 0)
		<-fin.done
		want := fmt.Sprintf("/partials/%05d-of-%05d", simVictim, simShards)
		if fin.err == nil || !strings.Contains(fin.stderr.String(), want) {
			t.Errorf("finalize with partial %s missing: %v, stderr %q", want, fin.err, fin.stderr.String())
		}
		t.Logf("finalize before the retry: %v: %s", fin.err, strings.TrimSpace(fin.stderr.String()))
	})

	// Re-running a finished shard rewrites identical content (SPEC §11.4).
	var first struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(procs[0].stdout.Bytes(), &first); err != nil || first.Key == "" {
		t.Fatalf("score shard 0 printed %q: %v", procs[0].stdout.String(), err)
	}
	before := s.get(first.Key + "/manifest.json")
	s.runStage("score", 1, -1, nil)
	if after := s.get(first.Key + "/manifest.json"); !bytes.Equal(before, after) {
		t.Errorf("re-running score shard 0 changed %s:\n%s\n%s", first.Key, before, after)
	}

	s.runStage("finalize", 1, -1, nil)
	s.runStage("report", 1, -1, nil)
	t.Logf("job array: %s", time.Since(start).Round(time.Millisecond))

	e.compareWithLocalRun(ctx, t)
}

// fakeSbatch stands in for sbatch in TestSimulatedSlurm: it runs the job at
// once (so afterok dependencies hold by construction; their shape is
// checked in deploy_test.go), an array's tasks concurrently with
// SLURM_ARRAY_TASK_ID, each task's output in its own log, and prints a job
// id as --parsable does.
const fakeSbatch = `#!/usr/bin/env bash
set -euo pipefail
array="" chdir="." script="" stage=""
for a in "$@"; do
  case "$a" in
    --array=*) array="${a#--array=}" ;;
    --chdir=*) chdir="${a#--chdir=}" ;;
    --parsable|--job-name=*|--dependency=*|--output=*) ;;
    -*) echo "fake sbatch: unexpected option $a" >&2; exit 2 ;;
    *) if [ -z "$script" ]; then script="$a"; else stage="$a"; fi ;;
  esac
done
id=$(( $(cat "$FAKE_SBATCH_DIR/id" 2>/dev/null || echo 100) + 1 )); echo "$id" >"$FAKE_SBATCH_DIR/id"
cd "$chdir"
if [ -z "$array" ]; then
  bash "$script" "$stage" >"$FAKE_SBATCH_DIR/$stage.log" 2>&1 || { cat "$FAKE_SBATCH_DIR/$stage.log" >&2; exit 1; }
else
  pids=()
  for i in $(seq "${array%-*}" "${array#*-}"); do
    SLURM_ARRAY_TASK_ID=$i bash "$script" "$stage" >"$FAKE_SBATCH_DIR/$stage-$i.log" 2>&1 & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$FAKE_SBATCH_DIR/$stage"-*.log >&2; exit 1; }; done
fi
echo "$id"
`

// The Slurm scripts run end to end (deploy/slurm/submit.sh with a stand-in
// sbatch, array tasks concurrent) on a local-directory store, the shared
// filesystem case, and give the local run's report.
func TestSimulatedSlurm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	e := newSimEnv(t, "")
	fake := filepath.Join(e.tmp, "sbatch-bin")
	if err := os.MkdirAll(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "sbatch"), []byte(fakeSbatch), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"FAKE_SBATCH_DIR=" + fake}
	for _, kv := range e.env {
		switch {
		case strings.HasPrefix(kv, "VERTEBRAE_STORE="):
			kv = "VERTEBRAE_STORE=" + filepath.Join(e.tmp, "store")
		case strings.HasPrefix(kv, "PATH="):
			kv = "PATH=" + fake + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
		env = append(env, kv)
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("slurm", "submit.sh"))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("submit.sh: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`submitted: plan 101, embed 102 103, merge 104, positives 105, score 106, finalize 107, report 108`).Match(out) {
		t.Errorf("submit.sh printed %q", out)
	}
	// The positives array ran before the score array, one task per shard.
	for i := 0; i < simShards; i++ {
		if _, err := os.Stat(filepath.Join(fake, fmt.Sprintf("positives-%d.log", i))); err != nil {
			t.Errorf("positives task %d did not run: %v", i, err)
		}
	}
	var matches []string
	stage := regexp.MustCompile(`/positives/\d{5}-of-\d{5}/manifest\.json$`)
	if err := filepath.WalkDir(filepath.Join(e.tmp, "store"), func(p string, _ fs.DirEntry, err error) error {
		if err == nil && stage.MatchString(filepath.ToSlash(p)) {
			matches = append(matches, p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(matches) != simShards {
		t.Errorf("the store holds %d positives stages, want %d: %v", len(matches), simShards, matches)
	}
	e.compareWithLocalRun(ctx, t)
}

// compareReports fails unless the job array's report equals the local run's
// apart from runtime.*, cache_status (how a local run obtained its
// endpoints) and the artifact metadata (SPEC §10.8).
func compareReports(t *testing.T, gotPath, wantPath string) {
	t.Helper()
	load := func(p string) map[string]any {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, r := range m["extractor_results"].([]any) {
			delete(r.(map[string]any), "runtime")
			delete(r.(map[string]any), "cache_status")
		}
		return m
	}
	got, want := load(gotPath), load(wantPath)
	for _, f := range []string{"schema_version", "extractor_results", "ranking"} {
		if !reflect.DeepEqual(got[f], want[f]) {
			a, _ := json.MarshalIndent(got[f], "", " ")
			b, _ := json.MarshalIndent(want[f], "", " ")
			t.Errorf("%s differs from the local run:\njob array %s\nlocal %s", f, a, b)
		}
	}
	gs, ws := got["dataset_summary"].(map[string]any), want["dataset_summary"].(map[string]any)
	for _, f := range []string{"modality", "n_queries", "n_gallery", "query_modality", "gallery_modality", "identity"} {
		if !reflect.DeepEqual(gs[f], ws[f]) {
			t.Errorf("dataset_summary.%s = %v, local %v", f, gs[f], ws[f])
		}
	}
	gm, wm := got["metadata"].(map[string]any), want["metadata"].(map[string]any)
	if gm["artifact_backed"] != true || gm["protocol_fingerprint"] != wm["protocol_fingerprint"] || !reflect.DeepEqual(gm["retrieval_config"], wm["retrieval_config"]) {
		t.Errorf("metadata %v, local %v", gm, wm)
	}
	r := got["extractor_results"].([]any)[0].(map[string]any)
	t.Logf("job array = local run: %v", r["forward"].(map[string]any)["metrics"])
}
