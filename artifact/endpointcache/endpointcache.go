package endpointcache

import (
	"context"
	"errors"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Cache implements extract.EndpointCache on an artifact store.
type Cache struct {
	st *artifact.Store
}

// New returns the endpoint cache backed by st.
func New(st *artifact.Store) *Cache { return &Cache{st: st} }

var _ extract.EndpointCache = (*Cache)(nil)

// Key is the canonical endpoint key of ref (SPEC §10.4).
func Key(ref extract.EndpointRef) (string, error) {
	bk, err := artifact.BranchKey(ref.Branch)
	if err != nil {
		return "", err
	}
	return artifact.EndpointKey(ref.DatasetIdentityKey, ref.RecipeHash, ref.Side, bk), nil
}

// Load reads and verifies the endpoint at ref's key (SPEC §10.5: sizes,
// digests, shape and dtype). A missing key is a miss; a damaged artifact,
// or one whose identity fields disagree with ref (another dataset, recipe,
// side or ID list under this key), is an error naming the key: the run
// stops rather than silently re-encoding, so damage to a store shared by
// many runs is noticed.
func (c *Cache) Load(ctx context.Context, ref extract.EndpointRef) (matrix.Matrix, bool, error) {
	key, err := Key(ref)
	if err != nil {
		return nil, false, err
	}
	m, em, err := c.st.ReadEndpoint(ctx, key)
	if errors.Is(err, artifact.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ids, err := artifact.IDsSHA256(ref.IDs)
	if err != nil {
		return nil, false, err
	}
	bad := func(field string, got, want any) error {
		return &artifact.Error{Key: key, Err: artifact.ErrCheck,
			Msg: fmt.Sprintf("cached endpoint has %s %v, the run needs %v", field, got, want)}
	}
	switch {
	case em.ArtifactType != artifact.TypeEmbedding:
		return nil, false, bad("artifact_type", em.ArtifactType, artifact.TypeEmbedding)
	case em.DatasetIdentityKey != ref.DatasetIdentityKey:
		return nil, false, bad("dataset_identity_key", em.DatasetIdentityKey, ref.DatasetIdentityKey)
	case em.RecipeHash != ref.RecipeHash:
		return nil, false, bad("recipe_hash", em.RecipeHash, ref.RecipeHash)
	case em.Side != ref.Side:
		return nil, false, bad("side", em.Side, ref.Side)
	case em.Branch != ref.Branch:
		return nil, false, bad("branch", em.Branch, ref.Branch)
	case em.IDsSHA256 != ids:
		return nil, false, bad("ids_sha256", em.IDsSHA256, ids)
	case m.Rows() != len(ref.IDs):
		return nil, false, bad("rows", m.Rows(), len(ref.IDs))
	}
	return m, true, nil
}

// Save commits m at ref's key as a retrieval_embedding artifact (SPEC
// §10.6) written in one piece (no shards).
func (c *Cache) Save(ctx context.Context, ref extract.EndpointRef, m matrix.Matrix) error {
	key, err := Key(ref)
	if err != nil {
		return err
	}
	ids, err := artifact.IDsSHA256(ref.IDs)
	if err != nil {
		return err
	}
	meta := &artifact.Embedding{
		Common: artifact.Common{VertebraeVersion: version.Version},
		EndpointIdentity: artifact.EndpointIdentity{DatasetIdentityKey: ref.DatasetIdentityKey, ExtractorRecipe: ref.Recipe,
			RecipeHash: ref.RecipeHash, Side: ref.Side, Branch: ref.Branch, Modality: ref.Modality, IDsSHA256: ids,
			CacheEligible: true, CacheStatus: extract.CacheMiss},
	}
	return c.st.WriteEndpoint(ctx, key, m, meta)
}
