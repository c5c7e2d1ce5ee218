package runspec

import (
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse panic or return a nil spec
// without an error, and that errors always carry the file path.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		specExample, smallYAML, smallJSON, minimal, base,
		base + "compression: [{method: pca, n_components: 2}, {method: quantize, precision: int8}]\n",
		"a: &a [*a]\n", "a: &a {<<: *a}\n", "{", "version: 1\n---\nversion: 2\n", "- !!binary aGk=\n",
		"version: 1\ndataset: &d {queries: *d}\n",
		`{"version":1,"dataset":{"id":"\u00e9\/","revision":"\ud83d\ude00"},"extractors":[]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f/run.yaml", data)
		if err != nil {
			if s != nil {
				t.Fatal("spec returned with an error")
			}
			if !strings.HasPrefix(err.Error(), "f/run.yaml") {
				t.Fatalf("error without the path: %v", err)
			}
			return
		}
		if s == nil || s.Version != Version || len(s.Extractors) == 0 || len(s.Compression) == 0 {
			t.Fatalf("invalid spec accepted: %+v", s)
		}
	})
}
