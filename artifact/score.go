package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/results"
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

// Scored is a committed score artifact. Doc holds the document's scalar
// fields; its directions and per-query rows (Forward, Reverse, PerQuery)
// were streamed into the store and are not held: ReadJSON the key for
// them.
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
	job, err := s.PrepareScore(ctx, req)
	if err != nil {
		return nil, err
	}
	problem, err := s.LoadProblem(ctx, job)
	if err != nil {
		return nil, err
	}
	_, compWarnings, err := job.Compression()
	if err != nil {
		return nil, err
	}
	res, err := evaluate.Pair(ctx, problem, job.cfg, compWarnings, req.Threads, -1)
	if err != nil {
		return nil, err
	}
	return s.CommitScore(ctx, job, res)
}

// ScoreJob is a score request that passed the checks of SPEC §10.7 that
// need no embedding values (sides, identities, relevance, IDs, widths,
// compression run, eligible positives, bidirectional coverage), with its
// fingerprints and score key. Gallery shards, their finalize step and
// engines (Beam) share it.
type ScoreJob struct {
	req       ScoreRequest
	cfg       retrieval.Config
	qm, gm    *EndpointMeta
	prot      *Protocol
	exclPairs [][2]int
	excl      [][]int
	exclKey   *string
	pf, ef    string
	key       string
}

// Key is the score key: the request's OutputKey or
// retrieval/scores/v2-<evaluation fingerprint>.
func (j *ScoreJob) Key() string { return j.key }

// EvaluationFingerprint is H of the SPEC §10.3 evaluation fields.
func (j *ScoreJob) EvaluationFingerprint() string { return j.ef }

// ProtocolFingerprint is the SPEC §10.3 protocol fingerprint.
func (j *ScoreJob) ProtocolFingerprint() string { return j.pf }

// Config is the validated retrieval config.
func (j *ScoreJob) Config() retrieval.Config { return j.cfg.Clone() }

// Problem is the scoring problem without its matrices (IDs, relevance,
// exclusions): enough to finish gallery-shard partials. Label-derived
// relevance stays implicit (Classes), as in a local run.
func (j *ScoreJob) Problem() rank.Problem { return j.prot.Problem(j.excl) }

// Compression is the §8.4 metadata of the scored pair and its warnings:
// the compression run's, or the no-op metadata of the uncompressed pair
// (computed from the endpoint metadata, which ReadEndpoint verifies
// against the arrays).
func (j *ScoreJob) Compression() (map[string]any, []string, error) {
	if j.gm.Compression != nil {
		ws := []string{}
		if list, ok := j.gm.Compression["warnings"].([]any); ok {
			for _, w := range list {
				if s, ok := w.(string); ok {
					ws = append(ws, s)
				}
			}
		}
		return j.gm.Compression, ws, nil
	}
	dt, err := matrix.ParseDType(j.gm.DType)
	if err != nil {
		return nil, nil, keyErr(j.req.GalleryKey, ErrInvalidMetadata, err.Error())
	}
	shape := func(m *EndpointMeta) matrix.Matrix {
		return shapeOnly{rows: m.NSamples, cols: m.EmbeddingDim, dtype: dt, sparse: m.Sparse}
	}
	res, err := compress.Apply(context.Background(), compress.Default(), shape(j.qm), shape(j.gm))
	if err != nil {
		return nil, nil, err
	}
	return res.Metadata, []string{}, nil
}

// shapeOnly stands for an endpoint where only its shape is needed (the
// no-op compression metadata); its values are never read.
type shapeOnly struct {
	rows, cols int
	dtype      matrix.DType
	sparse     bool
}

func (m shapeOnly) Rows() int                 { return m.rows }
func (m shapeOnly) Cols() int                 { return m.cols }
func (m shapeOnly) DType() matrix.DType       { return m.dtype }
func (m shapeOnly) Sparse() bool              { return m.sparse }
func (m shapeOnly) RowFloat64(int, []float64) { panic("artifact: shapeOnly has no values") }

// PrepareScore runs the checks of SPEC §10.7 that read no embedding values,
// in order, and computes the fingerprints and the score key.
func (s *Store) PrepareScore(ctx context.Context, req ScoreRequest) (*ScoreJob, error) {
	return s.prepareJob(ctx, req, wholeRelevance)
}

// relevanceRead says how a job reads its relevance artifact: whole
// (ReadRelevance), or streamed as a view keeping the gallery IDs of the
// rows held selects (of ng rows; none when nil), trusted or verified.
type relevanceRead struct {
	view    bool
	held    func(ng, g int) bool
	trusted bool
	// named, for a view keeping no ID, selects the rows whose IDs a first
	// message reads in one pass (a shard's rows); nil: one row at a time.
	named func(ng, g int) bool
}

// wholeRelevance reads the document whole, every ID kept.
var wholeRelevance = relevanceRead{}

// shardRelevance is a gallery shard's stage (SPEC §11.3): a trusted view,
// whose fingerprint and gallery ID hash are left to finalize, keeping the
// IDs of the shard's rows only when it names them as reverse queries
// (bidirectional), none otherwise.
func shardRelevance(cfg retrieval.Config, shard rank.Shard) relevanceRead {
	rows := func(ng, g int) bool { return shard.Holds(ng, g) }
	r := relevanceRead{view: true, trusted: true, named: rows}
	if cfg.Bidirectional {
		r.held = rows
	}
	return r
}

// namelessRelevance is a verified view keeping no gallery ID (a worker that
// names gallery rows only in messages: one-direction finalize).
var namelessRelevance = relevanceRead{view: true}

func (s *Store) prepareJob(ctx context.Context, req ScoreRequest, rr relevanceRead) (*ScoreJob, error) {
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
	if err := checkSides(req.QueryKey, qm, req.GalleryKey, gm); err != nil {
		return nil, err
	}
	// (2) one dataset identity.
	if qm.DatasetIdentityKey == "" || qm.DatasetIdentityKey != gm.DatasetIdentityKey {
		return nil, checkErr(req.GalleryKey, fmt.Sprintf("query and gallery artifacts must share one non-empty dataset identity; dataset identities differ: %q (query %s) and %q", qm.DatasetIdentityKey, req.QueryKey, gm.DatasetIdentityKey))
	}
	// (3) relevance of that dataset, fingerprint verified.
	var prot *Protocol
	if rr.view {
		ng := gm.NSamples
		o := viewOptions{keepIDs: rr.held != nil, trusted: rr.trusted}
		if rr.held != nil {
			o.held = func(g int) bool { return rr.held(ng, g) }
		}
		prot, err = s.readRelevanceView(ctx, req.RelevanceKey, o)
		if err == nil && prot.view && prot.Doc.GalleryIDs == nil {
			var named func(g int) bool
			if rr.named != nil {
				named = func(g int) bool { return rr.named(ng, g) }
			}
			prot.name = s.idLookup(ctx, req.RelevanceKey, named)
		}
	} else {
		prot, err = s.ReadRelevance(ctx, req.RelevanceKey)
	}
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
		n         int
		sum       func() (string, error)
	}{
		{req.QueryKey, "query", qm, len(prot.Doc.QueryIDs), func() (string, error) { return IDsSHA256(prot.Doc.QueryIDs) }},
		{req.GalleryKey, "gallery", gm, prot.Doc.NGallery, prot.galleryIDsSum},
	} {
		if c.em.NSamples != c.n {
			return nil, checkErr(c.key, fmt.Sprintf("%s IDs: endpoint has %d rows, relevance has %d %s IDs", c.what, c.em.NSamples, c.n, c.what))
		}
		if c.what == "gallery" && prot.trusted {
			continue // checked by finalize
		}
		sum, err := c.sum()
		if err != nil {
			return nil, err
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
	j := &ScoreJob{req: req, cfg: cfg, qm: qm, gm: gm, prot: prot, exclPairs: prot.Doc.Exclusions, excl: prot.Exclusions}
	if req.ExclusionsKey != "" {
		if j.exclPairs, j.excl, err = s.ReadExclusions(ctx, req.ExclusionsKey, len(prot.Doc.QueryIDs), prot.Doc.NGallery); err != nil {
			return nil, err
		}
		k := req.ExclusionsKey
		j.exclKey = &k
	}
	// (7) scorer rules: eligible positives, bidirectional coverage; zero
	// norms and finiteness are checked by the scorer itself.
	bidi := cfg.Bidirectional && !cfg.DropsQueriesWithoutPositives()
	if err := checkEligible(prot, j.excl, bidi); err != nil {
		if prot.view { // the message names rows this view does not hold
			full, ferr := s.ReadRelevance(ctx, req.RelevanceKey)
			if ferr != nil {
				return nil, ferr
			}
			if ferr = checkEligible(full, j.excl, bidi); ferr != nil {
				err = ferr
			}
		}
		return nil, checkErr(req.RelevanceKey, err.Error())
	}
	if j.pf, err = retrieval.ProtocolFingerprintOf(prot.Doc.ProtocolFingerprint, pairsAny(j.exclPairs), cfg); err != nil {
		return nil, err
	}
	if j.ef, err = EvaluationFingerprint(req.QueryKey, req.GalleryKey, req.RelevanceKey, req.ExclusionsKey, cfg.ProtocolFields()); err != nil {
		return nil, err
	}
	j.key = req.OutputKey
	if j.key == "" {
		j.key = ScoreKey(j.ef)
	}
	if err := ValidateKey(j.key); err != nil {
		return nil, err
	}
	// Before any scoring: the score key may receive a score.
	if err := s.CheckOutput(ctx, j.key, TypeEvaluation, j.writeOpts()...); err != nil {
		return nil, err
	}
	return j, nil
}

// LoadProblem reads (and verifies) both endpoints of a prepared job and
// returns the scoring problem with its matrices.
func (s *Store) LoadProblem(ctx context.Context, j *ScoreJob) (rank.Problem, error) {
	if err := s.checkEndpointMemory(ctx, j, j.gm.NSamples); err != nil {
		return rank.Problem{}, err
	}
	q, _, err := s.ReadEndpoint(ctx, j.req.QueryKey)
	if err != nil {
		return rank.Problem{}, err
	}
	g, _, err := s.ReadEndpoint(ctx, j.req.GalleryKey)
	if err != nil {
		return rank.Problem{}, err
	}
	p := j.Problem()
	p.Queries, p.Gallery = q, g
	return p, nil
}

// CommitScore writes the retrieval_evaluation artifact of a job's result
// (evaluate.Pair, or evaluate.PairFromPartials of its gallery shards) at
// the job's score key.
func (s *Store) CommitScore(ctx context.Context, j *ScoreJob, res *results.ExtractorResult) (*Scored, error) {
	compMeta, _, err := j.Compression()
	if err != nil {
		return nil, err
	}
	qm, gm, cfg := j.qm, j.gm, j.cfg
	doc := &Evaluation{
		Common:            Common{ArtifactType: TypeEvaluation, VertebraeVersion: version.Version, OutputKey: j.key},
		QueryEmbeddingKey: j.req.QueryKey, GalleryEmbeddingKey: j.req.GalleryKey, RelevanceKey: j.req.RelevanceKey,
		ExclusionsKey: j.exclKey, PrimaryScore: res.PrimaryScore, QueryEndpoint: qm.Raw, GalleryEndpoint: gm.Raw,
		RetrievalConfig: cfg.AsMap(), ProtocolFingerprint: j.pf, EvaluationFingerprint: j.ef,
		CacheEligible: qm.CacheEligible && gm.CacheEligible, CacheStatus: WeakestStatus(qm.CacheStatus, gm.CacheStatus),
		CompressionMetadata: compMeta,
	}
	// The per-query parts (a row per query, and again as columns in each
	// direction: a row per gallery row for the reverse direction) are
	// written from the results as the document streams into the store
	// (canonjson.Array), never held as text or as a tree of JSON values.
	md, err := evaluationDocument(doc, res)
	if err != nil {
		return nil, &Error{Key: j.key, Msg: "metadata is not JSON-compatible", Err: err}
	}
	if err := s.writeJSONStream(ctx, j.key, TypeEvaluation, md, j.writeOpts()...); err != nil {
		return nil, err
	}
	return &Scored{Key: j.key, Doc: doc}, nil
}

// scoreObject is a score result as the generic object canonjson encodes
// (its MarshalJSON), the columnar per_query block written from the rows.
func scoreObject(r *results.ScoreResult) (map[string]any, error) {
	plain := *r
	plain.PerQuery = nil
	m, err := genericObject(plain)
	if err != nil {
		return nil, err
	}
	if r.PerQuery != nil {
		m["per_query"] = results.CanonicalPerQuery(r.PerQuery)
	}
	return m, nil
}

// evaluationDocument is doc (its scalar fields) with res's directions and
// per-query rows, as the generic object canonjson encodes.
func evaluationDocument(doc *Evaluation, res *results.ExtractorResult) (map[string]any, error) {
	small := *doc
	small.Forward, small.Reverse, small.PerQuery = nil, nil, PerQuery{}
	m, err := genericObject(small)
	if err != nil {
		return nil, err
	}
	dirs := map[string]any{"forward": nil, "reverse": nil}
	rows := map[string]any{"forward": nil, "reverse": nil}
	for name, r := range map[string]*results.ScoreResult{"forward": res.Forward, "reverse": res.Reverse} {
		if r == nil {
			continue
		}
		if dirs[name], err = scoreObject(r); err != nil {
			return nil, err
		}
		rows[name] = results.CanonicalRows(r.PerQuery)
	}
	m["forward"], m["reverse"] = dirs["forward"], dirs["reverse"]
	m["per_query"] = rows
	return m, nil
}

// genericObject is v (a struct) as a JSON object of generic values.
func genericObject(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

func checkEligible(p *Protocol, excl [][]int, bidirectional bool) error {
	var missing []string
	var has []bool // the reverse coverage, one flag per gallery row: bidirectional only
	if bidirectional {
		has = make([]bool, p.Doc.NGallery)
	}
	if c := p.Classes; c != nil {
		for q := range p.Doc.QueryIDs {
			var ex []int
			if q < len(excl) {
				ex = excl[q]
			}
			if c.EligibleCount(q, ex) == 0 {
				missing = append(missing, p.Doc.QueryIDs[q])
			}
		}
		if bidirectional {
			has = c.ReverseEligible(excl)
		}
	}
	for q := range p.Positives {
		var ex []int
		if q < len(excl) {
			ex = excl[q]
		}
		el := retrieval.EligiblePositives(p.Positives[q], ex)
		if len(el) == 0 {
			missing = append(missing, p.Doc.QueryIDs[q])
		}
		if has != nil {
			for _, x := range el {
				has[x.Index] = true
			}
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
			id := "" // a view keeping no ID: the caller reads them all for the message
			if g < len(p.Doc.GalleryIDs) {
				id = p.Doc.GalleryIDs[g]
			}
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s", retrieval.NoReverseRelationMessage(missing))
	}
	return nil
}

// writeOpts marks a score written at a user-chosen --output-key.
func (j *ScoreJob) writeOpts() []WriteOption {
	if j.req.OutputKey != "" {
		return []WriteOption{ExplicitKey()}
	}
	return nil
}
