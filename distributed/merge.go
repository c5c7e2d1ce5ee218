package distributed

import (
	"context"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Merge checks every shard of an endpoint against the plan and the others
// (SPEC §11.2) and returns the merged endpoint as a Source whose rows land
// at their endpoint indices. Dense shards are merged while streaming: the
// source reads the N shards in lockstep, re-verifying each (see
// mergedSource), so memory is O(N × batch) and nothing is staged on disk;
// CSR shards are verified and gathered in memory here. Violations are
// *artifact.Error values, or errors naming the shard key. The returned
// source is valid until cleanup.
func Merge(ctx context.Context, st *artifact.Store, pe *Extractor, ep *Endpoint) (*artifact.Embedding, artifact.Source, *int64, func(), error) {
	n := len(ep.Shards)
	if n == 0 {
		return nil, nil, nil, nil, fmt.Errorf("endpoint %s has no shards to merge", ep.OutputKey)
	}
	var first *artifact.EndpointMeta
	keys := make([]string, n)
	for i, sh := range ep.Shards {
		em, err := st.ReadEndpointMeta(ctx, sh.OutputKey)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		bad := func(format string, args ...any) error {
			return &artifact.Error{Key: sh.OutputKey, Msg: fmt.Sprintf(format, args...), Err: artifact.ErrCheck}
		}
		if em.ArtifactType != artifact.TypeEmbeddingShard || em.Shard == nil || em.Shard.ShardIndex != i || em.Shard.TotalShards != n {
			return nil, nil, nil, nil, bad("is not shard %d of %d of %s", i, n, ep.OutputKey)
		}
		if want := (ep.NSamples - i + n - 1) / n; em.NSamples != want {
			return nil, nil, nil, nil, bad("shard %d of %d has %d rows; the modulo rule gives %d", i, n, em.NSamples, want)
		}
		if first == nil {
			first = em
		} else if em.RecipeHash != first.RecipeHash || em.DatasetIdentityKey != first.DatasetIdentityKey || em.Side != first.Side ||
			em.Branch != first.Branch || em.Modality != first.Modality || em.DType != first.DType || em.Sparse != first.Sparse || em.EmbeddingDim != first.EmbeddingDim {
			return nil, nil, nil, nil, bad("shard disagrees with shard 0 on recipe, dataset identity, side, branch, modality, dtype, sparsity or width")
		}
		if em.RecipeHash != pe.RecipeHash || em.Side != ep.Side || em.DatasetIdentityKey != pe.DatasetIdentityKey {
			return nil, nil, nil, nil, bad("shard does not belong to the planned endpoint %s", ep.OutputKey)
		}
		keys[i] = sh.OutputKey
	}
	meta := &artifact.Embedding{
		Common:           artifact.Common{ArtifactType: artifact.TypeEmbedding, VertebraeVersion: version.Version, OutputKey: ep.OutputKey},
		EndpointIdentity: first.EndpointIdentity, ShardKeys: keys, NShards: n,
	}
	if first.Sparse {
		parts := make([]matrix.Matrix, n)
		for i, sh := range ep.Shards {
			m, _, err := st.ReadEndpoint(ctx, sh.OutputKey)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			parts[i] = m
		}
		m, err := GatherRows(ctx, parts, ep.NSamples, func(r int) (int, int) { return r % n, r / n })
		if err != nil {
			return nil, nil, nil, nil, err
		}
		return meta, artifact.FromMatrix(m), artifact.NNZOf(m), func() {}, nil
	}
	dt, err := matrix.ParseDType(first.DType)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if first.EmbeddingDim < 1 || dt.Size() == 0 {
		return nil, nil, nil, nil, fmt.Errorf("merge %s: cannot merge %d-column %s shards", ep.OutputKey, first.EmbeddingDim, dt)
	}
	src := &mergedSource{st: st, keys: keys, endpoint: ep.OutputKey, rows: ep.NSamples, cols: first.EmbeddingDim, dt: dt}
	return meta, src, nil, func() {}, nil
}

// WriteMerged merges an endpoint's shards (Merge) and stores the merged
// endpoint at its planned key; it returns the endpoint's shape.
func WriteMerged(ctx context.Context, st *artifact.Store, pe *Extractor, ep *Endpoint) (rows, cols int, err error) {
	meta, src, nnz, cleanup, err := Merge(ctx, st, pe, ep)
	if err != nil {
		return 0, 0, err
	}
	defer cleanup()
	meta.ArrayInfo = artifact.ArrayInfoOf(src, nnz)
	if err := st.WriteArray(ctx, ep.OutputKey, src, meta); err != nil {
		return 0, 0, err
	}
	return src.Rows(), src.Cols(), nil
}
