package cli

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// A budget far below the endpoints' size: with spill the run stages them in
// memory-mapped files and gives the unbounded metrics; without spill it
// fails with the SPEC §7.4 message, on the query side, and writes nothing.
func TestMemoryBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	dir := t.TempDir()
	q, g, qrels, _ := randomFiles(t, dir, r, 30, 500, 16, false, true)
	// The same gallery in an .npz (read into memory, not mapped).
	gm := readRows(t, g)
	dense, _ := matrix.FromRows(gm)
	var buf bytes.Buffer
	if err := npz.WriteDense(&buf, "g", dense); err != nil {
		t.Fatal(err)
	}
	gz := writeFile(t, dir, "g.npz", buf.String())
	spill := t.TempDir()
	metrics := func(args ...string) map[string]any {
		t.Helper()
		code, stdout, stderr := run(t, append([]string{"retrieval", "run", "--qrels", qrels, "--json", "-"}, args...)...)
		if code != 0 {
			t.Fatal(stderr)
		}
		rep := reportOf(t, stdout)
		return rep["extractor_results"].([]any)[0].(map[string]any)["forward"].(map[string]any)
	}
	want := metrics("--queries", q, "--gallery", g)
	for _, gallery := range []string{g, gz} {
		got := metrics("--queries", q, "--gallery", gallery, "--max-memory-bytes", "1000", "--spill-dir", spill)
		if !reflect.DeepEqual(got["metrics"], want["metrics"]) || !reflect.DeepEqual(got["diagnostics"], want["diagnostics"]) {
			t.Errorf("%s: spilled run differs from the unbounded one", gallery)
		}
	}
	if entries, _ := os.ReadDir(spill); len(entries) != 0 {
		t.Errorf("spill files left behind: %v", entries)
	}
	out := filepath.Join(dir, "out.json")
	code, _, stderr := run(t, "retrieval", "run", "--queries", q, "--gallery", gz, "--qrels", qrels, "--max-memory-bytes", "1000", "--no-disk-spill", "--json", out)
	want7 := "Retriever 'precomputed' query embeddings is estimated to require 3840 bytes, exceeding the memory budget of 1000 bytes. Enable MemoryConfig.allow_disk_spill or increase max_memory_bytes."
	if code != 1 || !strings.Contains(stderr, want7) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("failed run wrote its report")
	}
	// A budget that holds the queries but not the gallery fails on the gallery.
	code, _, stderr = run(t, "retrieval", "run", "--queries", q, "--gallery", gz, "--qrels", qrels, "--max-memory-bytes", "10000", "--no-disk-spill")
	if code != 1 || !strings.Contains(stderr, "Retriever 'precomputed' gallery embeddings is estimated to require 67840 bytes, exceeding the memory budget of 10000 bytes.") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if code, _, _ := run(t, "retrieval", "run", "--queries", q, "--gallery", g, "--qrels", qrels, "--max-memory-bytes", "0"); code != 2 {
		t.Errorf("--max-memory-bytes 0 must be a usage error, got %d", code)
	}
}

func TestCompressionVariants(t *testing.T) {
	f := newFixture(t)
	code, stdout, stderr := run(t, "retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", f.qrels(t),
		"--compress", "pca:2", "--compress", "quantize:int8", "--compress", "prefix-matryoshka:1", "--similarity", "dot", "--json", "-")
	if code != 0 {
		t.Fatal(stderr)
	}
	rep := reportOf(t, stdout)
	byName := map[string]map[string]any{}
	for _, r := range rep["extractor_results"].([]any) {
		m := r.(map[string]any)
		byName[m["name"].(string)] = m
	}
	for _, name := range []string{"precomputed", "precomputed[pca_2]", "precomputed[quantize_int8]", "precomputed[prefix_truncate_1]"} {
		if byName[name] == nil {
			t.Fatalf("missing result %q (have %v)", name, byName)
		}
	}
	skip := byName["precomputed[pca_2]"]
	cm := skip["compression_metadata"].(map[string]any)
	want := "Requested n_components=2 is greater than or equal to the original dimension 2; skipping compression."
	if cm["applied"] != false || cm["fit_side"] != "gallery" || !strings.Contains(strings.Join(toStrings(skip["warnings"]), "|"), want) {
		t.Errorf("skipped pca: %v / %v", cm, skip["warnings"])
	}
	if byName["precomputed[quantize_int8]"]["compression_metadata"].(map[string]any)["quantization_mode"] != "symmetric_absmax" {
		t.Error("int8 metadata")
	}
	if n := len(rep["metadata"].(map[string]any)["compression_configs"].([]any)); n != 4 {
		t.Errorf("%d compression configs", n)
	}
	if code, _, stderr := run(t, "retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", f.qrels(t), "--compress", "pca:x"); code != 2 {
		t.Errorf("bad spec: exit %d %s", code, stderr)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// Label-derived relevance is charged what it holds (a class per row), not
// 16 bytes per pair it implies: a one-class run of 300 × 300 (90,000 pairs,
// 1.44 MB at 16 bytes a pair) runs under a 1 MB budget, and --write-qrels
// streams every pair without holding them.
func TestLabelRunChargedWhatItHolds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 300
	rows := make([][]float64, n)
	labels := strings.Repeat("same\n", n)
	for i := range rows {
		rows[i] = []float64{float64(i%17) + 1, float64(i%5) - 2, 1}
	}
	writeNPY(t, dir, "e.npy", rows)
	writeFile(t, dir, "l.txt", labels)
	p := func(name string) string { return filepath.Join(dir, name) }
	code, _, stderr := run(t, "retrieval", "run", "--queries", p("e.npy"), "--gallery", p("e.npy"), "--query-labels", p("l.txt"),
		"--gallery-labels", p("l.txt"), "--max-memory-bytes", "1MB", "--json", p("out.json"), "--write-qrels", p("out.qrels"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := strings.Count(mustRead(t, p("out.qrels")), "\n"); got != n*n {
		t.Errorf("qrels has %d lines, want %d", got, n*n)
	}
}
