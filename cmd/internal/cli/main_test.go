package cli

import (
	"os"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

// TestMain serves S3 when started as storetest.StartS3Process's server,
// and keeps the tests' digest cache entries (of fixture files older
// than its racy window) out of the user's cache directory.
func TestMain(m *testing.M) {
	storetest.ServeS3IfChild()
	if os.Getenv(digestcache.EnvVar) == "" {
		dir, err := os.MkdirTemp("", "vertebrae-digests-")
		if err == nil {
			os.Setenv(digestcache.EnvVar, dir)
		}
		code := m.Run()
		os.RemoveAll(dir)
		removeBinary()
		os.Exit(code)
	}
	code := m.Run()
	removeBinary()
	os.Exit(code)
}
