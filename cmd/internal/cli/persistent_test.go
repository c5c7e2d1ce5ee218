package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract/command"
)

// pythonWithNumpy finds a python3 that imports numpy (VERTEBRAE_PYTHON,
// python3 on PATH, /usr/bin/python3); it skips without one unless
// VERTEBRAE_REQUIRE_PYTHON=1.
func pythonWithNumpy(t *testing.T) string {
	t.Helper()
	var cands []string
	if p := os.Getenv("VERTEBRAE_PYTHON"); p != "" {
		cands = append(cands, p)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/python3")
	for _, p := range cands {
		if exec.Command(p, "-c", "import json, numpy").Run() == nil {
			return p
		}
	}
	msg := "no python3 with numpy (Debian: apt-get install python3 python3-numpy)"
	if os.Getenv("VERTEBRAE_REQUIRE_PYTHON") == "1" {
		t.Fatal(msg + "; VERTEBRAE_REQUIRE_PYTHON=1")
	}
	t.Skip(msg)
	return ""
}

// A run file with the shipped Python worker as a persistent command
// extractor: one process for the whole run (both sides, many batches), and
// the same report as the per-batch mode of an equivalent script.
func TestPersistentCommandExtractorRun(t *testing.T) {
	py := pythonWithNumpy(t)
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts.log")
	// The template, counting its starts.
	worker := strings.Replace(command.PythonWorkerTemplate, "import numpy as np\n",
		"import numpy as np\nopen("+fmt.Sprintf("%q", starts)+", \"a\").write(\"start\\n\")\n", 1)
	writeFile(t, dir, "worker.py", worker)
	// The per-batch protocol with the same encode function.
	writeFile(t, dir, "batch.py", `import json, sys
import numpy as np
rows = [json.loads(l) for l in sys.stdin if l.strip()]
for r in rows:
    t = r["value"]
    print(json.dumps(np.asarray([len(t), t.count("a"), len(t.split())], dtype=np.float32).tolist()))
`)
	var q, g, qrels strings.Builder
	for i := range 30 {
		fmt.Fprintf(&q, "{\"_id\": \"q%d\", \"text\": %q}\n", i, strings.Repeat("a b ", i%7+1))
		fmt.Fprintf(&qrels, "q%d\td%d\t1\n", i, (i*3)%40)
	}
	for i := range 40 {
		fmt.Fprintf(&g, "{\"_id\": \"d%d\", \"text\": %q}\n", i, strings.Repeat("a", i%5+1)+strings.Repeat(" b", i%6))
	}
	writeFile(t, dir, "q.jsonl", q.String())
	writeFile(t, dir, "g.jsonl", g.String())
	writeFile(t, dir, "qrels.tsv", qrels.String())
	report := func(name, extractor string) map[string]any {
		t.Helper()
		spec := writeFile(t, dir, name+".yaml", `version: 1
dataset:
  id: persistent
  revision: "1"
  queries: {modality: text, path: q.jsonl}
  gallery: {modality: text, path: g.jsonl}
  qrels: {path: qrels.tsv}
extractors:
  - `+extractor+`
outputs: {json: `+name+`.json}
`)
		if code, _, stderr := run(t, "retrieval", "run", "--spec", spec, "--store", filepath.Join(dir, name+"-cache"), "--quiet"); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(mustRead(t, filepath.Join(dir, name+".json"))), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	persistent := report("persistent", fmt.Sprintf("{name: m, type: command, command: [%q, %q], modality: text, batch_size: 4, persistent: true}", py, filepath.Join(dir, "worker.py")))
	if b, err := os.ReadFile(starts); err != nil || strings.Count(string(b), "start") != 1 {
		t.Errorf("the persistent worker started %d times for 18 batches, want once (%v)", strings.Count(string(b), "start"), err)
	}
	perBatch := report("perbatch", fmt.Sprintf("{name: m, type: command, command: [%q, %q], modality: text, batch_size: 4}", py, filepath.Join(dir, "batch.py")))
	results := func(rep map[string]any) any {
		r := rep["extractor_results"].([]any)[0].(map[string]any)
		return r["score_result"]
	}
	if !reflect.DeepEqual(results(persistent), results(perBatch)) {
		t.Error("persistent and per-batch modes give different score results")
	}
}
