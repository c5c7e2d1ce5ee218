package runspec

import (
	"path/filepath"
	"strings"
	"testing"
)

// `store:` names the endpoint cache (SPEC §9.5): a plain path resolves
// against the run file's directory, a URI is kept, absent means none, and
// blank or non-string values fail with the line.
func TestStore(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "cache")
	base := filepath.Join("conf", "exp")
	for _, c := range []struct{ line, want, err string }{
		{"", "", ""},
		{"store: cache\n", filepath.Join(base, "cache"), ""},
		{"store: " + abs + "\n", abs, ""},
		{"store: s3://bucket/prefix\n", "s3://bucket/prefix", ""},
		{"store: mem://\n", "mem://", ""},
		{"store: file:///tmp/x\n", "file:///tmp/x", ""},
		{`store: " "` + "\n", "", "run.yaml:6: run file.store must not be blank"},
		{"store: [a]\n", "", "run.yaml:6"},
	} {
		text := "version: 1\ndataset:\n  queries: {path: q.npy}\n  gallery: {path: g.npy}\n  qrels: {path: r.tsv}\n" + c.line +
			"extractors:\n  - {name: pre, type: precomputed}\n"
		s, err := Parse(filepath.Join(base, "run.yaml"), []byte(text))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.line, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if s.Store != c.want {
			t.Errorf("%q: store %q, want %q", c.line, s.Store, c.want)
		}
	}
}
