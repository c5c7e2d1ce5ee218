//go:build unix

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A new user's first steps, literally: clone the repository, run the
// README's install block (go install into a fresh GOPATH, PATH, `vertebrae
// version`) and then the walkthrough's commands with the installed binary
// on generated embedding files; the printed ranking puts the better
// backbone first.
func TestREADMEInstallAndWalkthroughFromAClone(t *testing.T) {
	if testing.Short() {
		t.Skip("clones the repository and builds the binary")
	}
	root, err := exec.Command("git", "-C", "..", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): nothing to clone", err)
	}
	tmp := t.TempDir()
	clone := filepath.Join(tmp, "vertebrae")
	if out, err := exec.Command("git", "clone", "-q", strings.TrimSpace(string(root)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join(clone, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	install := shellBlockAfter(t, string(readme), "## Install")
	walkthrough := shellBlockAfter(t, string(readme), "## Compare two backbones on your data")
	if !strings.Contains(install, "go install ./cmd/vertebrae") || !strings.Contains(walkthrough, "vertebrae retrieval compare") {
		t.Fatalf("the README's blocks changed:\n%s\n%s", install, walkthrough)
	}
	// A fresh GOPATH for the installed binary (the module and build caches
	// are shared, so nothing is downloaded); the user's own PATH otherwise.
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gopath := filepath.Join(tmp, "gopath")
	env := append(os.Environ(), "GOPATH="+gopath, "GOMODCACHE="+strings.TrimSpace(string(modcache)), "GOBIN=", "GOFLAGS=-mod=readonly")
	docsFixtures(t, clone) // the files the walkthrough's Python snippet writes
	script := "set -e\n" + install + "\n" + walkthrough
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir, cmd.Env = clone, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install + walkthrough: %v\n%s", err, tail(string(out), 4000))
	}
	if _, err := os.Stat(filepath.Join(gopath, "bin", "vertebrae")); err != nil {
		t.Errorf("go install did not write $(go env GOPATH)/bin/vertebrae: %v", err)
	}
	// The ranking table: e5 (less noise in the fixtures) before bge.
	rank := regexp.MustCompile(`(?m)^\|[^|\n]*\|\s*1\s*\|\s*e5\s*\|[^\n]*\n\|[^|\n]*\|\s*2\s*\|\s*bge\s*\|`)
	if !rank.MatchString(string(out)) {
		t.Errorf("the printed ranking does not put e5 first and bge second:\n%s", tail(string(out), 4000))
	}
	if _, err := os.Stat(filepath.Join(clone, "out", "compare.html")); err != nil {
		t.Errorf("the walkthrough's HTML report: %v", err)
	}
}

// shellBlockAfter returns the first sh block after the heading.
func shellBlockAfter(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no %q", heading)
	}
	rest := doc[i:]
	j := strings.Index(rest, "\n```sh\n")
	if j < 0 {
		t.Fatalf("no sh block after %q", heading)
	}
	body := rest[j+len("\n```sh\n"):]
	k := strings.Index(body, "\n```")
	if k < 0 {
		t.Fatalf("unclosed block after %q", heading)
	}
	return body[:k+1]
}
