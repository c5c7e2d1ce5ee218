package deploytest

import (
	"fmt"
	"os"
	"testing"
)

// deployDir is the deployment the tests check, from this package.
const deployDir = "../../../deploy"

func TestMain(m *testing.M) {
	if err := os.Chdir(deployDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
