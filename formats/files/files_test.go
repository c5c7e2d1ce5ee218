package files

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadTexts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, content string
		texts, ids          []string
		err                 string
	}{
		{"txt", "t.txt", "a cat\na dog\n", []string{"a cat", "a dog"}, nil, ""},
		{"jsonl strings", "t.jsonl", "\"a\"\n\n\"b\"\n", []string{"a", "b"}, nil, ""},
		{"jsonl objects with ids", "t.jsonl", `{"_id": "d1", "title": "T", "text": "x"}` + "\n" + `{"id": "d2", "text": "y"}` + "\n",
			[]string{"T x", "y"}, []string{"d1", "d2"}, ""},
		// IDs only when every row carries one: the first row has none.
		{"jsonl first row without id", "t.jsonl", `{"text": "x"}` + "\n" + `{"_id": "d2", "text": "y"}` + "\n", []string{"x", "y"}, nil, ""},
		{"jsonl last row without id", "t.jsonl", `{"_id": "d1", "text": "x"}` + "\n" + `"y"` + "\n", []string{"x", "y"}, nil, ""},
		{"duplicate id", "t.jsonl", `{"_id": "d1", "text": "x"}` + "\n" + `{"_id": "d1", "text": "y"}` + "\n", nil, nil,
			`t.jsonl:2: duplicate _id "d1" (first at line 1); IDs must be unique`},
		{"no text field", "t.jsonl", `{"_id": "d1"}` + "\n", nil, nil, `t.jsonl:1: object has no string "text" field`},
		{"malformed", "t.jsonl", "{\n", nil, nil, "t.jsonl:1: malformed JSON line"},
		{"number", "t.jsonl", "3\n", nil, nil, "t.jsonl:1: each line must be a JSON string or an object with a text field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, t.TempDir(), tc.file, tc.content)
			texts, ids, err := ReadTexts(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(texts, tc.texts) || !slices.Equal(ids, tc.ids) {
				t.Fatalf("got %q %q %v, want %q %q", texts, ids, err, tc.texts, tc.ids)
			}
		})
	}
	if _, _, err := ReadTexts(filepath.Join(dir, "missing.txt")); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestReadEndpointOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, _ := matrix.FromRows([][]float64{{1, 2}, {3, 4}})
	var buf bytes.Buffer
	if err := npy.WriteDense(&buf, m); err != nil {
		t.Fatal(err)
	}
	p := write(t, dir, "e.npy", buf.String())
	var closers Closers
	defer closers.Close()
	got, ids, err := ReadEndpoint(context.Background(), p, "", "", &closers)
	if err != nil || ids != nil || got.Rows() != 2 || got.Cols() != 2 {
		t.Fatalf("read: %v %v %v", got, ids, err)
	}
	// Options that do not fit the file are the caller's mistake.
	var oe *OptionError
	if _, _, err := ReadEndpoint(context.Background(), p, "", "doc_id", &closers); !errors.As(err, &oe) || !strings.Contains(err.Error(), "Parquet/Arrow files only") {
		t.Errorf("ID column on .npy: %v", err)
	}
	if _, err := ReadRelevance(context.Background(), p, "xml"); !errors.As(err, &oe) {
		t.Errorf("unknown qrels format: %v", err)
	}
	if _, err := ReadRelevance(context.Background(), filepath.Join(dir, "rel.unknown"), ""); !errors.As(err, &oe) {
		t.Errorf("qrels format from an unknown extension: %v", err)
	}
	// A tensor name for a one-array file, and an unknown extension, name the file.
	if _, err := ReadMatrix(context.Background(), p, "x", &closers); err == nil || !strings.Contains(err.Error(), p) || errors.As(err, &oe) {
		t.Errorf("tensor of .npy: %v", err)
	}
	bad := write(t, dir, "e.csv", "1,2\n")
	if _, err := ReadMatrix(context.Background(), bad, "", &closers); err == nil || !strings.Contains(err.Error(), `unsupported embedding file format ".csv"`) {
		t.Errorf("unknown extension: %v", err)
	}
}

func TestReadLabelsAndImageList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := write(t, dir, "labels.txt", "cat\ndog\ncat\n")
	labels, err := ReadLabels(context.Background(), l)
	if err != nil || !slices.Equal(labels, []string{"cat", "dog", "cat"}) {
		t.Fatalf("labels %q %v", labels, err)
	}
	list := write(t, dir, "images.txt", "a.png\n/abs/b.png\n")
	paths, err := ReadImageList(list)
	if err != nil || !slices.Equal(paths, []string{filepath.Join(dir, "a.png"), "/abs/b.png"}) {
		t.Fatalf("image list %q %v", paths, err)
	}
}

// FuzzParseTexts: any input either fails with an error naming the file or
// gives one text per non-blank line and, when IDs are returned, one
// non-empty unique ID per text.
func FuzzParseTexts(f *testing.F) {
	for _, s := range []string{"\"a\"\n", `{"_id": "1", "text": "x"}`, `{"text": 1}`, "plain\nlines\n", "\n\n"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, data string, jsonl bool) {
		name := "f.txt"
		if jsonl {
			name = "f.jsonl"
		}
		texts, ids, err := parseTexts(name, strings.NewReader(data))
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if ids == nil {
			return
		}
		if len(ids) != len(texts) || slices.Contains(ids, "") {
			t.Fatalf("ids %q for %d texts", ids, len(texts))
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate id %q returned", id)
			}
			seen[id] = true
		}
	})
}
