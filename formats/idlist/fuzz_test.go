package idlist

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/formats"
)

func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"a\nb\n", "a\r\n\r\n", "\ufeffa", "a\xff", " a \t\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ids, err := ParseIDs("ids", bytes.NewReader(data))
		if err != nil {
			var fe *formats.Error
			if !errors.As(err, &fe) || fe.Line < 1 {
				t.Fatalf("error %q is not a line error", err)
			}
			return
		}
		for _, id := range ids {
			if id == "" || !utf8.ValidString(id) || strings.Contains(id, "\n") {
				t.Fatalf("bad ID %q accepted", id)
			}
		}
		// Joining the IDs gives back the input, up to line terminators.
		want := strings.TrimSuffix(stripTerminators(string(data)), "\n")
		if got := strings.Join(ids, "\n"); got != want {
			t.Fatalf("IDs %q do not reassemble the input %q", ids, data)
		}
	})
}

// stripTerminators rewrites each CRLF terminator (the CR directly before an
// LF) to LF, as the reader does.
func stripTerminators(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if strings.HasSuffix(l, "\r\n") {
			lines[i] = l[:len(l)-2] + "\n"
		}
	}
	return strings.Join(lines, "")
}

func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{"\"a\"\n1\n", "[1]\n", "{}", "1.5", "null", "a\n\nb", "-0\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ext := range []string{".txt", ".jsonl"} {
			labels, err := ParseLabels("labels", ext, bytes.NewReader(data))
			if err != nil {
				var fe *formats.Error
				if !errors.As(err, &fe) || fe.Line < 1 {
					t.Fatalf("%s: error %q is not a line error", ext, err)
				}
				continue
			}
			for _, l := range labels {
				if l == "" || !utf8.ValidString(l) {
					t.Fatalf("%s: bad label %q accepted", ext, l)
				}
			}
		}
	})
}

func FuzzParseJSONIDs(f *testing.F) {
	for _, s := range []string{`{"_id": "d1", "text": "x"}` + "\n", `{"id": 3}` + "\n", `"a"` + "\n7\n", "{\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ids, err := ParseJSONIDs("ids.jsonl", bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, id := range ids {
			if id == "" || !utf8.ValidString(id) {
				t.Fatalf("invalid ID %q accepted", id)
			}
		}
	})
}
