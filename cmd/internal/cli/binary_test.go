package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binaryOnce sync.Once
	binaryDir  string // removed by TestMain
	binaryPath string
	binaryErr  error
	binaryOut  []byte
)

// cliBinary builds cmd/vertebrae once per test process, for tests that
// must signal or kill a real process; every caller gets the same binary.
func cliBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		if binaryDir, binaryErr = os.MkdirTemp("", "vertebrae-cli-"); binaryErr != nil {
			return
		}
		binaryPath = filepath.Join(binaryDir, "vertebrae")
		binaryOut, binaryErr = exec.Command("go", "build", "-o", binaryPath, "github.com/vertebrae-eval/vertebrae/cmd/vertebrae").CombinedOutput()
	})
	if binaryErr != nil {
		t.Fatalf("go build: %v\n%s", binaryErr, binaryOut)
	}
	return binaryPath
}

// removeBinary deletes the built binary, if any (TestMain, after the tests).
func removeBinary() {
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
}
