package cli

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/testutil/treesnap"
)

// TestMarkdownToDeviceNode: a character device given as --markdown is
// written directly and is still a device afterwards (as root the old code
// renamed a regular file over it). Without permission for mknod, a FIFO.
func TestMarkdownToDeviceNode(t *testing.T) {
	f := newFixture(t)
	qrels := f.qrels(t)
	dev := filepath.Join(f.dir, "null")
	kind := fs.ModeCharDevice
	if err := mknodChar(dev, 1, 3); err != nil {
		// Not root: a FIFO is the non-regular target we can make.
		if err := mkfifo(dev); err != nil {
			t.Fatalf("neither mknod nor mkfifo: %v", err)
		}
		kind = fs.ModeNamedPipe
		done := drainFIFO(t, dev)
		defer done()
	}
	code, _, stderr := run(t, "retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", qrels, "--markdown", dev, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	info, err := os.Lstat(dev)
	if err != nil || info.Mode()&kind == 0 {
		t.Fatalf("%s is no longer a %v: %v %v", dev, kind, info.Mode(), err)
	}
	if names := dirNames(t, f.dir); len(names) != 4 {
		t.Fatalf("unexpected files: %v", names)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// fifoEnd marks the end of what the command wrote to a FIFO.
const fifoEnd = "\x00end of test\x00"

// drainFIFO reads a FIFO in the background and returns a function, called
// after the command, that returns what the command wrote. The test holds
// the FIFO open read-write, so the command's open never blocks and the
// reader never sees an early EOF; the reader stops at fifoEnd, which the
// returned function writes once the command is done.
func drainFIFO(t *testing.T, path string) func() string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		var buf []byte
		tmp := make([]byte, 1<<16)
		for {
			n, err := f.Read(tmp)
			buf = append(buf, tmp[:n]...)
			if strings.HasSuffix(string(buf), fifoEnd) || err != nil {
				break
			}
		}
		got <- strings.TrimSuffix(string(buf), fifoEnd)
	}()
	return func() string {
		if _, err := f.WriteString(fifoEnd); err != nil {
			t.Fatal(err)
		}
		s := <-got
		f.Close()
		return s
	}
}

// targetKind is one kind of output target in the property test.
type targetKind int

const (
	kindNew        targetKind = iota // does not exist yet
	kindFile                         // existing regular file (replaced)
	kindDir                          // existing directory (refused)
	kindSymlink                      // symlink to a file (the file is replaced)
	kindFIFO                         // named pipe (written directly)
	kindMissingDir                   // parent directories do not exist (created)
	kindInput                        // an input of the command (refused)
	kindDuplicate                    // the same file as the previous output (refused)
	nKinds
)

func (k targetKind) String() string {
	return [...]string{"new", "file", "dir", "symlink", "fifo", "missing-parent", "input", "duplicate"}[k]
}

// TestOutputTargetProperty draws random combinations of target kinds for
// two or three outputs of run, evaluate-run and demo and checks the SPEC
// §6.1 rules: a refused set exits 2 and leaves the tree byte for byte as it
// was; an accepted set writes every output, keeps links as links and FIFOs
// as FIFOs, and leaves no temporary file.
func TestOutputTargetProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 6))
	type command struct {
		name   string
		flags  []string
		args   func(f fixture, qrels, runFile string) []string
		input  func(f fixture, qrels, runFile string) string
		trials int
	}
	cmds := []command{
		{"run", []string{"--json", "--markdown", "--csv"}, func(f fixture, qrels, _ string) []string {
			return []string{"retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", qrels, "--quiet"}
		}, func(f fixture, qrels, _ string) string { return qrels }, 40},
		{"evaluate-run", []string{"--json", "--markdown", "--csv"}, func(_ fixture, qrels, runFile string) []string {
			return []string{"retrieval", "evaluate-run", "--qrels", qrels, "--run", runFile, "--quiet"}
		}, func(_ fixture, _, runFile string) string { return runFile }, 40},
		// The demo scores 5 million pairs per backbone: refused sets are
		// checked before any work and are cheap; accepted ones run it.
		{"demo", []string{"--json", "--markdown", "--csv"}, func(fixture, string, string) []string {
			return []string{"demo", "--quiet"}
		}, nil, 25},
	}
	for _, c := range cmds {
		demoRuns := 0
		for trial := 0; trial < c.trials; trial++ {
			n := 2 + rng.IntN(len(c.flags)-1)
			kinds := make([]targetKind, n)
			for i := range kinds {
				for {
					kinds[i] = targetKind(rng.IntN(int(nKinds)))
					if (kinds[i] == kindInput && c.input == nil) || (kinds[i] == kindDuplicate && i == 0) {
						continue
					}
					break
				}
			}
			refused := false
			for _, k := range kinds {
				refused = refused || k == kindDir || k == kindInput || k == kindDuplicate
			}
			if c.name == "demo" && !refused {
				if demoRuns > 0 || testing.Short() {
					continue
				}
				demoRuns++
			}
			t.Run(fmt.Sprintf("%s/%d/%v", c.name, trial, kinds), func(t *testing.T) {
				f := newFixture(t)
				qrels := f.qrels(t)
				runFile := writeFile(t, f.dir, "in.run", "0 Q0 0 1 1.0 r\n0 Q0 1 2 0.5 r\n1 Q0 2 1 0.9 r\n")
				args := c.args(f, qrels, runFile)
				var fifos []func() string
				var paths []string
				for i, k := range kinds {
					p := filepath.Join(f.dir, fmt.Sprintf("out%d", i))
					switch k {
					case kindFile:
						writeFile(t, f.dir, fmt.Sprintf("out%d", i), "old output")
					case kindDir:
						if err := os.Mkdir(p, 0o755); err != nil {
							t.Fatal(err)
						}
					case kindSymlink:
						writeFile(t, f.dir, fmt.Sprintf("real%d", i), "old target")
						if err := os.Symlink(fmt.Sprintf("real%d", i), p); err != nil {
							t.Fatal(err)
						}
					case kindFIFO:
						if err := mkfifo(p); err != nil {
							t.Fatal(err)
						}
						fifos = append(fifos, drainFIFO(t, p))
					case kindMissingDir:
						p = filepath.Join(f.dir, fmt.Sprintf("new%d", i), "sub", "out")
					case kindInput:
						p = c.input(f, qrels, runFile)
					case kindDuplicate:
						p = paths[i-1]
					}
					paths = append(paths, p)
					args = append(args, c.flags[i], p)
				}
				before := treesnap.Take(t, f.dir)
				code, _, stderr := run(t, args...)
				var read []string
				for _, done := range fifos {
					read = append(read, done())
				}
				if refused {
					if code != ExitUsage {
						t.Fatalf("exit %d, want 2: %s", code, stderr)
					}
					if !strings.Contains(stderr, "is a directory") && !strings.Contains(stderr, "would overwrite input") && !strings.Contains(stderr, "names the same file") {
						t.Fatalf("message: %s", stderr)
					}
					for _, r := range read {
						if r != "" {
							t.Fatalf("a refused set wrote %q to a FIFO", r)
						}
					}
					treesnap.Same(t, "the failed command", before, treesnap.Take(t, f.dir))
					return
				}
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				for i, k := range kinds {
					info, err := os.Lstat(paths[i])
					if err != nil {
						t.Fatal(err)
					}
					switch k {
					case kindSymlink:
						if info.Mode()&fs.ModeSymlink == 0 {
							t.Fatalf("%s: the link was replaced", paths[i])
						}
						if b, _ := os.ReadFile(paths[i]); len(b) == 0 || string(b) == "old target" {
							t.Fatalf("%s: the link target was not replaced: %q", paths[i], b)
						}
					case kindFIFO:
						if info.Mode()&fs.ModeNamedPipe == 0 {
							t.Fatalf("%s: the FIFO was replaced", paths[i])
						}
					default:
						if b, _ := os.ReadFile(paths[i]); !info.Mode().IsRegular() || len(b) == 0 || string(b) == "old output" {
							t.Fatalf("%s: not written (%v, %q)", paths[i], info.Mode(), b)
						}
					}
				}
				for _, r := range read {
					if r == "" {
						t.Fatal("nothing written to the FIFO")
					}
				}
				for p := range treesnap.Take(t, f.dir) {
					if strings.Contains(p, ".tmp-") {
						t.Fatalf("temporary file left: %s", p)
					}
				}
			})
		}
	}
}
