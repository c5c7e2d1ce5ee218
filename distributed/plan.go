package distributed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Version is the plan_version this package writes and reads.
const Version = 1

// Plan is the document `plan` writes (SPEC §11.2).
type Plan struct {
	PlanVersion        int         `json:"plan_version"`
	Spec               string      `json:"spec"`
	RunID              string      `json:"run_id"`
	TotalShards        int         `json:"total_shards"`
	DatasetIdentityKey string      `json:"dataset_identity_key"`
	RelevanceKey       string      `json:"relevance_key"`
	Extractors         []Extractor `json:"extractors"`
}

// Extractor is one extractor of a plan.
type Extractor struct {
	Name               string     `json:"name"`
	ExtractorType      string     `json:"extractor_type"`
	DatasetIdentityKey string     `json:"dataset_identity_key"`
	RecipeHash         string     `json:"recipe_hash"`
	FittedStateKey     *string    `json:"fitted_state_key"`
	Endpoints          []Endpoint `json:"endpoints"`
}

// Endpoint is one endpoint of a plan extractor.
type Endpoint struct {
	Side          string  `json:"side"`
	Branch        string  `json:"branch"`
	Modality      string  `json:"modality"`
	NSamples      int     `json:"n_samples"`
	OutputKey     string  `json:"output_key"`
	CacheEligible bool    `json:"cache_eligible"`
	CacheStatus   string  `json:"cache_status"`
	Shards        []Shard `json:"shards"`
}

// Shard is one extraction shard.
type Shard struct {
	ShardIndex  int    `json:"shard_index"`
	TotalShards int    `json:"total_shards"`
	OutputKey   string `json:"output_key"`
	BatchSize   int    `json:"batch_size"`
}

// NewPlan starts the plan of a run file: specPath is recorded as given,
// specBytes (the file's content) and the dataset identity fix the run id,
// so planning the same inputs twice gives the same keys (idempotency, SPEC
// §6.8). Extractors are added with AddExtractor.
func NewPlan(specPath string, specBytes []byte, ds *retrieval.Dataset, total int) (*Plan, error) {
	if total < 1 {
		return nil, fmt.Errorf("total shards must be >= 1; got %d", total)
	}
	dk := ds.IdentityKey()
	sum := sha256.Sum256(specBytes)
	rid, err := canonjson.Hash(map[string]any{"spec_sha256": hex.EncodeToString(sum[:]), "dataset_identity_key": dk, "total_shards": total})
	if err != nil {
		return nil, err
	}
	return &Plan{PlanVersion: Version, Spec: specPath, RunID: rid[:32], TotalShards: total, DatasetIdentityKey: dk,
		RelevanceKey: artifact.RelevanceKey(dk)}, nil
}

// PlanExtractor resolves one extractor's endpoint keys, cache status and
// shards (SPEC §11.2, §9.5): a cache-eligible endpoint that already exists
// in st is a hit with no shards; streaming-safe extractors and branch
// encoders get min(total, rows) shards, others one. batchSize is the run
// file's embedding batch size. A same-modality Fitter must be a
// StatefulFitter: it is fitted here, once, on the gallery, and its state
// stored for the workers (LoadState).
func PlanExtractor(ctx context.Context, st *artifact.Store, ds *retrieval.Dataset, name string, entry extract.Entry, batchSize int, p *Plan, total int) (Extractor, error) {
	x := entry.Extractor
	if err := extract.Check(entry, ds.Queries().Modality(), ds.Gallery().Modality()); err != nil {
		return Extractor{}, err
	}
	f, fits := fitter(x, entry)
	var sf extract.StatefulFitter
	if fits {
		var ok bool
		if sf, ok = f.(extract.StatefulFitter); !ok {
			return Extractor{}, fmt.Errorf("Extractor %s cannot be distributed: fitted state is not serialisable", name)
		}
	}
	recipe := x.Recipe()
	rh, err := artifact.RecipeHash(recipe)
	if err != nil {
		return Extractor{}, err
	}
	eligible, status := extract.CacheEligibility(recipe, !entry.NoCache)
	pe := Extractor{Name: name, ExtractorType: typeOrUnknown(x.Type()), DatasetIdentityKey: p.DatasetIdentityKey, RecipeHash: rh}
	for _, side := range []struct {
		name, branch string
		items        retrieval.Items
	}{{artifact.SideQuery, entry.QueryBranch, ds.Queries()}, {artifact.SideGallery, entry.GalleryBranch, ds.Gallery()}} {
		bk, err := artifact.BranchKey(side.branch)
		if err != nil {
			return pe, err
		}
		key := artifact.EndpointKey(p.DatasetIdentityKey, rh, side.name, bk)
		if !eligible {
			key = artifact.RunScopedKey(p.RunID, key)
		}
		ep := Endpoint{Side: side.name, Branch: side.branch, Modality: side.items.Modality(), NSamples: side.items.Len(),
			OutputKey: key, CacheEligible: eligible, CacheStatus: status, Shards: []Shard{}}
		if eligible {
			if _, err := st.ReadEndpointMeta(ctx, key); err == nil {
				ep.CacheStatus = artifact.CacheHit
			} else if !errors.Is(err, artifact.ErrNotFound) {
				return pe, err
			}
		}
		if ep.CacheStatus != artifact.CacheHit {
			n := 1
			if x.StreamingSafe() || entry.QueryBranch != "" {
				n = min(total, ep.NSamples)
			}
			for i := 0; i < n; i++ {
				ep.Shards = append(ep.Shards, Shard{ShardIndex: i, TotalShards: n, OutputKey: artifact.ShardKey(key, i, n), BatchSize: batchSize})
			}
		}
		pe.Endpoints = append(pe.Endpoints, ep)
	}
	// Fit once, on the gallery, only when something is left to encode.
	if sf != nil && (len(pe.Endpoints[0].Shards) > 0 || len(pe.Endpoints[1].Shards) > 0) {
		key, err := fitOnce(ctx, st, ds, name, sf, p.DatasetIdentityKey, rh)
		if err != nil {
			return pe, err
		}
		pe.FittedStateKey = &key
	}
	return pe, nil
}

func typeOrUnknown(t string) string {
	if t == "" {
		return "unknown"
	}
	return t
}

// ParsePlan decodes a plan document; name (usually its path) prefixes the
// error. Unknown fields and other plan versions are rejected.
func ParsePlan(name string, data []byte) (*Plan, error) {
	p := &Plan{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil || p.PlanVersion != Version {
		return nil, fmt.Errorf("%s: not a vertebrae plan (plan_version %d): %v", name, Version, err)
	}
	return p, nil
}

// EndpointError is returned by (*Plan).Endpoint for an unknown extractor
// or side; callers treat it as a usage error.
type EndpointError struct{ Msg string }

func (e *EndpointError) Error() string { return e.Msg }

// Endpoint finds the planned endpoint of extractor name on side.
func (p *Plan) Endpoint(name, side string) (*Extractor, *Endpoint, error) {
	if side != artifact.SideQuery && side != artifact.SideGallery {
		return nil, nil, &EndpointError{Msg: fmt.Sprintf("--side must be query or gallery; got %q", side)}
	}
	for i := range p.Extractors {
		pe := &p.Extractors[i]
		if pe.Name != name {
			continue
		}
		for j := range pe.Endpoints {
			if pe.Endpoints[j].Side == side {
				return pe, &pe.Endpoints[j], nil
			}
		}
	}
	return nil, nil, &EndpointError{Msg: fmt.Sprintf("the plan has no extractor %q", name)}
}
