package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dirNames lists a directory so tests can assert no temporary file is left.
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

func TestWrite(t *testing.T) {
	tests := []struct {
		name     string
		existing *string // content present before the write
	}{
		{"new file", nil},
		{"replaces existing", ptr("old content\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.json")
			if tc.existing != nil {
				if err := os.WriteFile(path, []byte(*tc.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := Write(path, []byte("new\n")); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != "new\n" {
				t.Errorf("content = %q", got)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o644 {
				t.Errorf("mode = %v, want 0644", st.Mode().Perm())
			}
			if names := dirNames(t, dir); len(names) != 1 || names[0] != "out.json" {
				t.Errorf("directory holds %v, want only out.json", names)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestWriteCreatesParents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "report.md")
	if err := Write(path, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "x" {
		t.Errorf("content = %q", got)
	}
	if err := WriteFunc(filepath.Join(filepath.Dir(path), "c", "r.run"), func(w io.Writer) error {
		_, err := io.WriteString(w, "y")
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func TestWriteFunc(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.run")
	line := strings.Repeat("q Q0 d 1 0.5 tag\n", 10000) // larger than the buffer
	if err := WriteFunc(path, func(w io.Writer) error {
		_, err := io.WriteString(w, line)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != line {
		t.Errorf("content has %d bytes, want %d", len(got), len(line))
	}
}

func TestWriteFuncFailureKeepsTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFunc(path, func(w io.Writer) error {
		// Enough to reach the file, so a partial temp file exists.
		if _, err := io.WriteString(w, strings.Repeat("partial\n", 20000)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the path", err)
	}
	if got := readFile(t, path); got != "old\n" {
		t.Errorf("target changed to %q", got)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only out.csv", names)
	}
}

func TestWriteFailureRemovesTemp(t *testing.T) {
	// Renaming a file over a non-empty directory fails after the data has
	// been written; the temp file must still be removed.
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(target, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Write(target, []byte("x"))
	if err == nil {
		t.Fatal("want error writing over a directory")
	}
	if !strings.Contains(err.Error(), target) {
		t.Errorf("error %q does not name the path", err)
	}
	if names := dirNames(t, target); len(names) != 1 || names[0] != "child" {
		t.Errorf("target directory holds %v", names)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("parent directory holds %v", names)
	}
}

func TestWriteEmptyPath(t *testing.T) {
	if err := Write("", nil); err == nil {
		t.Fatal("want error for empty path")
	}
}
