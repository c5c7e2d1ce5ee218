package retrieval

import (
	"context"
	"io"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// EmbeddingDigest is the SPEC §2.9 endpoint digest of an embedding matrix
// (dense: dtype, shape and chunked SHA-256 of the little-endian elements;
// CSR: the chunked digests of its three arrays). Precomputed recipes carry it as the content
// identity of their tables (§9.5).
func EmbeddingDigest(m matrix.Matrix) (map[string]any, error) {
	return endpointDigest(context.Background(), Embeddings(m))
}

// EmbeddingDigestContext is EmbeddingDigest that stops with ctx's error
// once ctx is done (checked every hashBlock bytes).
func EmbeddingDigestContext(ctx context.Context, m matrix.Matrix) (map[string]any, error) {
	return endpointDigest(ctx, Embeddings(m))
}

// hashBlock is how many bytes a digest hashes between context checks.
const hashBlock = 4 << 20

// ctxHash feeds a hash in blocks of hashBlock bytes and fails once ctx is
// done, so hashing gigabytes (one Write of a whole matrix) can be
// interrupted.
type ctxHash struct {
	ctx context.Context
	h   io.Writer
}

func (c ctxHash) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if err := c.ctx.Err(); err != nil {
			return n, err
		}
		b := p[:min(len(p), hashBlock)]
		c.h.Write(b)
		n += len(b)
		p = p[len(b):]
	}
	return n, nil
}
