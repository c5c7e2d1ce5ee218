package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/runspec"
)

// readmeBlock returns the first fenced block of the given language after
// the heading that starts with heading, in file (README.md or docs/….md,
// relative to the repository root).
func readmeBlock(t *testing.T, file, heading, lang string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", filepath.FromSlash(file)))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "\n"+heading)
	if i < 0 {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	s = s[i:]
	start := strings.Index(s, "```"+lang+"\n")
	if start < 0 {
		t.Fatalf("no ```%s block after %q", lang, heading)
	}
	s = s[start+len("```"+lang+"\n"):]
	end := strings.Index(s, "```")
	return s[:end]
}

// TestREADMERunFileExample: the complete run-file example of docs/run-file.md is a valid run
// file and every extractor in it can be built as written (the hosted ones
// are not contacted, the command one is not started), so a user copying it
// gets no "option ... is required" surprise. Its data files are stand-ins.
func TestREADMERunFileExample(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OPENAI_API_KEY", "not-a-real-key") // read at build time, never sent here
	yaml := readmeBlock(t, "docs/run-file.md", "## A complete example", "yaml")
	spec := writeFile(t, dir, "run.yaml", yaml)
	writeFile(t, dir, "queries.jsonl", `{"_id": "q1", "text": "a"}`+"\n"+`{"_id": "q2", "text": "b"}`+"\n")
	writeFile(t, dir, "corpus.jsonl", `{"_id": "d1", "text": "a"}`+"\n"+`{"_id": "d2", "text": "b"}`+"\n"+`{"_id": "d3", "text": "c"}`+"\n")
	if err := os.Mkdir(filepath.Join(dir, "qrels"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "qrels/test.tsv", "q1\td1\t1\nq2\td2\t1\n")
	writeNPY(t, dir, "q.npy", [][]float64{{1, 0}, {0, 1}})
	writeNPY(t, dir, "g.npy", [][]float64{{1, 0}, {0, 1}, {1, 1}})
	s, err := runspec.Load(spec)
	if err != nil {
		t.Fatalf("README run file: %v", err)
	}
	sess, err := runspec.OpenSpec(context.Background(), s, runspec.Options{})
	if err != nil {
		t.Fatalf("README run file dataset: %v", err)
	}
	defer sess.Close()
	if sess.Dataset.NumQueries() != 2 {
		t.Fatalf("queries %d", sess.Dataset.NumQueries())
	}
	for i := range s.Extractors {
		e := &s.Extractors[i]
		if _, err := sess.Build(context.Background(), e, ""); err != nil {
			t.Errorf("README extractor %s: %v", e.Name, err)
		}
	}
	if len(s.Extractors) != 4 || s.Outputs.RunDepth == nil || *s.Outputs.RunDepth != 100 {
		t.Errorf("extractors %d, outputs %+v", len(s.Extractors), s.Outputs)
	}
}

// TestHelpListsEveryEmbeddingFormat: the --queries/--gallery help names the
// formats files.ReadMatrix accepts, not only .npy and .npz.
func TestHelpListsEveryEmbeddingFormat(t *testing.T) {
	code, stdout, stderr := run(t, "retrieval", "run", "--help")
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, flag := range []string{"--queries string", "--gallery string"} {
		i := strings.Index(stdout, flag)
		if i < 0 {
			t.Fatalf("no %s in help", flag)
		}
		line := stdout[i : i+strings.Index(stdout[i:], "\n")]
		for _, ext := range []string{".npy", ".npz", ".safetensors", ".parquet", ".arrow", ".feather", ".ipc"} {
			if !strings.Contains(line, ext) {
				t.Errorf("%s help %q lacks %s", flag, line, ext)
			}
		}
	}
	if strings.Contains(onnxStatus(), "pass --onnxruntime-lib)") {
		t.Errorf("version suggests a flag it rejects: %s", onnxStatus())
	}
}
