package retrieval

import (
	"encoding/binary"
	"fmt"
	"os"
	"regexp"

	"github.com/vertebrae-eval/vertebrae/internal/chunkdigest"
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
type EmbeddingItems struct {
	m      matrix.Matrix
	digest *knownDigest // nil: hash m (see EmbeddingsWithDigest)
}

// knownDigest is a pointer so that EmbeddingItems stays comparable.
type knownDigest struct{ get func() map[string]any }

// Embeddings wraps a matrix as endpoint inputs.
func Embeddings(m matrix.Matrix) EmbeddingItems { return EmbeddingItems{m: m} }

// EmbeddingsWithDigest is Embeddings whose SPEC §2.9 endpoint digest, when a
// content identity needs it, comes from digest instead of hashing m: a
// digest cache keyed by the file m was read from knows it without reading
// the data. digest must return exactly what EmbeddingDigest(m) returns; it
// is called at most once per identity, possibly from another goroutine. A
// slice of the endpoint hashes its rows as usual.
func EmbeddingsWithDigest(m matrix.Matrix, digest func() map[string]any) EmbeddingItems {
	return EmbeddingItems{m: m, digest: &knownDigest{get: digest}}
}

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
	return e // not sliceable: the same matrix
}

// Texts is an endpoint of raw UTF-8 strings (modality "text").
type Texts []string

// Len implements Items.
func (t Texts) Len() int { return len(t) }

// Modality implements Items.
func (t Texts) Modality() string { return "text" }

// Slice implements Items.
func (t Texts) Slice(lo, hi int) Items { return t[lo:hi:hi] }

// ContentDigest is the §2.9 text digest: the chunked SHA-256 (§10.5) of,
// per item, an 8-byte big-endian length followed by the UTF-8 bytes.
func (t Texts) ContentDigest() (map[string]any, error) {
	h := chunkdigest.NewHasher()
	var n [8]byte
	for _, s := range t {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return map[string]any{"kind": "text", "count": len(t), "sha256": h.Digest().Hex()}, nil
}

// Images is an endpoint of local image file paths (modality "image").
type Images []string

// Len implements Items.
func (im Images) Len() int { return len(im) }

// Modality implements Items.
func (im Images) Modality() string { return "image" }

// Slice implements Items.
func (im Images) Slice(lo, hi int) Items { return im[lo:hi:hi] }

// ContentDigest is the §2.9 image digest: the text framing over each file's
// bytes.
func (im Images) ContentDigest() (map[string]any, error) {
	h := chunkdigest.NewHasher()
	var n [8]byte
	for i, p := range im {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("image %d (%s): %w", i, p, err)
		}
		binary.BigEndian.PutUint64(n[:], uint64(len(data)))
		h.Write(n[:])
		h.Write(data)
	}
	return map[string]any{"kind": "image", "count": len(im), "sha256": h.Digest().Hex()}, nil
}

// IDsOnly is an endpoint known only by its row count, for extractors that
// supply their own matrices (modality "embeddings").
type IDsOnly int

// Len implements Items.
func (n IDsOnly) Len() int { return int(n) }

// Modality implements Items.
func (n IDsOnly) Modality() string { return ModalityEmbeddings }

// Slice implements Items.
func (n IDsOnly) Slice(lo, hi int) Items { return IDsOnly(hi - lo) }

// ContentDigest is the §2.9 IDs-only digest.
func (n IDsOnly) ContentDigest() (map[string]any, error) {
	return map[string]any{"kind": "ids", "count": int(n)}, nil
}
