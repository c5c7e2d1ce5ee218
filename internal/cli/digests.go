package cli

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// digestSnap records an embedding file's identity before it is read, for
// the digest cache (internal/digestcache). Only formats whose matrix is the
// file's stored elements, independent of how this build decodes anything
// else, take part: .npy, .npz and .safetensors. Parquet and Arrow columns
// are always hashed.
func digestSnap(c *digestcache.Cache, path, tensor string) digestcache.Snapshot {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy", ".npz", ".safetensors":
		return c.Snap(path, "embeddings\x00"+tensor)
	}
	return digestcache.Snapshot{}
}

// cachedEmbeddings wraps the matrix read from a snapshot's file as dataset
// inputs whose SPEC §2.9 endpoint digest comes from the digest cache when
// the file is unchanged since it was hashed; otherwise the digest is
// computed when the content identity needs it and then stored.
func cachedEmbeddings(c *digestcache.Cache, snap digestcache.Snapshot, m matrix.Matrix) retrieval.EmbeddingItems {
	if c == nil {
		return retrieval.Embeddings(m)
	}
	switch m.(type) {
	case *matrix.Dense, *matrix.CSR:
	default:
		return retrieval.Embeddings(m)
	}
	if known, ok := c.Lookup(snap); ok {
		if d, ok := digestFromCache(known, m); ok {
			return retrieval.EmbeddingsWithDigest(m, func() map[string]any { return d })
		}
	}
	return retrieval.EmbeddingsWithDigest(m, func() map[string]any {
		d, _ := retrieval.EmbeddingDigest(m) // dense and CSR digests cannot fail
		c.Store(snap, digestToCache(d))
		return d
	})
}

// digestToCache flattens an endpoint digest to strings; the shape is kept
// only to check an entry against the matrix it is used for.
func digestToCache(d map[string]any) map[string]string {
	out := make(map[string]string, len(d))
	for k, v := range d {
		switch t := v.(type) {
		case string:
			out[k] = t
		case []any:
			var parts []string
			for _, x := range t {
				if n, ok := x.(int); ok {
					parts = append(parts, strconv.Itoa(n))
				}
			}
			out[k] = strings.Join(parts, "x")
		}
	}
	return out
}

// digestFromCache rebuilds the endpoint digest of m from a cache entry (the
// same map EmbeddingDigest returns, with Go ints in the shape), provided
// the entry's kind, dtype and shape are m's.
func digestFromCache(e map[string]string, m matrix.Matrix) (map[string]any, bool) {
	shape := strconv.Itoa(m.Rows()) + "x" + strconv.Itoa(m.Cols())
	var sums []string
	var kind, dtype string
	switch t := m.(type) {
	case *matrix.Dense:
		kind, dtype, sums = "dense", t.DType().String(), []string{"sha256"}
	case *matrix.CSR:
		kind, dtype, sums = "csr", t.DType().String(), []string{"data_sha256", "indices_sha256", "indptr_sha256"}
	default:
		return nil, false
	}
	if e["kind"] != kind || e["dtype"] != dtype || e["shape"] != shape || len(e) != 3+len(sums) {
		return nil, false
	}
	d := map[string]any{"kind": kind, "dtype": dtype, "shape": []any{m.Rows(), m.Cols()}}
	for _, k := range sums {
		s, ok := e[k]
		if !ok || !isHex64(s) {
			return nil, false
		}
		d[k] = s
	}
	return d, true
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
