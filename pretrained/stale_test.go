//go:build unix

package pretrained

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/internal/stale"
)

// stageHelperEnv makes TestStageHelper a process that stages a prepare
// directory and waits to be killed.
const stageHelperEnv = "VERTEBRAE_TEST_STAGE_DIR"

func TestStageHelper(t *testing.T) {
	dir := os.Getenv(stageHelperEnv)
	if dir == "" {
		t.Skip("helper process of TestPrepareRemovesWhatAKilledPrepareLeft")
	}
	work, _, err := stale.MkdirTemp(dir, ".prepare-use-lite-")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(work, "partial.bin"), make([]byte, 1<<20), 0o644)
	os.Stdout.WriteString(work + "\n")
	time.Sleep(time.Minute)
}

// A prepare killed with SIGKILL leaves its staging directory; the next
// prepare removes it (its owner is dead, and it predates the new run), and
// a failed first prepare leaves no models directory behind.
func TestPrepareRemovesWhatAKilledPrepareLeft(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStageHelper$")
	cmd.Env = append(os.Environ(), stageHelperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	left := strings.TrimSpace(line)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The next prepare is a later run: the leftover predates it (this test
	// process started before the helper, so the directory is aged to stand
	// for a run started after the kill).
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(left, old, old); err != nil {
		t.Fatal(err)
	}
	from := t.TempDir()
	p, _ := Lookup("use-lite")
	os.WriteFile(filepath.Join(from, TarballName(p.Package)), []byte("not a tarball"), 0o644)
	_, err = Prepare(context.Background(), dir, from, []string{"use-lite"})
	var ie *IntegrityError
	if !errors.As(err, &ie) {
		t.Fatalf("a corrupt tarball: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
	fresh := filepath.Join(t.TempDir(), "models")
	if _, err := Prepare(context.Background(), fresh, from, []string{"use-lite"}); err == nil {
		t.Fatal("a corrupt tarball prepared")
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a failed first prepare left %s: %v", fresh, err)
	}
}
