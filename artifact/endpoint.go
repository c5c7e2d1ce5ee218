package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// ArrayInfoOf fills the array fields every array metadata document carries.
func ArrayInfoOf(src Source, nnz *int64) ArrayInfo {
	return ArrayInfo{Shape: []int{src.Rows(), src.Cols()}, DType: src.DType().String(), Sparse: src.Sparse(),
		NNZ: nnz, NSamples: src.Rows(), EmbeddingDim: src.Cols()}
}

// NNZOf is the stored-entry count of a sparse matrix (nil for dense).
func NNZOf(m matrix.Matrix) *int64 {
	if c, ok := m.(*matrix.CSR); ok {
		n := int64(c.NNZ())
		return &n
	}
	return nil
}

// WriteEndpoint commits an endpoint embedding at key: m's rows as the array
// and meta (with its array fields filled from m) as the metadata document.
// This is the entry point for embedding caches and the merge command; the
// write streams (SPEC §10.5) and re-running it with equal inputs rewrites
// identical bytes.
func (s *Store) WriteEndpoint(ctx context.Context, key string, m matrix.Matrix, meta *Embedding, opts ...WriteOption) error {
	src := FromMatrix(m)
	meta.ArrayInfo = ArrayInfoOf(src, NNZOf(m))
	meta.ArtifactType, meta.OutputKey = TypeEmbedding, key
	if meta.ShardKeys == nil {
		meta.ShardKeys = []string{}
	}
	return s.WriteArray(ctx, key, src, meta, opts...)
}

// EndpointMeta is an endpoint artifact's metadata, read as the widest of
// the endpoint documents (embedding, shard or compressed embedding), with
// the raw document kept for the score artifact.
type EndpointMeta struct {
	CompressedEmbedding
	Shard *ShardInfo     `json:"shard"`
	Raw   map[string]any `json:"-"`
}

// ReadEndpointMeta verifies and decodes an endpoint artifact's metadata
// document without reading its array.
func (s *Store) ReadEndpointMeta(ctx context.Context, key string) (*EndpointMeta, error) {
	data, _, err := s.ReadMetadata(ctx, key)
	if err != nil {
		return nil, err
	}
	return decodeEndpointMeta(key, data)
}

func decodeEndpointMeta(key string, data []byte) (*EndpointMeta, error) {
	em := &EndpointMeta{}
	if err := json.Unmarshal(data, em); err != nil {
		return nil, keyErr(key, ErrInvalidMetadata, fmt.Sprintf("endpoint metadata: %v", err))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&em.Raw); err != nil {
		return nil, keyErr(key, ErrInvalidMetadata, fmt.Sprintf("endpoint metadata: %v", err))
	}
	switch em.ArtifactType {
	case TypeEmbedding, TypeEmbeddingShard, TypeCompressedEmbedding:
	default:
		return nil, &TypeError{Key: key, Type: describe(data), Want: "an endpoint embedding"}
	}
	return em, nil
}

// ReadEndpoint verifies and loads an endpoint artifact: its matrix and
// metadata. The matrix's shape, dtype and sparsity must also equal what
// the metadata says.
func (s *Store) ReadEndpoint(ctx context.Context, key string) (matrix.Matrix, *EndpointMeta, error) {
	m, data, err := s.LoadArray(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	em, err := decodeEndpointMeta(key, data)
	if err != nil {
		return nil, nil, err
	}
	if em.NSamples != m.Rows() || em.EmbeddingDim != m.Cols() || em.DType != m.DType().String() || em.Sparse != m.Sparse() {
		return nil, nil, mismatch(key, "metadata says %d×%d %s sparse=%v, array is %d×%d %s sparse=%v",
			em.NSamples, em.EmbeddingDim, em.DType, em.Sparse, m.Rows(), m.Cols(), m.DType(), m.Sparse())
	}
	return m, em, nil
}

// ReadEndpointRows verifies and loads rows [lo, hi) of a dense endpoint
// artifact (ReadRows: only the chunks holding them are read) with the
// endpoint's metadata, checked against the whole array's manifest.
func (s *Store) ReadEndpointRows(ctx context.Context, key string, lo, hi int) (*matrix.Dense, *EndpointMeta, error) {
	d, data, a, err := s.readRows(ctx, key, lo, hi)
	if err != nil {
		return nil, nil, err
	}
	em, err := decodeEndpointMeta(key, data)
	if err != nil {
		return nil, nil, err
	}
	if em.NSamples != a.Shape[0] || em.EmbeddingDim != d.Cols() || em.DType != d.DType().String() || em.Sparse {
		return nil, nil, mismatch(key, "metadata says %d×%d %s sparse=%v, array is %d×%d %s sparse=false",
			em.NSamples, em.EmbeddingDim, em.DType, em.Sparse, a.Shape[0], d.Cols(), d.DType())
	}
	return d, em, nil
}

// checkSides is the side check of SPEC §10.7 (score) and of compress: the
// query key names a query-side endpoint, the gallery key a gallery-side one.
func checkSides(queryKey string, qm *EndpointMeta, galleryKey string, gm *EndpointMeta) error {
	for _, c := range []struct {
		key string
		em  *EndpointMeta
		x   Expect
	}{{queryKey, qm, QueryEndpoint}, {galleryKey, gm, GalleryEndpoint}} {
		if c.em.Side != c.x.Side {
			typ := fmt.Sprintf("%s-side %s", c.em.Side, c.em.ArtifactType)
			if c.em.Side == "" {
				typ = c.em.ArtifactType + " without a side"
			}
			return &TypeError{Key: c.key, Type: typ, Want: c.x.Want}
		}
	}
	return nil
}
