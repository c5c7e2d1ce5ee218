package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The demo is deterministic: its Markdown report (which carries no timings)
// is pinned in a golden file, and a second run reproduces it byte for byte.
func TestDemoGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("demo scores 3 backbones × 1,000 × 5,000 pairs; skipped with -short")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "demo.json")
	code, stdout, stderr := run(t, "demo", "--json", jsonPath)
	if code != 0 {
		t.Fatal(stderr)
	}
	golden := filepath.Join("testdata", "demo.golden.md")
	if *update {
		if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		t.Errorf("demo report differs from %s:\n%s", golden, stdout)
	}
	for _, name := range []string{"| raw-pixels |", "| avg-pool-4x4 |", "| hog |", "recall@10="} {
		if !strings.Contains(stdout, name) {
			t.Errorf("demo report lacks %q", name)
		}
	}
	rep := reportOf(t, mustRead(t, jsonPath))
	if n := len(rep["extractor_results"].([]any)); n < 3 {
		t.Errorf("%d results", n)
	}
	id := rep["dataset_summary"].(map[string]any)["identity"].(map[string]any)
	if id["dataset_id"] != "vertebrae-demo" || id["revision"] != "1" {
		t.Errorf("identity %v", id)
	}
	code, again, _ := run(t, "demo", "--markdown", "-", "--threads", "1")
	if code != 0 || again != stdout {
		t.Error("demo output differs between runs / thread counts")
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
