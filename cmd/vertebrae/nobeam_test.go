package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The default binary stays light (issue #12, SPEC §11.4): Apache Beam
// lives in the separate module beam/, and nothing of it is linked into
// `vertebrae`. The binary is built as users build it and its embedded
// module list (`go version -m`) must name no github.com/apache/beam module.
func TestDefaultBinaryDoesNotLinkBeam(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Fatal("the go command is needed to build the binary: ", err)
		}
	}
	bin := filepath.Join(t.TempDir(), "vertebrae")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(goTool, "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	info := string(out)
	if !strings.Contains(info, "mod\tgithub.com/vertebrae-eval/vertebrae") {
		t.Fatalf("go version -m does not list the main module:\n%s", info)
	}
	for _, line := range strings.Split(info, "\n") {
		if strings.Contains(line, "github.com/apache/beam") {
			t.Errorf("the default binary links Apache Beam: %s", strings.TrimSpace(line))
		}
	}
	if fi, err := os.Stat(bin); err == nil {
		t.Logf("vertebrae binary: %d bytes (%.1f MiB)", fi.Size(), float64(fi.Size())/(1<<20))
	}
}
