package pipeline

import (
	"context"
	"encoding/json"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// prepared is one extractor's scoring problem as the score artifact sees
// it: endpoints and relevance read back from the store (SPEC §10.7).
type prepared struct {
	problem             rank.Problem
	config              retrieval.Config
	compressionWarnings []string
	compression         map[string]any
	qm, gm              *artifact.EndpointMeta
	prot                *artifact.Protocol
	pair                Pair
	key, fingerprint    string
}

func prepare(ctx context.Context, st *artifact.Store, job *Job, name string) (*prepared, error) {
	cfg, err := job.config()
	if err != nil {
		return nil, err
	}
	pair := job.Endpoints[name]
	pr := &prepared{config: cfg, pair: pair, compressionWarnings: []string{}}
	if pr.qm, err = st.ReadEndpointMeta(ctx, pair.Query); err != nil {
		return nil, err
	}
	if pr.gm, err = st.ReadEndpointMeta(ctx, pair.Gallery); err != nil {
		return nil, err
	}
	if pr.prot, err = st.ReadRelevance(ctx, job.RelevanceKey); err != nil {
		return nil, err
	}
	q, _, err := st.ReadEndpoint(ctx, pair.Query)
	if err != nil {
		return nil, err
	}
	g, _, err := st.ReadEndpoint(ctx, pair.Gallery)
	if err != nil {
		return nil, err
	}
	res, err := compress.Apply(ctx, compress.Default(), q, g)
	if err != nil {
		return nil, err
	}
	pr.compression = res.Metadata
	pr.problem = rank.Problem{Queries: q, Gallery: g, QueryIDs: pr.prot.Doc.QueryIDs, GalleryIDs: pr.prot.Doc.GalleryIDs,
		Relevance: pr.prot.Positives, Exclusions: pr.prot.Exclusions}
	if pr.fingerprint, err = artifact.EvaluationFingerprint(pair.Query, pair.Gallery, job.RelevanceKey, "", cfg.ProtocolFields()); err != nil {
		return nil, err
	}
	pr.key = artifact.ScoreKey(pr.fingerprint)
	return pr, nil
}

// commit writes the retrieval_evaluation artifact of res.
func commit(ctx context.Context, st *artifact.Store, pr *prepared, res *results.ExtractorResult) error {
	excl := make([]any, len(pr.prot.Doc.Exclusions))
	for i, p := range pr.prot.Doc.Exclusions {
		excl[i] = []any{p[0], p[1]}
	}
	pf, err := retrieval.ProtocolFingerprintOf(pr.prot.Doc.ProtocolFingerprint, excl, pr.config)
	if err != nil {
		return err
	}
	doc := &artifact.Evaluation{
		Common:            artifact.Common{ArtifactType: artifact.TypeEvaluation, VertebraeVersion: version.Version, OutputKey: pr.key},
		QueryEmbeddingKey: pr.pair.Query, GalleryEmbeddingKey: pr.pair.Gallery, RelevanceKey: pr.prot.Key,
		PrimaryScore: res.PrimaryScore, QueryEndpoint: pr.qm.Raw, GalleryEndpoint: pr.gm.Raw,
		RetrievalConfig: pr.config.AsMap(), ProtocolFingerprint: pf, EvaluationFingerprint: pr.fingerprint,
		CacheEligible: pr.qm.CacheEligible && pr.gm.CacheEligible, CacheStatus: artifact.WeakestStatus(pr.qm.CacheStatus, pr.gm.CacheStatus),
		CompressionMetadata: pr.compression,
	}
	if doc.Forward, err = json.Marshal(res.Forward); err != nil {
		return err
	}
	if doc.PerQuery.Forward, err = json.Marshal(res.Forward.PerQuery); err != nil {
		return err
	}
	doc.Reverse, doc.PerQuery.Reverse = json.RawMessage("null"), json.RawMessage("null")
	if res.Reverse != nil {
		if doc.Reverse, err = json.Marshal(res.Reverse); err != nil {
			return err
		}
		if doc.PerQuery.Reverse, err = json.Marshal(res.Reverse.PerQuery); err != nil {
			return err
		}
	}
	return st.WriteJSON(ctx, pr.key, doc)
}
