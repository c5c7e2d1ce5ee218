package npz

import (
	"bytes"
	"testing"
)

// BenchmarkSparseRelevance2x1M reads a 2 × 1,000,000 relevance matrix with
// three stored entries: cost must follow the entries, not the shape.
func BenchmarkSparseRelevance2x1M(b *testing.B) {
	var buf bytes.Buffer
	if err := WriteSparseRelevance(&buf, &SparseRelevance{Rows: 2, Cols: 1_000_000,
		Indptr: []int64{0, 2, 3}, Indices: []int64{999_999, 5, 0}, Data: []float64{1, 2, 3}}); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.ResetTimer()
	for b.Loop() {
		a, err := Decode("rel.npz", data)
		if err != nil {
			b.Fatal(err)
		}
		r, err := a.CSRRelevance()
		if err != nil || r.Cols != 1_000_000 || len(r.Data) != 3 {
			b.Fatal(r, err)
		}
	}
}
