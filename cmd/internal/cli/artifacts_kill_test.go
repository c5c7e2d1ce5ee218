//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store/local"
)

// A real `kill -9` of the CLI while it uploads a large endpoint to a local
// store leaves the previous generation of the key readable and verified.
func TestKill9DuringWriteKeepsPreviousGeneration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and writes ~100 MB")
	}
	start := time.Now()
	dir := t.TempDir()
	bin := cliBinary(t)
	const rows, cols = 200_000, 64 // 51 MB of float32
	randomTables := func(seed uint64) *matrix.Dense {
		rng := rand.New(rand.NewPCG(seed, 1))
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = rng.Float32() + 0.1
		}
		m, _ := matrix.NewDense32(rows, cols, v)
		return m
	}
	t0 := time.Now()
	t.Logf("built in %v", t0.Sub(start))
	// The CLI writes the tables of g.npy (the new generation); the
	// previous generation is a different array committed at the same key
	// through the library. (Precomputed recipes carry their tables'
	// digests, SPEC §9.5, so a changed g.npy would be a different key.)
	writeMatrix(t, dir, "g.npy", randomTables(2))
	gen1 := randomTables(1) // every value differs from g.npy's
	writeNPY(t, dir, "q.npy", [][]float64{make([]float64, cols)})
	spec := writeFile(t, dir, "run.yaml", `version: 1
dataset:
  id: kill
  revision: "1"
  queries: {path: q.npy}
  gallery: {path: g.npy}
  labels: {queries: ql.txt, gallery: gl.txt}
extractors:
  - {name: tables, type: precomputed}
`)
	writeFile(t, dir, "ql.txt", "a\n")
	writeFile(t, dir, "gl.txt", strings.Repeat("a\n", rows))
	storeDir := filepath.Join(dir, "store")
	planPath := filepath.Join(dir, "plan.json")
	if code, _, stderr := run(t, "retrieval", "plan", "--spec", spec, "--store", storeDir, "--output-json", planPath); code != 0 {
		t.Fatal(stderr)
	}
	plan, err := readPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	shardKey := plan.Extractors[0].Endpoints[1].Shards[0].OutputKey
	args := []string{"retrieval", "embed-shard", "--plan", planPath, "--extractor", "tables", "--side", "gallery", "--shard-index", "0", "--store", storeDir}
	commitGen1 := func() {
		st, err := local.Open(storeDir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		src := artifact.FromMatrix(gen1)
		meta := &artifact.EmbeddingShard{
			Common:       artifact.Common{ArtifactType: artifact.TypeEmbeddingShard, VertebraeVersion: "test", OutputKey: shardKey},
			Shard:        artifact.ShardInfo{TotalShards: 1, ShardIndex: 0},
			EndpointRows: rows,
		}
		meta.ArrayInfo = artifact.ArrayInfoOf(src, artifact.NNZOf(gen1))
		if err := artifact.New(st).WriteArray(context.Background(), shardKey, src, meta); err != nil {
			t.Fatal(err)
		}
	}
	// Kill once the new data file is being uploaded: its temporary file
	// exists, so the manifest (written after it) cannot be. Should the
	// upload slip between two polls, the previous generation is committed
	// again and the next attempt kills a later write.
	killed := false
	for attempt := 0; attempt < 4 && !killed; attempt++ {
		commitGen1()
		t.Logf("generation 1 committed after %v", time.Since(t0))
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
	poll:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("embed-shard failed unkilled: %v", err)
				}
				break poll
			default:
			}
			_ = filepath.Walk(storeDir, func(p string, info os.FileInfo, err error) error {
				if err == nil && !killed && strings.HasPrefix(info.Name(), local.TempPrefix) && strings.Contains(p, "shards") {
					_ = cmd.Process.Signal(syscall.SIGKILL)
					killed = true
				}
				return nil
			})
			if killed {
				<-done
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	if !killed {
		t.Fatal("the upload was never observed in progress")
	}
	st, err := local.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	m, md, err := artifact.New(st).LoadArray(context.Background(), shardKey)
	if err != nil {
		t.Fatalf("previous generation unreadable after kill -9: %v", err)
	}
	var meta artifact.EmbeddingShard
	_ = json.Unmarshal(md, &meta)
	got := m.(*matrix.Dense).Float32Data()
	for i, v := range gen1.Float32Data() {
		if got[i] != v {
			t.Fatalf("value %d is %v, the committed generation had %v", i, got[i], v)
		}
	}
	if meta.ArtifactType != artifact.TypeEmbeddingShard || meta.NSamples != rows {
		t.Errorf("metadata %+v", meta)
	}

	// The kill left the upload's temporary file; the re-run (a later
	// process) removes it, because its owner is dead.
	if n := countNamed(t, storeDir, local.TempPrefix); n == 0 {
		t.Error("the kill left no temporary file: the test did not kill a write")
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	rerun := func(args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	rerun(args...)
	rerun("retrieval", "embed-shard", "--plan", planPath, "--extractor", "tables", "--side", "query", "--shard-index", "0", "--store", storeDir)
	if n := countNamed(t, storeDir, local.TempPrefix); n != 0 {
		t.Errorf("%d temporary files left in the store after the re-run", n)
	}

	// A merge streams its shards straight into the store: killed while it
	// writes the merged endpoint (the data file is still a temporary file
	// in the endpoint's directory, so the manifest, written last, cannot
	// exist yet), it leaves no endpoint artifact (or, on a retry, the
	// previous generation, still verified) and nothing in TMPDIR; the next
	// merge commits the endpoint and removes the temporary file.
	epKey := plan.Extractors[0].Endpoints[1].OutputKey
	epDir := filepath.Join(storeDir, filepath.FromSlash(epKey))
	writing := func() bool {
		entries, _ := os.ReadDir(epDir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), local.TempPrefix) {
				return true
			}
		}
		return false
	}
	endpointState := func() (exists bool, loadErr error) {
		t.Helper()
		st, err := local.Open(storeDir)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		a := artifact.New(st)
		exists, err = a.Exists(context.Background(), epKey)
		if err != nil {
			t.Fatal(err)
		}
		if exists {
			_, _, loadErr = a.LoadArray(context.Background(), epKey)
		}
		return exists, loadErr
	}
	mergeArgs := []string{"retrieval", "merge", "--plan", planPath, "--extractor", "tables", "--side", "gallery", "--store", storeDir}
	killedMerge, committedBefore := false, false
	for attempt := 0; attempt < 4 && !killedMerge; attempt++ {
		committedBefore, _ = endpointState()
		cmd := exec.Command(bin, mergeArgs...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
	pollMerge:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("merge failed unkilled: %v", err)
				}
				t.Logf("attempt %d: the merge finished before it was seen writing", attempt)
				break pollMerge
			default:
			}
			if writing() {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killedMerge = true
				<-done
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	if !killedMerge {
		t.Fatal("the merge was never observed writing the endpoint")
	}
	switch exists, err := endpointState(); {
	case exists && !committedBefore:
		t.Fatal("the killed merge committed the endpoint")
	case exists && err != nil:
		t.Fatalf("previous generation of the endpoint unreadable after kill -9: %v", err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("the merge staged %d files in TMPDIR (first %s); it must stream into the store", len(entries), entries[0].Name())
	}
	rerun(mergeArgs...)
	if exists, err := endpointState(); !exists || err != nil {
		t.Fatalf("the re-run merge left no readable endpoint (exists %v): %v", exists, err)
	}
	if n := countNamed(t, storeDir, local.TempPrefix); n != 0 {
		t.Errorf("%d temporary files left in the store after the merge", n)
	}
}

// countNamed counts the files below dir whose names start with prefix.
func countNamed(t *testing.T, dir, prefix string) int {
	t.Helper()
	n := 0
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(info.Name(), prefix) {
			n++
		}
		return nil
	})
	return n
}
