package artifact

import (
	"context"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/internal/version"
)

// Compress fits cfg on the gallery endpoint at galleryKey, applies it to
// both endpoints and commits the compressed endpoints at <prefix>/query and
// <prefix>/gallery and the retrieval_compression summary at prefix ("" =
// CompressionPrefix). Under the no-op rule of SPEC §8.4 (n_components ≥
// width) the stored arrays are byte-identical to the inputs: same values,
// sparsity and element type, applied=false and the skip warning recorded.
func (s *Store) Compress(ctx context.Context, queryKey, galleryKey string, cfg compress.Config, prefix string) (*Compression, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var opts []WriteOption
	if prefix != "" {
		opts = append(opts, ExplicitKey())
	} else {
		h, err := CompressionRecipeHash(cfg.AsMap())
		if err != nil {
			return nil, err
		}
		if prefix, err = CompressionPrefix(queryKey, galleryKey, h); err != nil {
			return nil, err
		}
	}
	if err := ValidateKey(prefix); err != nil {
		return nil, err
	}
	// Before any work: the three keys this writes may receive what it writes.
	for _, o := range []struct{ key, typ string }{{prefix, TypeCompression},
		{prefix + "/" + SideQuery, TypeCompressedEmbedding}, {prefix + "/" + SideGallery, TypeCompressedEmbedding}} {
		if err := s.CheckOutput(ctx, o.key, o.typ, opts...); err != nil {
			return nil, err
		}
	}
	if err := s.CheckType(ctx, queryKey, QueryEndpoint); err != nil {
		return nil, err
	}
	if err := s.CheckType(ctx, galleryKey, GalleryEndpoint); err != nil {
		return nil, err
	}
	q, qm, err := s.ReadEndpoint(ctx, queryKey)
	if err != nil {
		return nil, err
	}
	g, gm, err := s.ReadEndpoint(ctx, galleryKey)
	if err != nil {
		return nil, err
	}
	if qm.CompressionPrefix != "" || gm.CompressionPrefix != "" {
		return nil, checkErr(galleryKey, "endpoints are already compressed; compress the source endpoints")
	}
	res, err := compress.Apply(ctx, cfg, q, g)
	if err != nil {
		return nil, &Error{Key: prefix, Msg: "compression " + cfg.Method, Err: err}
	}
	status := WeakestStatus(qm.CacheStatus, gm.CacheStatus)
	eligible := qm.CacheEligible && gm.CacheEligible
	out := map[string]string{}
	for _, side := range []struct {
		name, src string
		em        *EndpointMeta
		m         Source
		nnz       *int64
	}{
		{SideQuery, queryKey, qm, FromMatrix(res.Query), NNZOf(res.Query)},
		{SideGallery, galleryKey, gm, FromMatrix(res.Gallery), NNZOf(res.Gallery)},
	} {
		key := prefix + "/" + side.name
		meta := &CompressedEmbedding{
			Common:           Common{ArtifactType: TypeCompressedEmbedding, VertebraeVersion: version.Version, OutputKey: key},
			ArrayInfo:        ArrayInfoOf(side.m, side.nnz),
			EndpointIdentity: side.em.EndpointIdentity,
			ShardKeys:        side.em.ShardKeys, NShards: side.em.NShards,
			SourceKey: side.src, CompressionPrefix: prefix, Compression: res.Metadata,
		}
		meta.CacheStatus, meta.CacheEligible = status, eligible
		if meta.ShardKeys == nil {
			meta.ShardKeys = []string{}
		}
		if err := s.WriteArray(ctx, key, side.m, meta, opts...); err != nil {
			return nil, err
		}
		out[side.name] = key
	}
	sum := &Compression{
		Common:            Common{ArtifactType: TypeCompression, VertebraeVersion: version.Version, OutputKey: prefix},
		QueryEmbeddingKey: queryKey, GalleryEmbeddingKey: galleryKey,
		QueryOutputKey: out[SideQuery], GalleryOutputKey: out[SideGallery],
		CompressionMetadata: res.Metadata, CacheEligible: eligible, CacheStatus: status,
	}
	if err := s.WriteJSON(ctx, prefix, sum, opts...); err != nil {
		return nil, err
	}
	return sum, nil
}
