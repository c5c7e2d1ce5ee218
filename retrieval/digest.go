package retrieval

import "github.com/vertebrae-eval/vertebrae/matrix"

// EmbeddingDigest is the SPEC §2.9 endpoint digest of an embedding matrix
// (dense: dtype, shape and SHA-256 of the little-endian elements; CSR: the
// digests of its three arrays). Precomputed recipes carry it as the content
// identity of their tables (§9.5).
func EmbeddingDigest(m matrix.Matrix) (map[string]any, error) {
	return endpointDigest(Embeddings(m))
}
