package idlist

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/vertebrae-eval/vertebrae/formats"
)

func TestParseIDs(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty file", "", []string{}},
		{"one without LF", "a", []string{"a"}},
		{"final LF ignored", "a\nb\n", []string{"a", "b"}},
		{"CRLF", "a\r\nb\r\n", []string{"a", "b"}},
		{"no trimming", " a \n\tb\t\n", []string{" a ", "\tb\t"}},
		{"only one CR stripped", "a\r\r\n", []string{"a\r"}},
		{"lone CR kept", "a\rb\nc\r", []string{"a\rb", "c\r"}},
		{"byte exact", "1\n01\n1.0\né\n", []string{"1", "01", "1.0", "é"}},
		{"whitespace only ID", " \n", []string{" "}},
		{"BOM later is kept", "a\n\ufeffb\n", []string{"a", "\ufeffb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseIDs("ids.txt", strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseIDsErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		frag     []string
	}{
		{"empty first line", "\na\n", 1, []string{"IDs must be non-empty"}},
		{"empty middle line", "a\n\nb\n", 2, []string{"IDs must be non-empty UTF-8 strings"}},
		{"two final LFs", "a\n\n", 2, []string{"IDs must be non-empty"}},
		{"lone LF", "\n", 1, []string{"IDs must be non-empty"}},
		{"CRLF empty line", "a\r\n\r\nb", 2, []string{"IDs must be non-empty"}},
		{"BOM", "\ufeffa\nb\n", 1, []string{"byte order mark"}},
		{"invalid UTF-8", "a\nb\xff\n", 2, []string{"IDs must be non-empty UTF-8 strings", "invalid UTF-8"}},
		{"surrogate", "a\n\xed\xa0\x80\n", 2, []string{"IDs must be non-empty UTF-8 strings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseIDs("ids.txt", strings.NewReader(tt.in))
			checkLineError(t, err, "ids.txt", tt.line, tt.frag...)
		})
	}
}

func checkLineError(t *testing.T, err error, path string, line int, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("want error, got nil")
	}
	var fe *formats.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %q (%T) is not a *formats.Error", err, err)
	}
	if fe.Path != path || fe.Line != line {
		t.Errorf("error %q: want %s:%d", err, path, line)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

func TestParseIDsLongLines(t *testing.T) {
	long := strings.Repeat("é", 300_000) // 600 KB, well past bufio.Scanner's default limit
	in := "a\n" + long + "\r\nb"
	// One byte per Read also exercises partial reads.
	got, err := ParseIDs("ids.txt", iotest.OneByteReader(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1] != long || got[2] != "b" {
		t.Fatal("long line not read intact")
	}
}

func TestParseIDsReadError(t *testing.T) {
	r := iotest.DataErrReader(iotest.ErrReader(errors.New("boom")))
	_, err := ParseIDs("ids.txt", r)
	if err == nil || !strings.Contains(err.Error(), "boom") || !formats.IsInputError(err) {
		t.Fatalf("err = %v", err)
	}
}

func TestReadIDs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ids.txt")
	if err := os.WriteFile(path, []byte("q0\nq1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadIDs(path)
	if err != nil || !reflect.DeepEqual(got, []string{"q0", "q1"}) {
		t.Fatalf("got %q, %v", got, err)
	}
	_, err = ReadIDs(filepath.Join(dir, "missing.txt"))
	if !errors.Is(err, fs.ErrNotExist) || !formats.IsInputError(err) || !strings.Contains(err.Error(), "missing.txt") {
		t.Fatalf("missing file: err = %v", err)
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		name, ext, in string
		want          []string
	}{
		{"txt", ".txt", "cat\ndog\r\ncat", []string{"cat", "dog", "cat"}},
		{"txt no dot, upper case", "TXT", " a\n", []string{" a"}},
		{"jsonl strings", ".jsonl", "\"cat\"\n\"dog\"\n", []string{"cat", "dog"}},
		{"jsonl integers", ".jsonl", "1\n-2\n-0\n12345678901234567890123\n", []string{"1", "-2", "0", "12345678901234567890123"}},
		{"jsonl mixed blank", ".NDJSON", "  \"a b\"  \r\n\n3\n", []string{"a b", "3"}},
		{"jsonl empty", ".jsonl", "", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLabels("labels", tt.ext, strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseLabelsErrors(t *testing.T) {
	const single = "label-derived relevance is single-label"
	tests := []struct {
		name, ext, in string
		line          int
		frag          []string
	}{
		{"txt empty line", ".txt", "a\n\nb", 2, []string{"labels must be non-empty"}},
		{"txt BOM", ".txt", "\ufeffa", 1, []string{"byte order mark"}},
		{"txt invalid UTF-8", ".txt", "\xc3", 1, []string{"UTF-8"}},
		{"jsonl array", ".jsonl", "\"a\"\n[\"a\", \"b\"]\n", 2, []string{single}},
		{"jsonl single-element array", ".jsonl", "[1]", 1, []string{single}},
		{"jsonl object", ".jsonl", "{\"label\": \"a\"}", 1, []string{"got an object"}},
		{"jsonl float", ".jsonl", "1.5", 1, []string{"string or integer", "1.5"}},
		{"jsonl exponent", ".jsonl", "1e2", 1, []string{"string or integer"}},
		{"jsonl null", ".jsonl", "\"a\"\nnull", 2, []string{"got null"}},
		{"jsonl bool", ".jsonl", "true", 1, []string{"got true"}},
		{"jsonl bare word", ".jsonl", "cat", 1, []string{"malformed JSON"}},
		{"jsonl two values", ".jsonl", "\"a\" \"b\"", 1, []string{"unexpected data"}},
		{"jsonl leading zero", ".jsonl", "01", 1, []string{"unexpected data"}},
		{"jsonl empty string", ".jsonl", "\"\"", 1, []string{"labels must be non-empty"}},
		{"jsonl invalid UTF-8", ".jsonl", "\"a\xff\"", 1, []string{"invalid UTF-8"}},
		{"jsonl BOM", ".jsonl", "\ufeff\"a\"", 1, []string{"byte order mark"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseLabels("labels", tt.ext, strings.NewReader(tt.in))
			checkLineError(t, err, "labels", tt.line, tt.frag...)
		})
	}
}

func TestParseLabelsUnsupported(t *testing.T) {
	for _, ext := range []string{".npy", ".csv", ""} {
		_, err := ParseLabels("labels"+ext, ext, strings.NewReader("a\n"))
		if err == nil || !formats.IsInputError(err) {
			t.Errorf("ext %q: err = %v", ext, err)
		}
	}
}

func TestReadLabels(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "labels.JSONL")
	if err := os.WriteFile(path, []byte("\"a\"\n7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLabels(path)
	if err != nil || !reflect.DeepEqual(got, []string{"a", "7"}) {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := ReadLabels(filepath.Join(dir, "labels.npy")); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("npy: err = %v, want a format error before opening", err)
	}
}

func TestParseJSONIDs(t *testing.T) {
	in := `{"_id": "doc1", "title": "", "text": "hello"}` + "\n" +
		`{"id": 7, "text": "x"}` + "\n\n" + `"plain"` + "\n" + `42` + "\n"
	got, err := ParseJSONIDs("corpus.jsonl", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"doc1", "7", "plain", "42"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q", got)
	}
	for _, bad := range []string{`{"text": "no id"}`, `{"_id": 1.5}`, `{"_id": ""}`, `{"_id": "a"`, `[1]`} {
		if _, err := ParseJSONIDs("q.jsonl", strings.NewReader(bad+"\n")); err == nil || !strings.Contains(err.Error(), "q.jsonl:1:") {
			t.Errorf("%s: got %v", bad, err)
		}
	}
}

func TestParseTSVIDs(t *testing.T) {
	got, err := ParseTSVIDs("ids.tsv", strings.NewReader("_id\ttitle\nd1\tfirst\nd 2\tsecond\n"))
	if err != nil || strings.Join(got, "|") != "d1|d 2" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := ParseTSVIDs("ids.tsv", strings.NewReader("a\tx\n\ty\n")); err == nil || !strings.Contains(err.Error(), "ids.tsv:2:") {
		t.Fatalf("got %v", err)
	}
}
