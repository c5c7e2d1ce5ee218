package localrun

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once   sync.Once
	bin    string
	errOut string
)

// Binary builds the vertebrae command once and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		dir, err := os.MkdirTemp("", "vertebrae-localrun-")
		if err != nil {
			errOut = err.Error()
			return
		}
		bin = filepath.Join(dir, "vertebrae")
		var stderr bytes.Buffer
		cmd := exec.Command("go", "build", "-o", bin, "github.com/vertebrae-eval/vertebrae/cmd/vertebrae")
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			errOut = err.Error() + ": " + stderr.String()
		}
	})
	if errOut != "" {
		t.Fatalf("building vertebrae: %s", errOut)
	}
	return bin
}

// JSON runs `vertebrae retrieval run --spec spec --json out --quiet` and
// returns the report.
func JSON(t testing.TB, spec, out string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(Binary(t), "retrieval", "run", "--spec", spec, "--json", out, "--quiet")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("local run: %v: %s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
