package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/formats/idlist"

	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/internal/testutil/treesnap"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
)

// faultEnv is a directory of inputs plus previous outputs that every failing
// command must leave byte for byte as they were (SPEC §6.1, §12).
type faultEnv struct {
	dir, q, g, qrels, ids, gids, runFile string
}

func newFaultEnv(t *testing.T) faultEnv {
	t.Helper()
	f := newFixture(t)
	e := faultEnv{dir: f.dir, q: f.q, g: f.g}
	e.qrels = writeFile(t, f.dir, "rel.tsv", "a\tx\t3\na\ty\t1\nb\tz\t2\n")
	e.ids = writeFile(t, f.dir, "q.ids", "a\nb\n")
	e.gids = writeFile(t, f.dir, "g.ids", "x\ny\nz\n")
	e.runFile = writeFile(t, f.dir, "in.run", "a Q0 x 1 1.0 r\na Q0 y 2 0.5 r\nb Q0 z 1 0.9 r\n")
	// Previous outputs, to be kept byte for byte.
	writeFile(t, f.dir, "old.json", "OLD JSON\n")
	writeFile(t, f.dir, "old.md", "OLD MARKDOWN\n")
	writeFile(t, f.dir, "old.run", "OLD RUN\n")
	writeFile(t, f.dir, "a-file", "not a directory\n")
	return e
}

func (e faultEnv) p(name string) string { return filepath.Join(e.dir, name) }

func (e faultEnv) runArgs(extra ...string) []string {
	return append([]string{"retrieval", "run", "--queries", e.q, "--gallery", e.g, "--query-ids", e.ids, "--gallery-ids", e.gids, "--qrels", e.qrels, "--quiet"}, extra...)
}

// writeWideCSR writes a 2-row CSR .npz whose declared width is 3·10⁹ with
// two stored values: tiny on disk, absurd as a dense scratch per worker.
func writeWideCSR(t *testing.T, dir, name string) string {
	t.Helper()
	m, err := matrix.NewCSR64(2, 3_000_000_000, []int64{0, 1, 2}, []int32{0, 7}, []float64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := npz.WriteCSR(&buf, m); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, buf.String())
}

// TestFaultInjection covers the defects of issue 14 with the exact exit
// code and message fragment, and checks that the failed command created,
// replaced or left nothing: the directory (inputs, previous outputs) is
// byte for byte what it was, with no temporary file or new directory.
func TestFaultInjection(t *testing.T) {
	cases := []struct {
		name string
		args func(t *testing.T, e faultEnv) []string
		code int
		frag string
	}{
		// 1. The output set is committed as one.
		{"1 second output fails (disk full)", func(t *testing.T, e faultEnv) []string {
			full := e.p("full") // a device of its own: the host's /dev/full is never a target
			if err := mknodChar(full, 1, 7); err != nil {
				t.Skipf("mknod (needs root): %v", err)
			}
			return e.runArgs("--json", e.p("old.json"), "--run", e.p("new/dir/r.run"), "--markdown", full)
		}, 1, "no space left on device"},
		{"1 parent path is a file", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--json", e.p("old.json"), "--csv", e.p("a-file/x.csv"))
		}, 2, "a-file is not a directory"},
		{"1 --run must become a directory", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--json", e.p("old.json"), "--run", e.p("old.run"), "--compress", "quantize:int8")
		}, 2, "old.run: exists and is not a directory"},
		{"1 output is a directory", func(t *testing.T, e faultEnv) []string {
			os.Mkdir(e.p("adir"), 0o755)
			return e.runArgs("--json", e.p("old.json"), "--markdown", e.p("adir"))
		}, 2, "is a directory; give a file path"},
		// 3. Outputs overwriting inputs or each other.
		{"3 --csv names the qrels", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--csv", e.qrels, "--json", e.p("old.json"))
		}, 2, "would overwrite input"},
		{"3 --json names the embeddings through a symlink", func(t *testing.T, e faultEnv) []string {
			if err := os.Symlink("q.npy", e.p("link.npy")); err != nil {
				t.Fatal(err)
			}
			return e.runArgs("--json", e.p("link.npy"))
		}, 2, "would overwrite input"},
		{"3 --json and --csv name one file", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--json", e.p("old.json"), "--csv", e.p("./old.json"))
		}, 2, "names the same file as --json"},
		{"3 evaluate-run output names the run", func(t *testing.T, e faultEnv) []string {
			return []string{"retrieval", "evaluate-run", "--qrels", e.qrels, "--run", e.runFile, "--json", e.runFile}
		}, 2, "would overwrite input"},
		// 4. Unbounded allocations are checked.
		{"4 CSR width 3e9", func(t *testing.T, e faultEnv) []string {
			q, g := writeWideCSR(t, e.dir, "wq.npz"), writeWideCSR(t, e.dir, "wg.npz")
			gids := writeFile(t, e.dir, "g2.ids", "x\ny\n")
			qrels := writeFile(t, e.dir, "rel2.tsv", "a\tx\t1\nb\ty\t1\n")
			return []string{"retrieval", "run", "--queries", q, "--gallery", g, "--query-ids", e.ids, "--gallery-ids", gids, "--qrels", qrels,
				"--max-memory-bytes", "1GiB", "--json", e.p("old.json")}
		}, 1, "memory budget"},
		{"4 full ranking export over budget", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--max-memory-bytes", "100", "--run", e.p("old.run"), "--run-depth", "0", "--json", e.p("old.json"))
		}, 1, "exceeding the memory budget of 100 bytes"},
		{"4 bench with absurd sizes", func(t *testing.T, e faultEnv) []string {
			return []string{"bench", "--queries", "1000000000", "--gallery", "1000000000", "--dim", "1000000", "--calibrate", "0"}
		}, 1, "memory budget"},
		{"4 sparse bench wider than int32 columns", func(t *testing.T, e faultEnv) []string {
			return []string{"bench", "--queries", "10", "--gallery", "10", "--dim", "3000000000", "--nnz", "5", "--calibrate", "0"}
		}, 2, "--dim must be at most 2147483647 for a sparse problem"},
		{"4 bootstrap past any budget", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--bootstrap", "2000000000", "--json", e.p("old.json"))
		}, 2, "--bootstrap must lie in [1, 100000000], got 2000000000"},
		{"9 bootstrap 0 is not the default", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--bootstrap", "0", "--json", e.p("old.json"))
		}, 2, "--bootstrap must lie in [1, 100000000], got 0"},
		{"9 an int flag says what is wrong", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--threads", "two", "--json", e.p("old.json"))
		}, 2, `invalid argument "two" for "--threads" flag: not a whole number`},
		{"9 --plots and --html on one path", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--plots", e.p("same"), "--html", e.p("same"))
		}, 2, "names the same path as --html"},
		{"9 missing --config file is an input error", func(t *testing.T, e faultEnv) []string {
			return []string{"retrieval", "score", "--query-key", "q", "--gallery-key", "g", "--relevance-key", "r", "--config", e.p("missing.yaml"), "--store", e.p("store")}
		}, 1, "missing.yaml: cannot read config"},
		// 5. Precomputed tables must match the endpoint.
		{"5 precomputed table longer than the endpoint", func(t *testing.T, e faultEnv) []string {
			writeNPY(t, e.dir, "g4.npy", [][]float64{{1, 0}, {0.7, 0.7}, {0, 1}, {1, 1}})
			spec := writeFile(t, e.dir, "run.yaml", "version: 1\ndataset:\n  queries: {ids: q.ids}\n  gallery: {ids: g.ids}\n  qrels: {path: rel.tsv}\n"+
				"extractors:\n  - {name: tables, type: precomputed, queries: q.npy, gallery: g4.npy}\noutputs: {json: old.json}\n")
			return []string{"retrieval", "run", "--spec", spec, "--quiet"}
		}, 1, "Retriever 'tables' gallery embeddings returned 4 embeddings for 3 rows"},
		// 7. Run-file memory: and compression: errors are usage errors.
		{"7 run-file memory error", func(t *testing.T, e faultEnv) []string {
			spec := writeFile(t, e.dir, "run.yaml", "version: 1\ndataset:\n  queries: {path: q.npy, ids: q.ids}\n  gallery: {path: g.npy, ids: g.ids}\n  qrels: {path: rel.tsv}\n"+
				"memory: {max_fraction: 2}\nextractors:\n  - {name: t, type: precomputed}\noutputs: {json: old.json}\n")
			return []string{"retrieval", "run", "--spec", spec}
		}, 2, "MemoryConfig.max_fraction"},
		{"7 run-file compression error", func(t *testing.T, e faultEnv) []string {
			spec := writeFile(t, e.dir, "run.yaml", "version: 1\ndataset:\n  queries: {path: q.npy, ids: q.ids}\n  gallery: {path: g.npy, ids: g.ids}\n  qrels: {path: rel.tsv}\n"+
				"compression:\n  - {method: pca, n_components: -1}\nextractors:\n  - {name: t, type: precomputed}\noutputs: {json: old.json}\n")
			return []string{"retrieval", "run", "--spec", spec}
		}, 2, "CompressionConfig.n_components"},
		// 8. Messages name the file.
		{"8 empty ID file", func(t *testing.T, e faultEnv) []string {
			return []string{"retrieval", "run", "--queries", e.q, "--gallery", e.g, "--query-ids", writeFile(t, e.dir, "empty.ids", ""), "--qrels", e.qrels, "--json", e.p("old.json")}
		}, 1, "empty.ids: query IDs must not be empty"},
		{"8 duplicate IDs", func(t *testing.T, e faultEnv) []string {
			return []string{"retrieval", "run", "--queries", e.q, "--gallery", e.g, "--query-ids", writeFile(t, e.dir, "dup.ids", "a\na\n"), "--qrels", e.qrels, "--json", e.p("old.json")}
		}, 1, `dup.ids: query IDs must be unique; "a" appears at index 0 and 1`},
		{"8 zero-width matrix", func(t *testing.T, e faultEnv) []string {
			z, err := matrix.NewDense64(2, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			return []string{"retrieval", "run", "--queries", writeMatrix(t, e.dir, "z.npy", z), "--gallery", e.g, "--qrels", e.qrels, "--json", e.p("old.json")}
		}, 1, "z.npy: Query embeddings must be a 2D array with at least one column"},
		{"8 empty qrels", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--qrels", writeFile(t, e.dir, "empty.tsv", ""), "--json", e.p("old.json"))
		}, 1, "empty.tsv: no relevance records"},
		{"8 CR-only ID file", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--query-ids", writeFile(t, e.dir, "cr.ids", "a\rb\r"), "--json", e.p("old.json"))
		}, 1, "CR-only"},
		{"8 ID with trailing white space", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--query-ids", writeFile(t, e.dir, "ws.ids", "a \nb\n"), "--json", e.p("old.json"))
		}, 1, "differ only by surrounding white space"},
		{"8 duplicate _id in JSONL", func(t *testing.T, e faultEnv) []string {
			writeFile(t, e.dir, "c.jsonl", `{"_id": "x", "text": "a"}`+"\n"+`{"_id": "x", "text": "b"}`+"\n")
			spec := writeFile(t, e.dir, "run.yaml", "version: 1\ndataset:\n  queries: {modality: text, path: c.jsonl}\n  gallery: {modality: text, path: c.jsonl}\n  qrels: {path: rel.tsv}\n"+
				"extractors:\n  - {name: t, type: command, command: [cat], modality: text}\noutputs: {json: old.json}\n")
			return []string{"retrieval", "run", "--spec", spec}
		}, 1, `c.jsonl:2: duplicate _id "x" (first at line 1)`},
		// 11. evaluate-run: a grouped run is required, and the message says how.
		{"11 non-contiguous run", func(t *testing.T, e faultEnv) []string {
			return []string{"retrieval", "evaluate-run", "--qrels", e.qrels, "--run", writeFile(t, e.dir, "nc.run", "a Q0 x 1 1 r\nb Q0 z 1 1 r\na Q0 y 2 0 r\n"), "--json", e.p("old.json")}
		}, 1, "LC_ALL=C sort -s -k1,1"},
		// 12. Byte sizes.
		{"12 bad byte size", func(t *testing.T, e faultEnv) []string {
			return e.runArgs("--max-memory-bytes", "4X", "--json", e.p("old.json"))
		}, 2, `"4X" is not a byte count`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newFaultEnv(t)
			args := c.args(t, e)
			before := treesnap.Take(t, e.dir)
			code, stdout, stderr := run(t, args...)
			if code != c.code || !strings.Contains(stderr, c.frag) || !strings.HasPrefix(stderr, "vertebrae: ") {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.frag)
			}
			t.Logf("stderr: %s", stderr)
			if strings.Contains(stderr, "strconv") || strings.Contains(stderr, "goroutine") {
				t.Fatalf("Go internals in the message: %q", stderr)
			}
			if stdout != "" {
				t.Fatalf("stdout %q on failure", stdout)
			}
			treesnap.Same(t, "the failed command", before, treesnap.Take(t, e.dir))
		})
	}
}

// TestInterruptedSaysInterrupted: a cancelled run exits 130 with
// "interrupted", not Go's "context canceled", and writes nothing.
func TestInterruptedSaysInterrupted(t *testing.T) {
	e := newFaultEnv(t)
	before := treesnap.Take(t, e.dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := Run(ctx, e.runArgs("--json", e.p("old.json"), "--compress", "pca:1"), &out, &errb)
	if code != ExitInterrupted || errb.String() != "vertebrae: interrupted\n" {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	treesnap.Same(t, "the failed command", before, treesnap.Take(t, e.dir))
}

// TestByteSizeFlag: --max-memory-bytes takes the suffixes people type.
func TestByteSizeFlag(t *testing.T) {
	e := newFaultEnv(t)
	if code, _, stderr := run(t, e.runArgs("--max-memory-bytes", "4GiB")...); code != 0 {
		t.Fatalf("--max-memory-bytes 4GiB: exit %d: %s", code, stderr)
	}
}

// TestMemoryGuardSetsSoftLimit: the budget becomes the runtime's soft
// memory limit (never below minSoftLimit) and travels in the context;
// restore puts the previous limit back.
func TestMemoryGuardSetsSoftLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	ctx, restore := withMemoryGuard(context.Background(), 3<<30)
	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Errorf("soft limit %d, want %d", got, int64(3<<30))
	}
	if l, ok := memory.LimitOf(ctx); !ok || l != 3<<30 {
		t.Errorf("context budget %d %v", l, ok)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Errorf("restored %d, want %d", got, prev)
	}
	_, restore = withMemoryGuard(context.Background(), 1000)
	if got := debug.SetMemoryLimit(-1); got != minSoftLimit {
		t.Errorf("tiny budget: soft limit %d, want the floor %d", got, minSoftLimit)
	}
	restore()
}

// TestMemoryGuardLimitFollowsLiveHeap: a live heap above the budget raises
// the soft limit after a collection to twice the live heap (the collector
// would otherwise run back to back); once restored, the previous limit
// stays, whatever collections follow.
func TestMemoryGuardLimitFollowsLiveHeap(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	_, restore := withMemoryGuard(context.Background(), minSoftLimit)
	live := make([]byte, 3*minSoftLimit) // 192 MiB live, three times the budget
	for i := range live {
		live[i] = byte(i)
	}
	var got int64
	for range 50 { // the cleanup runs on its own goroutine after a collection
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		if got = debug.SetMemoryLimit(-1); got >= 2*int64(len(live)) {
			break
		}
	}
	if got < 2*int64(len(live)) {
		t.Errorf("soft limit %d with %d bytes live, want at least twice that", got, len(live))
	}
	runtime.KeepAlive(live)
	restore()
	for range 3 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Errorf("after restore: soft limit %d, want %d", got, prev)
	}
}

// TestIDColumnDuplicatesNameTheColumn: duplicate IDs of a Parquet/Arrow ID
// column are reported with the file and column.
func TestIDColumnDuplicatesNameTheColumn(t *testing.T) {
	err := idlist.Check("gallery", "g.parquet column doc_id", []string{"d1", "d2", "d1"}, true)
	if err == nil || err.Error() != `g.parquet column doc_id: gallery IDs must be unique; "d1" appears at index 0 and 2` {
		t.Fatalf("err = %v", err)
	}
}
