package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeKubectl records each call (namespace first) and every manifest
// applied from stdin; `get job` reports Complete, or Failed for
// $FAKE_FAIL_JOB.
const fakeKubectl = `#!/usr/bin/env bash
set -euo pipefail
ns=""
args=()
while [ $# -gt 0 ]; do
  if [ "$1" = --namespace ]; then ns="$2"; shift 2; else args+=("$1"); shift; fi
done
echo "[$ns] ${args[*]}" >>"$FAKE_KUBECTL_DIR/log"
case "${args[*]}" in
  "apply -f -") n=$(ls "$FAKE_KUBECTL_DIR" | grep -c '^applied-' || true); cat >"$FAKE_KUBECTL_DIR/applied-$(printf %03d "$n").yaml" ;;
  "get job "*"{.status.failedIndexes}") echo "3" ;;
  "get job "*)
    if [ "${args[2]}" = "${FAKE_FAIL_JOB:-}" ]; then echo "FailureTarget Failed "; else echo "Complete "; fi ;;
esac
`

func runRunSh(t *testing.T, failJob string) (log []string, applied []string, out string, err error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(fakeKubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("k8s", "run.sh"))
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_KUBECTL_DIR="+dir, "FAKE_FAIL_JOB="+failJob, "IMAGE=registry.example/vertebrae:9.9", "NAMESPACE=eval")
	b, err := cmd.CombinedOutput()
	data, rerr := os.ReadFile(filepath.Join(dir, "log"))
	if rerr != nil {
		t.Fatalf("run.sh made no kubectl call: %v\n%s", rerr, b)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "applied-*.yaml"))
	slices.Sort(names)
	for _, n := range names {
		d, _ := os.ReadFile(n)
		applied = append(applied, string(d))
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n"), applied, string(b), err
}

// run.sh applies the configuration, then each stage group in order with
// the image substituted, deleting each Job first and waiting for every Job
// of a group before the next; a failed Job stops it, naming the indexes.
func TestRunShStageOrder(t *testing.T) {
	log, applied, out, err := runRunSh(t, "")
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	want := []string{"[eval] apply -f 00-config.yaml -f 00-workspace.yaml"}
	for i := 0; i < len(wantStages); {
		g := wantStages[i].group
		var group []string
		for ; i < len(wantStages) && wantStages[i].group == g; i++ {
			group = append(group, "vertebrae-"+wantStages[i].name)
		}
		for _, j := range group {
			want = append(want, "[eval] delete job "+j+" --ignore-not-found --wait=true", "[eval] apply -f -")
		}
		for _, j := range group {
			want = append(want, `[eval] get job `+j+` -o jsonpath={range .status.conditions[?(@.status=="True")]}{.type} {end}`)
		}
	}
	if !slices.Equal(log, want) {
		t.Errorf("kubectl calls:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if len(applied) != len(wantStages) {
		t.Fatalf("applied %d manifests, want %d", len(applied), len(wantStages))
	}
	for i, doc := range applied {
		if !strings.Contains(doc, "name: vertebrae-"+wantStages[i].name+"\n") ||
			!strings.Contains(doc, "          image: registry.example/vertebrae:9.9\n") || strings.Contains(doc, imagePlaceholder) {
			t.Errorf("manifest %d (want stage %s, image substituted):\n%s", i, wantStages[i].name, doc)
		}
	}

	// A failed positives stage stops the run before the score shards.
	_, applied, out, err = runRunSh(t, "vertebrae-positives")
	if err == nil || !strings.Contains(out, "job/vertebrae-positives failed; failed indexes: 3") {
		t.Errorf("run.sh with a failed positives Job: %v\n%s", err, out)
	}
	if last := applied[len(applied)-1]; !strings.Contains(last, "name: vertebrae-positives\n") || !strings.Contains(last, "--stage positives") {
		t.Errorf("run.sh went on after the failed positives stage; last applied:\n%s", last)
	}

	log, applied, out, err = runRunSh(t, "vertebrae-score")
	if err == nil {
		t.Fatalf("run.sh succeeded with a failed score Job:\n%s", out)
	}
	if !strings.Contains(out, "job/vertebrae-score failed; failed indexes: 3") {
		t.Errorf("run.sh output does not name the failed indexes:\n%s", out)
	}
	if last := applied[len(applied)-1]; !strings.Contains(last, "name: vertebrae-score\n") {
		t.Errorf("run.sh went on after the failed stage; last applied:\n%s\nlog %q", last, log)
	}
}
