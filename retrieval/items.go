package retrieval

import (
	"regexp"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Items is one endpoint's inputs (SPEC §9.1). Built-ins: embedding matrices
// (Embeddings); raw texts, images and custom collections come with the
// extractors.
type Items interface {
	Len() int
	Modality() string
	Slice(lo, hi int) Items
}

// ModalityEmbeddings is the modality of embedding-matrix endpoints.
const ModalityEmbeddings = "embeddings"

var modalityRe = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// EmbeddingItems is an endpoint given as an embedding matrix.
type EmbeddingItems struct{ m matrix.Matrix }

// Embeddings wraps a matrix as endpoint inputs.
func Embeddings(m matrix.Matrix) EmbeddingItems { return EmbeddingItems{m: m} }

// Len implements Items.
func (e EmbeddingItems) Len() int {
	if e.m == nil {
		return 0
	}
	return e.m.Rows()
}

// Modality implements Items.
func (e EmbeddingItems) Modality() string { return ModalityEmbeddings }

// Matrix returns the wrapped matrix (read-only).
func (e EmbeddingItems) Matrix() matrix.Matrix { return e.m }

// Slice implements Items.
func (e EmbeddingItems) Slice(lo, hi int) Items {
	switch t := e.m.(type) {
	case *matrix.Dense:
		return EmbeddingItems{m: t.RowSlice(lo, hi)}
	case *matrix.CSR:
		return EmbeddingItems{m: t.RowSlice(lo, hi)}
	}
	return EmbeddingItems{m: e.m}
}
