package runspec

import (
	"context"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/files"
)

// Errors about a dataset section's endpoint name the run file when there is
// one, and only the section for a section given in Go.
func TestSectionErrorsNameTheSource(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		source string
		d      Dataset
		want   string
	}{
		{"", Dataset{}, "dataset.queries needs a path or an ids file"},
		{"run.yaml", Dataset{}, "run.yaml: dataset.queries needs a path or an ids file"},
		{"", Dataset{Queries: Endpoint{Modality: "audio", Path: "a.txt"}}, `dataset.queries: modality "audio" has no built-in reader (use text, image or embeddings)`},
		{"run.yaml", Dataset{Queries: Endpoint{Modality: "audio", Path: "a.txt"}}, `run.yaml: dataset.queries: modality "audio" has no built-in reader (use text, image or embeddings)`},
	} {
		var closers files.Closers
		_, err := LoadDataset(context.Background(), &tc.d, LoadOptions{Source: tc.source}, &closers)
		closers.Close()
		if err == nil || err.Error() != tc.want {
			t.Errorf("source %q: err = %v, want %q", tc.source, err, tc.want)
		}
	}
	var closers files.Closers
	defer closers.Close()
	if _, _, err := LoadTable(context.Background(), Endpoint{Modality: "text", Path: "t.txt"}, "gallery", LoadOptions{}, &closers); err == nil ||
		err.Error() != `dataset.gallery: a table has modality embeddings, not "text"` {
		t.Errorf("LoadTable of texts: %v", err)
	}
}
