package nsfwjs

import (
	"os"
	"path/filepath"
	"testing"
)

// tarballPath finds nsfwjs-4.4.0.tgz in $VERTEBRAE_NPM_DIR (where .ci/run
// npm-packs the model packages). Without it the test is skipped, unless
// VERTEBRAE_REQUIRE_MODELS is set (CI), where a missing tarball fails.
func tarballPath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("VERTEBRAE_NPM_DIR")
	p := filepath.Join(dir, Tarball)
	if dir != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "nsfwjs tarball not found: set VERTEBRAE_NPM_DIR to a directory holding " + Tarball + " (npm pack " + Package + "@" + Version + ")"
	if os.Getenv("VERTEBRAE_REQUIRE_MODELS") != "" {
		t.Fatal("VERTEBRAE_REQUIRE_MODELS is set but the " + msg)
	}
	t.Skip(msg)
	return ""
}
