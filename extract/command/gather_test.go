package command

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// A modulo shard's gathered batch (extract.Batch with Stride N) sends each
// row's true endpoint index to the program, in every sub-batch.
func TestEncodeGatheredBatch(t *testing.T) {
	recPath := filepath.Join(t.TempDir(), "rec.jsonl")
	e := newExtractor(t, Config{BatchSize: 2}, "-record", recPath)
	texts := retrieval.Texts{"a", "bb", "ccc", "abab", "cabbage"}
	ids := []string{"g3", "g7", "g11", "g15", "g19"}
	b := extract.Batch{Side: "gallery", Start: 3, Stride: 4, Items: texts, IDs: ids}
	m, err := e.AsExtractor().(extract.Encoder).Encode(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]float64, len(texts))
	for i, s := range texts {
		want[i] = textVector(s, 3+4*i)
	}
	d, ok := m.(*matrix.Dense)
	if !ok {
		t.Fatalf("%T, want a dense matrix", m)
	}
	checkRows(t, d, want)
	recs := readRecords(t, recPath)
	if len(recs) != 3 {
		t.Fatalf("%d processes, want 3", len(recs))
	}
	if got := recs[1].Stdin[0]; !strings.Contains(got, `"index":11,"id":"g11"`) {
		t.Errorf("second process's first row %s, want index 11 (ID g11)", got)
	}
}
