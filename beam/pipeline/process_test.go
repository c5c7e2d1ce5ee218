package pipeline

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// setFlags sets Beam's global pipeline options for one test and restores
// them afterwards (the Prism runner reads them at each Run).
func setFlags(t *testing.T, kv map[string]string) {
	t.Helper()
	for k, v := range kv {
		f := flag.Lookup(k)
		if f == nil {
			t.Fatalf("no flag --%s", k)
		}
		old := f.Value.String()
		if err := flag.Set(k, v); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = flag.Set(k, old) })
	}
}

// The pipeline on Prism with the PROCESS environment: the SDK workers are
// separate processes of the vertebrae-beam binary (built here with
// CGO_ENABLED=0), started by Prism as the environment's command (the binary
// boots itself from the provision service), reading the spec and the
// store by their local paths. The report equals the local run's, and the
// staged scoring left its positives stages and partials.
func TestPipelineOnPrismProcessEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the worker binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "vertebrae-beam")
	build := exec.Command("go", "build", "-o", bin, "../cmd/vertebrae-beam")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The environment's command is a wrapper that records each start, so
	// the test sees the worker processes Prism launched.
	starts := filepath.Join(dir, "starts.log")
	wrapper := writeFile(t, dir, "worker.sh", "#!/bin/sh\necho \"$$ $*\" >> '"+starts+"'\nexec '"+bin+"' \"$@\"\n")
	if err := os.Chmod(wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]string{"command": wrapper})
	setFlags(t, map[string]string{
		"environment_type":   "PROCESS",
		"environment_config": string(cfg),
		"worker_binary":      bin, // staged, as a cluster runner would; the boot does not fetch it
	})

	spec := dataset(t, dir, "cosine", true, false, 7, 11)
	want := decode(t, localRun(t, spec))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := Options{Spec: spec, Store: filepath.Join(dir, "store"), TotalShards: 3, ShardBy: "modulo"}
	got, job, err := Run(ctx, "prism", opts)
	if err != nil {
		log, _ := os.ReadFile(starts)
		t.Fatalf("%v\nworker starts:\n%s", err, log)
	}
	log, err := os.ReadFile(starts)
	if err != nil {
		t.Fatalf("no worker process was started: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	for _, l := range lines {
		if !strings.Contains(l, "--provision_endpoint=") {
			t.Errorf("worker started as %q", l)
		}
	}
	t.Logf("%d worker process(es): %q", len(lines), lines)
	checkStages(t, ctx, opts.Store, job.ScoreKeys[0], opts.TotalShards, true)
	rep := decode(t, got)
	for _, k := range []string{"extractor_results", "ranking", "schema_version"} {
		if !reflect.DeepEqual(rep[k], want[k]) {
			a, _ := json.MarshalIndent(rep[k], "", " ")
			b, _ := json.MarshalIndent(want[k], "", " ")
			t.Fatalf("%s differs:\npipeline %s\nlocal %s", k, a, b)
		}
	}
}
