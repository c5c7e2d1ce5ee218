package local_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	stalefile "github.com/vertebrae-eval/vertebrae/internal/stale"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/local"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

func open(t *testing.T) *local.Store {
	t.Helper()
	s, err := local.Open(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := open(t)
		t.Cleanup(func() { noTempFiles(t, s.Root()) })
		return s
	})
}

// noTempFiles fails if any temporary file is left under root: every Put,
// failed or not, must clean up after itself.
func noTempFiles(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), local.TempPrefix) {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestObjectsAreFilesUnderRoot(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Put(ctx, "retrieval/relevance/ds/manifest.json", strings.NewReader("{}"), 2); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(s.Root(), "retrieval", "relevance", "ds", "manifest.json")
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "{}" {
		t.Fatalf("object file %s: %q, %v", p, b, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("object mode %v, want 0644", fi.Mode().Perm())
	}
	if !filepath.IsAbs(s.Root()) {
		t.Errorf("Root %q is not absolute", s.Root())
	}
}

func TestOpenDoesNotCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	s, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Stat(ctx, "x"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat in a missing root: %v", err)
	}
	for n, err := range s.List(ctx, "") {
		t.Fatalf("List of a missing root yielded %q, %v", n, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reading created the root: %v", err)
	}
	if err := s.Put(ctx, "a/b", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a", "b")); err != nil || string(b) != "x" {
		t.Fatalf("first Put did not create the root: %q %v", b, err)
	}
}

func TestOpenErrors(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, []byte("x"), 0o644)
	if _, err := local.Open(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Open(file) error = %v", err)
	}
	if _, err := local.Open(""); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
}

func TestRejectsEscapingNames(t *testing.T) {
	parent := t.TempDir()
	s, err := local.Open(filepath.Join(parent, "root"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bad := []struct{ name, reason string }{
		{"", "empty"},
		{"/etc/passwd", "starts with '/'"},
		{"../outside", `".." component`},
		{"a/../../outside", `".." component`},
		{"a/./b", `"." component`},
		{".", `"." component`},
		{"a//b", "empty component"},
		{"a/", "ends with '/'"},
		{`a\..\..\b`, `'\'`},
		{"a\x00b", "control character"},
		{"a\nb", "control character"},
		{"a\x7fb", "control character"},
		{"a\u0085b", "control character"},
		{"bad\xffutf8", "UTF-8"},
		{"a/" + local.TempPrefix + "x", "reserved"},
	}
	for _, tc := range bad {
		check := func(op string, err error) {
			t.Helper()
			var ine *store.InvalidNameError
			if !errors.As(err, &ine) || ine.Name != tc.name {
				t.Errorf("%s(%q) error = %v, want *store.InvalidNameError", op, tc.name, err)
				return
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("%s(%q) error %q does not say %q", op, tc.name, err, tc.reason)
			}
		}
		check("Put", s.Put(ctx, tc.name, strings.NewReader("x"), 1))
		_, err := s.Get(ctx, tc.name)
		check("Get", err)
		_, err = s.Stat(ctx, tc.name)
		check("Stat", err)
		check("Delete", s.Delete(ctx, tc.name))
	}
	// Nothing was written anywhere, inside or outside the root.
	ents, _ := os.ReadDir(parent)
	if len(ents) != 0 {
		t.Fatalf("rejected names created %v", ents)
	}
	for _, prefix := range []string{"../", "a/../", `a\b`, "/x/"[1:] + "\x00"} {
		for _, err := range s.List(ctx, prefix) {
			var ine *store.InvalidNameError
			if !errors.As(err, &ine) {
				t.Errorf("List(%q) error = %v, want *store.InvalidNameError", prefix, err)
			}
		}
	}
}

func TestTempFilesAreNotObjects(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Put(ctx, "k/manifest.json", strings.NewReader("v1"), 2); err != nil {
		t.Fatal(err)
	}
	// What a Put killed by SIGKILL leaves behind.
	stale := filepath.Join(s.Root(), "k", local.TempPrefix+"123456")
	if err := os.WriteFile(stale, []byte("half a manif"), 0o600); err != nil {
		t.Fatal(err)
	}
	staleDir := filepath.Join(s.Root(), local.TempPrefix+"dirlike")
	os.WriteFile(staleDir, nil, 0o600)
	var got []string
	for n, err := range s.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if !slices.Equal(got, []string{"k/manifest.json"}) {
		t.Fatalf("List = %q, want the temporary files skipped", got)
	}
	// A fresh temp file is kept (its Put may still be running)...
	if n, err := s.RemoveStaleTemp(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("RemoveStaleTemp(1h) = %d, %v; want 0", n, err)
	}
	// ...an old one is removed.
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(stale, old, old)
	os.Chtimes(staleDir, old, old)
	if n, err := s.RemoveStaleTemp(ctx, time.Hour); err != nil || n != 2 {
		t.Fatalf("RemoveStaleTemp(1h) = %d, %v; want 2", n, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale temp file still there: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Root(), "k", "manifest.json")); string(b) != "v1" {
		t.Fatalf("RemoveStaleTemp touched the object: %q", b)
	}
	// An old temporary file whose Put is alive (its lock is held) stays.
	if runtime.GOOS == "windows" {
		return // no advisory locks there: age decides
	}
	live, err := stalefile.CreateFile(filepath.Join(s.Root(), "k"), local.TempPrefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	os.Chtimes(live.Name(), old, old)
	if n, err := s.RemoveStaleTemp(ctx, 0); err != nil || n != 0 {
		t.Fatalf("RemoveStaleTemp removed %d (%v); a live Put's file must stay", n, err)
	}
	if _, err := os.Stat(live.Name()); err != nil {
		t.Fatalf("live temp file removed: %v", err)
	}
}

func TestNamePrefixConflict(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Put(ctx, "a/b", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	err := s.Put(ctx, "a/b/c", strings.NewReader("y"), 1)
	if err == nil || !strings.Contains(err.Error(), "is an object, not a directory") {
		t.Fatalf("Put below an object: %v", err)
	}
	err = s.Put(ctx, "a", strings.NewReader("y"), 1)
	if err == nil || !strings.Contains(err.Error(), "objects exist below this name") {
		t.Fatalf("Put over a prefix directory: %v", err)
	}
	if _, err := s.Stat(ctx, "a/b/c"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat through an object: %v", err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatalf("Delete of a directory name: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Root(), "a", "b")); string(b) != "x" {
		t.Fatal("Delete of a prefix removed objects")
	}
	noTempFiles(t, s.Root())
}

// A file source is copied by the kernel; the result must still be exact,
// and a short or long file still rejected.
func TestPutFromFile(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "src")
	const size = 3<<20 + 17
	f, _ := os.Create(src)
	io.Copy(f, storetest.NewGenerator(3, size))
	f.Close()
	for _, tc := range []struct {
		size int64
		ok   bool
	}{{size, true}, {-1, true}, {size + 1, false}, {size - 1, false}} {
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Put(ctx, "obj", f, tc.size)
		f.Close()
		if (err == nil) != tc.ok {
			t.Fatalf("Put(size %d) error = %v, want ok=%v", tc.size, err, tc.ok)
		}
	}
	rc, err := s.Get(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, _ := io.Copy(h, rc)
	rc.Close()
	if n != size || [32]byte(h.Sum(nil)) != storetest.GeneratedSHA256(3, size) {
		t.Fatalf("copied %d bytes, digest differs", n)
	}
	noTempFiles(t, s.Root())
}

// Put and Get stream: a 64 MiB object allocates a few MiB, not the object.
func TestStreamingMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation check streams 64 MiB; run without -short")
	}
	s := open(t)
	ctx := context.Background()
	const size = 64 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := s.Put(ctx, "big", storetest.NewGenerator(1, size), size); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Get(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	var n int64
	for {
		m, err := rc.Read(buf)
		n += int64(m)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	rc.Close()
	runtime.ReadMemStats(&after)
	if n != size {
		t.Fatalf("read %d bytes", n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("Put+Get of %d MiB allocated %d MiB: not streaming", size>>20, alloc>>20)
	}
}

// A failed overwrite leaves the old object's bytes and inode, and no
// temporary file.
func TestFailedOverwriteKeepsFile(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	s.Put(ctx, "k", strings.NewReader("old"), 3)
	for _, r := range []io.Reader{
		io.MultiReader(bytes.NewReader(make([]byte, 3<<20)), iotestErr{}),
		strings.NewReader("short"),
	} {
		if err := s.Put(ctx, "k", r, 4<<20); err == nil {
			t.Fatal("Put succeeded")
		}
		if b, _ := os.ReadFile(filepath.Join(s.Root(), "k")); string(b) != "old" {
			t.Fatalf("object = %q after a failed Put", b)
		}
	}
	noTempFiles(t, s.Root())
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("read failed") }

// The helper process for TestKilledMidPut: it overwrites the object with a
// stream that stalls after 1 MiB, says so, and waits to be killed.
func TestMain(m *testing.M) {
	if root := os.Getenv("VERTEBRAE_LOCAL_KILL_HELPER"); root != "" {
		s, err := local.Open(root)
		if err != nil {
			os.Exit(3)
		}
		r := io.MultiReader(bytes.NewReader(make([]byte, 1<<20)), stallReader{})
		s.Put(context.Background(), "k/manifest.json", r, 2<<20)
		os.Exit(4) // not reached: the stall never ends
	}
	os.Exit(m.Run())
}

// stallReader reports that the Put is under way, then blocks forever.
type stallReader struct{}

func (stallReader) Read([]byte) (int, error) {
	os.Stdout.WriteString("stalled\n")
	select {}
}

// A process killed with SIGKILL in the middle of a Put leaves the previous
// object intact and readable, and only an unlisted temporary file, which
// RemoveStaleTemp removes.
func TestKilledMidPut(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	if err := s.Put(ctx, "k/manifest.json", strings.NewReader("previous generation"), 19); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "VERTEBRAE_LOCAL_KILL_HELPER="+s.Root())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "stalled\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q, %v", line, err)
	}
	// The temporary file holds the first MiB now.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	rc, err := s.Get(ctx, "k/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "previous generation" {
		t.Fatalf("after the kill the object holds %d bytes", len(got))
	}
	var listed []string
	for n, err := range s.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, n)
	}
	if !slices.Equal(listed, []string{"k/manifest.json"}) {
		t.Fatalf("List = %q", listed)
	}
	temps, _ := filepath.Glob(filepath.Join(s.Root(), "k", local.TempPrefix+"*"))
	if len(temps) != 1 {
		t.Fatalf("temporary files after the kill: %q, want exactly one", temps)
	}
	if fi, _ := os.Stat(temps[0]); fi.Size() != 1<<20 {
		t.Fatalf("temporary file has %d bytes, want the 1 MiB written before the kill", fi.Size())
	}
	if n, err := s.RemoveStaleTemp(ctx, 0); err != nil || n != 1 {
		t.Fatalf("RemoveStaleTemp = %d, %v", n, err)
	}
	noTempFiles(t, s.Root())
}
