package artifact

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// ScoreRequest names the artifacts to score and the protocol.
type ScoreRequest struct {
	QueryKey, GalleryKey, RelevanceKey string
	ExclusionsKey                      string // "" = the relevance document's exclusions
	Config                             retrieval.Config
	OutputKey                          string // "" = ScoreKey(evaluation fingerprint)
	Threads                            int    // 0 = GOMAXPROCS
}

// Scored is a committed score artifact.
type Scored struct {
	Key string
	Doc *Evaluation
}

func checkErr(key, msg string) error { return keyErr(key, ErrCheck, msg) }

// Score runs the checks of SPEC §10.7 in order, scores the endpoints
// through evaluate.Pair — the same path `retrieval run` takes, so forward,
// reverse and primary_score are bit-identical to a local run on the same
// matrices — and commits the retrieval_evaluation artifact.
func (s *Store) Score(ctx context.Context, req ScoreRequest) (*Scored, error) {
	cfg := req.Config.Clone()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, k := range []string{req.QueryKey, req.GalleryKey, req.RelevanceKey} {
		if err := ValidateKey(k); err != nil {
			return nil, err
		}
	}
	qm, err := s.ReadEndpointMeta(ctx, req.QueryKey)
	if err != nil {
		return nil, err
	}
	gm, err := s.ReadEndpointMeta(ctx, req.GalleryKey)
	if err != nil {
		return nil, err
	}
	// (1) sides.
	if qm.Side != SideQuery {
		return nil, checkErr(req.QueryKey, fmt.Sprintf("query artifact has side %q; expected side %q", qm.Side, SideQuery))
	}
	if gm.Side != SideGallery {
		return nil, checkErr(req.GalleryKey, fmt.Sprintf("gallery artifact has side %q; expected side %q", gm.Side, SideGallery))
	}
	// (2) one dataset identity.
	if qm.DatasetIdentityKey == "" || qm.DatasetIdentityKey != gm.DatasetIdentityKey {
		return nil, checkErr(req.GalleryKey, fmt.Sprintf("query and gallery artifacts must share one non-empty dataset identity; dataset identities differ: %q (query %s) and %q", qm.DatasetIdentityKey, req.QueryKey, gm.DatasetIdentityKey))
	}
	// (3) relevance of that dataset, fingerprint verified.
	prot, err := s.ReadRelevance(ctx, req.RelevanceKey)
	if err != nil {
		return nil, err
	}
	if prot.Doc.DatasetIdentityKey != qm.DatasetIdentityKey {
		return nil, checkErr(req.RelevanceKey, fmt.Sprintf("relevance artifact belongs to dataset identity %q; the endpoints to %q (dataset identities differ)", prot.Doc.DatasetIdentityKey, qm.DatasetIdentityKey))
	}
	// (4) rows and IDs.
	for _, c := range []struct {
		key, what string
		em        *EndpointMeta
		ids       []string
	}{{req.QueryKey, "query", qm, prot.Doc.QueryIDs}, {req.GalleryKey, "gallery", gm, prot.Doc.GalleryIDs}} {
		sum, err := IDsSHA256(c.ids)
		if err != nil {
			return nil, err
		}
		if c.em.NSamples != len(c.ids) {
			return nil, checkErr(c.key, fmt.Sprintf("%s IDs: endpoint has %d rows, relevance has %d %s IDs", c.what, c.em.NSamples, len(c.ids), c.what))
		}
		if c.em.IDsSHA256 != sum {
			return nil, checkErr(c.key, fmt.Sprintf("%s IDs: ids_sha256 %s differs from the relevance artifact's %s IDs (%s)", c.what, c.em.IDsSHA256, c.what, sum))
		}
	}
	// (5) widths.
	if qm.EmbeddingDim != gm.EmbeddingDim {
		return nil, checkErr(req.GalleryKey, fmt.Sprintf("Query and gallery embedding matrices must have the same width; got %d and %d", qm.EmbeddingDim, gm.EmbeddingDim))
	}
	// (6) one compression run.
	if qm.CompressionPrefix != gm.CompressionPrefix {
		return nil, checkErr(req.GalleryKey, fmt.Sprintf("compressed endpoints come from different compression runs: %q and %q", qm.CompressionPrefix, gm.CompressionPrefix))
	}
	exclPairs, excl := prot.Doc.Exclusions, prot.Exclusions
	var exclKey *string
	if req.ExclusionsKey != "" {
		if exclPairs, excl, err = s.ReadExclusions(ctx, req.ExclusionsKey, len(prot.Doc.QueryIDs), len(prot.Doc.GalleryIDs)); err != nil {
			return nil, err
		}
		k := req.ExclusionsKey
		exclKey = &k
	}
	// (7) scorer rules: eligible positives, bidirectional coverage; zero
	// norms and finiteness are checked by the scorer itself.
	if err := checkEligible(prot, excl, cfg.Bidirectional); err != nil {
		return nil, checkErr(req.RelevanceKey, err.Error())
	}
	q, _, err := s.ReadEndpoint(ctx, req.QueryKey)
	if err != nil {
		return nil, err
	}
	g, _, err := s.ReadEndpoint(ctx, req.GalleryKey)
	if err != nil {
		return nil, err
	}
	compMeta, compWarnings := gm.Compression, []string{}
	if compMeta == nil {
		res, err := compress.Apply(ctx, compress.Default(), q, g)
		if err != nil {
			return nil, err
		}
		compMeta = res.Metadata
	} else if ws, ok := compMeta["warnings"].([]any); ok {
		for _, w := range ws {
			if s, ok := w.(string); ok {
				compWarnings = append(compWarnings, s)
			}
		}
	}
	problem := rank.Problem{Queries: q, Gallery: g, QueryIDs: prot.Doc.QueryIDs, GalleryIDs: prot.Doc.GalleryIDs,
		Relevance: prot.Positives, Exclusions: excl}
	res, err := evaluate.Pair(ctx, problem, cfg, compWarnings, req.Threads, -1)
	if err != nil {
		return nil, err
	}
	pf, err := retrieval.ProtocolFingerprintOf(prot.Doc.ProtocolFingerprint, pairsAny(exclPairs), cfg)
	if err != nil {
		return nil, err
	}
	xk := ""
	if exclKey != nil {
		xk = *exclKey
	}
	ef, err := EvaluationFingerprint(req.QueryKey, req.GalleryKey, req.RelevanceKey, xk, cfg.ProtocolFields())
	if err != nil {
		return nil, err
	}
	key := req.OutputKey
	if key == "" {
		key = ScoreKey(ef)
	}
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	doc := &Evaluation{
		Common:            Common{ArtifactType: TypeEvaluation, VertebraeVersion: version.Version, OutputKey: key},
		QueryEmbeddingKey: req.QueryKey, GalleryEmbeddingKey: req.GalleryKey, RelevanceKey: req.RelevanceKey,
		ExclusionsKey: exclKey, PrimaryScore: res.PrimaryScore, QueryEndpoint: qm.Raw, GalleryEndpoint: gm.Raw,
		RetrievalConfig: cfg.AsMap(), ProtocolFingerprint: pf, EvaluationFingerprint: ef,
		CacheEligible: qm.CacheEligible && gm.CacheEligible, CacheStatus: WeakestStatus(qm.CacheStatus, gm.CacheStatus),
		CompressionMetadata: compMeta,
	}
	if doc.Forward, err = json.Marshal(res.Forward); err != nil {
		return nil, err
	}
	if doc.PerQuery.Forward, err = json.Marshal(res.Forward.PerQuery); err != nil {
		return nil, err
	}
	doc.Reverse, doc.PerQuery.Reverse = json.RawMessage("null"), json.RawMessage("null")
	if res.Reverse != nil {
		if doc.Reverse, err = json.Marshal(res.Reverse); err != nil {
			return nil, err
		}
		if doc.PerQuery.Reverse, err = json.Marshal(res.Reverse.PerQuery); err != nil {
			return nil, err
		}
	}
	if err := s.WriteJSON(ctx, key, doc); err != nil {
		return nil, err
	}
	return &Scored{Key: key, Doc: doc}, nil
}

func checkEligible(p *Protocol, excl [][]int, bidirectional bool) error {
	var missing []string
	has := make([]bool, len(p.Doc.GalleryIDs))
	for q := range p.Positives {
		var ex []int
		if q < len(excl) {
			ex = excl[q]
		}
		el := retrieval.EligiblePositives(p.Positives[q], ex)
		if len(el) == 0 {
			missing = append(missing, p.Doc.QueryIDs[q])
		}
		for _, x := range el {
			has[x.Index] = true
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s", retrieval.MissingPositivesMessage(missing))
	}
	if !bidirectional {
		return nil
	}
	for g, ok := range has {
		if !ok {
			missing = append(missing, p.Doc.GalleryIDs[g])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s; missing for %s", retrieval.ErrNoReverseRelation.Error(), msgfmt.IDList(missing))
	}
	return nil
}
