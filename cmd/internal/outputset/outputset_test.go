package outputset

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/testutil/treesnap"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

var errDiskFull = errors.New("no space left on device (injected)")

// TestCommitFailureChangesNothing is the fault-injection table: every
// failure leaves the old outputs byte for byte, and no temporary file or
// created directory behind.
func TestCommitFailureChangesNothing(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		build   func(dir string, s *Set)
		wantErr string
		target  bool // a *TargetError (usage, exit 2)
	}{
		{"second fill fails (disk full)", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a.json"), "old json")
		}, func(dir string, s *Set) {
			s.AddBytes("--json", filepath.Join(dir, "a.json"), []byte("new json"))
			s.Add("--run", filepath.Join(dir, "new", "deeper", "run.trec"), func(w io.Writer) error {
				w.Write([]byte("partial"))
				return errDiskFull
			})
		}, "no space left", false},
		{"parent is a file", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a.json"), "old json")
			write(t, filepath.Join(dir, "file"), "x")
		}, func(dir string, s *Set) {
			s.AddBytes("--json", filepath.Join(dir, "a.json"), []byte("new"))
			s.AddBytes("--csv", filepath.Join(dir, "file", "out.csv"), []byte("new"))
		}, "is not a directory", true},
		{"target is a directory", func(t *testing.T, dir string) {
			os.Mkdir(filepath.Join(dir, "d"), 0o755)
		}, func(dir string, s *Set) {
			s.AddBytes("--markdown", filepath.Join(dir, "d"), []byte("new"))
		}, "is a directory", true},
		{"run dir expected, file exists", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "run"), "old run")
		}, func(dir string, s *Set) {
			s.AddDir("--run", filepath.Join(dir, "run"))
		}, "exists and is not a directory", true},
		{"duplicate new target", nil, func(dir string, s *Set) {
			s.AddBytes("--json", filepath.Join(dir, "x"), []byte("a"))
			s.AddBytes("--csv", filepath.Join(dir, ".", "x"), []byte("b"))
		}, "names the same file as --json", true},
		{"duplicate via symlink", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "x"), "old")
			os.Symlink("x", filepath.Join(dir, "l"))
		}, func(dir string, s *Set) {
			s.AddBytes("--json", filepath.Join(dir, "x"), []byte("a"))
			s.AddBytes("--csv", filepath.Join(dir, "l"), []byte("b"))
		}, "names the same file", true},
		{"overwrites input (hard link)", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "qrels.tsv"), "q\tg\t1\n")
			os.Link(filepath.Join(dir, "qrels.tsv"), filepath.Join(dir, "alias.csv"))
		}, func(dir string, s *Set) {
			s.Input(filepath.Join(dir, "qrels.tsv"))
			s.AddBytes("--csv", filepath.Join(dir, "alias.csv"), []byte("b"))
		}, "would overwrite input", true},
		{"overwrites input via symlinked dir", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "in", "q.npy"), "npy")
			os.Symlink("in", filepath.Join(dir, "link"))
		}, func(dir string, s *Set) {
			s.Input(filepath.Join(dir, "in", "q.npy"))
			s.AddBytes("--json", filepath.Join(dir, "link", "q.npy"), []byte("b"))
		}, "would overwrite input", true},
		{"device write fails (ENOSPC) before any rename", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a.json"), "old json")
			fullDevice(t, dir)
		}, func(dir string, s *Set) {
			s.AddBytes("--json", filepath.Join(dir, "a.json"), []byte("new json"))
			s.AddBytes("--markdown", filepath.Join(dir, "full"), []byte("report"))
		}, "no space left", false},
		{"canceled before commit", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a.json"), "old json")
		}, func(dir string, s *Set) {
			s.AddBytes("--json", filepath.Join(dir, "a.json"), []byte("new json"))
		}, "context canceled", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := treesnap.Take(t, dir)
			var s Set
			tc.build(dir, &s)
			ctx := context.Background()
			if strings.HasPrefix(tc.name, "canceled") {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			if tc.target {
				err := s.Check()
				var te *TargetError
				if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Check = %v, want a TargetError with %q", err, tc.wantErr)
				}
			}
			err := s.Commit(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Commit = %v, want %q", err, tc.wantErr)
			}
			var te *TargetError
			if errors.As(err, &te) != tc.target {
				t.Fatalf("Commit error %T: TargetError = %v, want %v", err, !tc.target, tc.target)
			}
			treesnap.Same(t, "the failed set", before, treesnap.Take(t, dir))
		})
	}
}

// TestRenameFailureRestores injects a failure at the second rename: the
// first output, already renamed, is restored from its backup.
func TestRenameFailureRestores(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), "old a")
	write(t, filepath.Join(dir, "b"), "old b")
	before := treesnap.Take(t, dir)
	n := 0
	rename = func(from, to string) error {
		if n++; n == 2 {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO}
		}
		return os.Rename(from, to)
	}
	defer func() { rename = os.Rename }()
	var s Set
	s.AddBytes("--json", filepath.Join(dir, "a"), []byte("new a"))
	s.AddBytes("--csv", filepath.Join(dir, "b"), []byte("new b"))
	s.AddBytes("--run", filepath.Join(dir, "c"), []byte("new c"))
	if err := s.Commit(context.Background()); err == nil || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("Commit = %v", err)
	}
	treesnap.Same(t, "the failed set", before, treesnap.Take(t, dir))
}

func TestCommitSuccess(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "real.md"), "old")
	if err := os.Chmod(filepath.Join(dir, "real.md"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.md", filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	// A null device of our own (never the machine's /dev/null: a bug here
	// must not break the host), else the real one for non-root users.
	null := filepath.Join(dir, "null")
	if err := mknodChar(null, 1, 3); err != nil {
		null = "/dev/null"
	}
	var s Set
	s.AddBytes("--markdown", filepath.Join(dir, "link.md"), []byte("new md"))
	s.AddBytes("--json", filepath.Join(dir, "sub", "dir", "r.json"), []byte("{}"))
	s.AddBytes("--csv", null, []byte("discarded"))
	s.AddDir("--run", filepath.Join(dir, "sub", "dir"))
	if err := s.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := treesnap.Take(t, dir)
	want := map[string]string{
		".": "dir", "real.md": "file:new md", "link.md": "link:real.md",
		"sub": "dir", "sub/dir": "dir", "sub/dir/r.json": "file:{}",
	}
	if null != "/dev/null" {
		want["null"] = "special:Dc---------"
	}
	treesnap.Same(t, "the failed set", want, got)
	info, err := os.Stat(filepath.Join(dir, "real.md"))
	if err != nil || info.Mode().Perm() != 0o640 {
		t.Fatalf("mode of the replaced file = %v, %v; want 0640 kept", info.Mode(), err)
	}
	if info, err := os.Stat(null); err != nil || info.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a character device: %v %v", null, info.Mode(), err)
	}
}

// TestFIFOTargetWrittenDirectly: a FIFO is opened and written, not renamed
// over.
func TestFIFOTargetWrittenDirectly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	var s Set
	s.AddBytes("--markdown", fifo, []byte("through the pipe"))
	if err := s.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := <-got; g != "through the pipe" {
		t.Fatalf("reader got %q", g)
	}
	info, err := os.Lstat(fifo)
	if err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("FIFO replaced: %v %v", info.Mode(), err)
	}
}

// fullDevice makes dir/full a device whose writes fail with ENOSPC: a node
// of its own as root (mknod 1,7), else a symlink to the host's /dev/full
// when that is a character device. The host's devices are never a target
// a bug could rename over.
func fullDevice(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "full")
	if mknodChar(p, 1, 7) == nil {
		return
	}
	if info, err := os.Stat("/dev/full"); err != nil || info.Mode()&fs.ModeCharDevice == 0 {
		t.Skip("no full device on this system")
	}
	if err := os.Symlink("/dev/full", p); err != nil {
		t.Fatal(err)
	}
}
