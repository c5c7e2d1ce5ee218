package extract

import (
	"context"
	"fmt"
	"strings"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory/admit"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Cache statuses (SPEC §9.5).
const (
	CacheHit      = "hit"
	CacheMiss     = "miss"
	CacheDisabled = "disabled"
	CacheBypassed = "bypassed_unsafe_identity"
)

// CacheEligibility applies SPEC §9.5 to an extractor's recipe: enabled is
// false for `cache: false` (and for runs without a store). It returns
// whether the endpoints may be read and written under their canonical keys
// and the status they start with (miss when eligible; the caller upgrades
// it to hit when a valid artifact exists). Plans and local runs share it.
func CacheEligibility(recipe map[string]any, enabled bool) (eligible bool, status string) {
	if !enabled {
		return false, CacheDisabled
	}
	if id, _ := recipe["cache_identity"].(string); strings.TrimSpace(id) != "" {
		return true, CacheMiss
	}
	if safe, _ := recipe["cache_safe"].(bool); safe {
		return true, CacheMiss
	}
	return false, CacheBypassed
}

// EndpointRef names one endpoint of one extractor on one dataset: what an
// EndpointCache keys and labels a cached endpoint by.
type EndpointRef struct {
	Extractor          string
	DatasetIdentityKey string
	Recipe             map[string]any
	RecipeHash         string
	Side               string // "query" or "gallery"
	Branch             string // "" in same-modality mode
	Modality           string
	IDs                []string
	BatchSize          int
}

// EndpointCache keeps encoded endpoints across runs (SPEC §9.5). Load
// returns ok=false when nothing is stored for ref, and an error when what
// is stored fails verification; Save commits an encoded endpoint.
type EndpointCache interface {
	Load(ctx context.Context, ref EndpointRef) (m matrix.Matrix, ok bool, err error)
	Save(ctx context.Context, ref EndpointRef, m matrix.Matrix) error
}

// EncodeCached is Encode behind an endpoint cache: for a cache-eligible
// extractor each endpoint is read from cache when present (hit) and
// otherwise encoded and saved (miss); the fit on the gallery and the
// encoder run only when some endpoint is missing. Ineligible extractors
// (cache nil, enabled false, or no content identity) are encoded as by
// Encode and nothing is read or written. The status is the weakest of
// both endpoints' (SPEC §9.5).
func EncodeCached(ctx context.Context, ds *retrieval.Dataset, e Entry, cfg EmbeddingConfig, budget *admit.Budget, cache EndpointCache, enabled bool) (*Encoded, string, error) {
	recipe := e.Extractor.Recipe()
	eligible, status := CacheEligibility(recipe, enabled && cache != nil)
	if !eligible {
		enc, err := Encode(ctx, ds, e, cfg, budget)
		return enc, status, err
	}
	if err := Check(e, ds.Queries().Modality(), ds.Gallery().Modality()); err != nil {
		return nil, "", err
	}
	rh, err := RecipeHash(e.Extractor)
	if err != nil {
		return nil, "", fmt.Errorf("Extractor %s: recipe hash: %w", e.Extractor.Name(), err)
	}
	refs := [2]EndpointRef{
		{Side: "query", Branch: e.QueryBranch, Modality: ds.Queries().Modality(), IDs: ds.QueryIDs()},
		{Side: "gallery", Branch: e.GalleryBranch, Modality: ds.Gallery().Modality(), IDs: ds.GalleryIDs()},
	}
	var have [2]matrix.Matrix
	hits := 0
	for i := range refs {
		r := &refs[i]
		r.Extractor, r.DatasetIdentityKey, r.Recipe, r.RecipeHash, r.BatchSize = e.Extractor.Name(), ds.IdentityKey(), recipe, rh, cfg.BatchSize
		m, ok, err := cache.Load(ctx, *r)
		if err != nil {
			return nil, "", fmt.Errorf("Extractor %s %s endpoint cache: %w", r.Extractor, r.Side, err)
		}
		if ok {
			if m.Rows() != len(r.IDs) {
				return nil, "", fmt.Errorf("Extractor %s %s endpoint cache: cached endpoint has %d rows for %d items", r.Extractor, r.Side, m.Rows(), len(r.IDs))
			}
			have[i] = m
			hits++
		}
	}
	if hits == 2 {
		if qc, gc := have[0].Cols(), have[1].Cols(); qc != gc {
			return nil, "", fmt.Errorf("Extractor %s: cached query and gallery embedding dimensions must match; got %d and %d", e.Extractor.Name(), qc, gc)
		}
		return &Encoded{Query: have[0], Gallery: have[1]}, CacheHit, nil
	}
	enc, err := encodeSides(ctx, ds, e, cfg, budget, have)
	if err != nil {
		return nil, "", err
	}
	for i, m := range []matrix.Matrix{enc.Query, enc.Gallery} {
		if have[i] != nil {
			continue
		}
		if err := cache.Save(ctx, refs[i], m); err != nil {
			enc.Close()
			return nil, "", fmt.Errorf("Extractor %s %s endpoint cache: %w", refs[i].Extractor, refs[i].Side, err)
		}
	}
	return enc, CacheMiss, nil
}
