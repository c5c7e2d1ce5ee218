package evaluate

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Backbone maps a dataset's endpoint inputs to embedding matrices.
type Backbone struct {
	Name   string
	Type   string         // extractor_type; "" reports "unknown"
	Recipe map[string]any // JSON-compatible; nil reports {}
	// Encode embeds one endpoint ("query" or "gallery").
	Encode func(ctx context.Context, side string, items retrieval.Items) (matrix.Matrix, error)
	// Variants, when set, replaces Options.Compression for this backbone.
	Variants []compress.Config
	// CacheStatus, when set, gives the endpoint cache status of the
	// backbone's results (SPEC §9.5) once its endpoints are encoded.
	CacheStatus func() string
	// Release, when set, is called once the backbone's variants are scored
	// (or its run failed), to free its endpoints.
	Release func() error
}

// Precomputed is the backbone for datasets whose endpoints already are
// embedding matrices.
func Precomputed(name string) Backbone {
	return Backbone{
		Name: name, Type: "precomputed",
		Recipe: map[string]any{"name": name, "extractor_type": "precomputed"},
		Encode: func(_ context.Context, side string, items retrieval.Items) (matrix.Matrix, error) {
			e, ok := items.(retrieval.EmbeddingItems)
			if !ok {
				return nil, fmt.Errorf("Extractor %s does not support retrieval modality %s", name, items.Modality())
			}
			return e.Matrix(), nil
		},
	}
}

// Options are runtime settings outside the protocol.
type Options struct {
	Threads int // 0 = GOMAXPROCS
	// RunDepth: < 0 no ranking kept; 0 full ranking; N > 0 top N (forward).
	RunDepth int
	// MemoryConfig is recorded in the report (nil: the §7.1 defaults).
	MemoryConfig map[string]any
	// Compression lists the paired-compression variants scored for every
	// backbone, in order (nil: only the uncompressed one, SPEC §8).
	Compression []compress.Config
	// EmbeddingConfig is recorded in the report (nil: the §9.3 defaults).
	EmbeddingConfig map[string]any
	// Comparison sets the §13 comparison computed when the run yields two
	// or more results (zero value: the defaults; Threads is taken from
	// Threads above when unset).
	Comparison compare.Options
}

// Run evaluates every backbone on ds under cfg and returns the ranked result.
// An error in any backbone aborts the run.
func Run(ctx context.Context, ds *retrieval.Dataset, cfg retrieval.Config, backbones []Backbone, opt Options) (*results.Benchmark, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.Clone()
	variants := opt.Compression
	if len(variants) == 0 {
		variants = []compress.Config{compress.Default()}
	}
	compressionConfigs := make([]map[string]any, len(variants))
	for i, c := range variants {
		if err := c.Validate(); err != nil {
			return nil, err
		}
		compressionConfigs[i] = c.AsMap()
	}
	// Names are known before anything runs, except those that depend on a
	// fitted dimension (preserve_variance): those are checked as they appear.
	seen := map[string]bool{}
	for _, b := range backbones {
		for _, c := range b.Variants {
			if err := c.Validate(); err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(compressionConfigs, func(m map[string]any) bool { return reflect.DeepEqual(m, c.AsMap()) }) {
				compressionConfigs = append(compressionConfigs, c.AsMap())
			}
		}
		for _, c := range variantsOf(b, variants) {
			name := compress.VariantName(b.Name, c, 0)
			if c.PreserveVariance != nil && c.IsEnabled() {
				continue
			}
			if seen[name] {
				return nil, fmt.Errorf("%w: %s", results.ErrDuplicateName, msgfmt.Quote(name))
			}
			seen[name] = true
		}
	}
	// Under queries_without_positives: drop the gallery items without an
	// eligible reverse relation are skipped as reverse queries (ReverseFor);
	// at least one must be left.
	var droppedReverse int
	if cfg.Bidirectional && cfg.DropsQueriesWithoutPositives() {
		droppedReverse = len(ds.ReverseQueriesWithoutPositives())
		if droppedReverse == len(ds.GalleryIDs()) {
			return nil, &retrieval.InvalidError{Msg: retrieval.ErrNoReverseRelation.Error() + "; no gallery item has one, so no reverse query is left to evaluate"}
		}
	} else if cfg.Bidirectional {
		if err := ds.CheckBidirectional(); err != nil {
			return nil, err
		}
	}
	// The protocol fingerprint waits for the dataset identity (a content
	// identity hashes every embedding value) and hashes the relevance (its
	// pairs, or the label form of label-derived relevance): it is computed
	// while the backbones run and its error, if any, still takes
	// precedence.
	type fpResult struct {
		fp  string
		err error
	}
	fpc := make(chan fpResult, 1)
	go func() {
		fp, err := ds.ProtocolFingerprint(cfg)
		fpc <- fpResult{fp, err}
	}()

	fpWait := func() (string, error) { r := <-fpc; fpc <- r; return r.fp, r.err }
	bench := &results.Benchmark{
		Metadata: results.Metadata{
			RetrievalConfig:    cfg,
			CompressionConfigs: compressionConfigs,
			EmbeddingConfig:    embeddingConfig(opt.EmbeddingConfig),
			MemoryConfig:       memoryConfig(opt.MemoryConfig),
			VertebraeVersion:   version.Version,
		},
	}
	for _, b := range backbones {
		rs, err := runBackbone(ctx, ds, cfg, b, variantsOf(b, variants), opt)
		if b.Release != nil {
			if rerr := b.Release(); err == nil && rerr != nil {
				err = fmt.Errorf("Retriever '%s': release endpoints: %w", b.Name, rerr)
			}
		}
		if err != nil {
			if _, ferr := fpWait(); ferr != nil {
				return nil, ferr
			}
			return nil, err
		}
		bench.ExtractorResults = append(bench.ExtractorResults, rs...)
	}
	fp, err := fpWait()
	if err != nil {
		return nil, err
	}
	// The summary names the identity key, which may still have been
	// hashed while the backbones ran.
	bench.DatasetSummary = ds.Summary()
	bench.DatasetSummary.NDroppedReverseQueries = droppedReverse
	bench.Metadata.ProtocolFingerprint = fp
	if bench.Metadata.TaskDigests, err = ds.TaskDigests(cfg); err != nil {
		return nil, err
	}
	if err := bench.Finalize(); err != nil {
		return nil, err
	}
	if len(bench.ExtractorResults) >= 2 { // SPEC §6.6
		co := opt.Comparison
		if co.Threads == 0 {
			co.Threads = opt.Threads
		}
		if bench.Comparison, err = compare.Compute(ctx, bench, co); err != nil {
			return nil, err
		}
	}
	return bench, nil
}

func embeddingConfig(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{"batch_size": 128, "streaming_enabled": true}
	}
	return m
}

func variantsOf(b Backbone, def []compress.Config) []compress.Config {
	if len(b.Variants) > 0 {
		return b.Variants
	}
	return def
}

func memoryConfig(m map[string]any) map[string]any {
	if m == nil {
		return memory.Default().AsMap()
	}
	return m
}

// runBackbone encodes both endpoints once and scores every compression
// variant of them (SPEC §9.2 step 5).
func runBackbone(ctx context.Context, ds *retrieval.Dataset, cfg retrieval.Config, b Backbone, variants []compress.Config, opt Options) ([]*results.ExtractorResult, error) {
	t0 := time.Now()
	// Encoders name the extractor and endpoint in their errors.
	q, err := b.Encode(ctx, "query", ds.Queries())
	if err != nil {
		return nil, err
	}
	g, err := b.Encode(ctx, "gallery", ds.Gallery())
	if err != nil {
		return nil, err
	}
	if q.Rows() != ds.NumQueries() {
		return nil, fmt.Errorf("Retriever '%s' query embeddings returned %d embeddings for %d rows", b.Name, q.Rows(), ds.NumQueries())
	}
	if g.Rows() != ds.NumGallery() {
		return nil, fmt.Errorf("Retriever '%s' gallery embeddings returned %d embeddings for %d rows", b.Name, g.Rows(), ds.NumGallery())
	}
	extraction := time.Since(t0).Seconds()
	var out []*results.ExtractorResult
	for _, c := range variants {
		comp, err := compress.Apply(ctx, c, q, g)
		if err != nil {
			return nil, fmt.Errorf("Retriever '%s' compression %s: %w", b.Name, c.Method, err)
		}
		r, err := scoreVariant(ctx, ds, cfg, b, comp, opt)
		if err != nil {
			return nil, err
		}
		dim := 0
		if d, ok := comp.Metadata["compressed_dim"].(int); ok {
			dim = d
		}
		r.Name = compress.VariantName(b.Name, c, dim)
		r.Runtime.ExtractionSeconds = extraction
		if b.CacheStatus != nil {
			r.CacheStatus = b.CacheStatus()
		}
		out = append(out, r)
	}
	return out, nil
}

// scoreVariant scores one (compressed) pair of endpoints in both directions.
func scoreVariant(ctx context.Context, ds *retrieval.Dataset, cfg retrieval.Config, b Backbone, comp *compress.Result, opt Options) (*results.ExtractorResult, error) {
	t1 := time.Now()
	fwdProblem := rank.Problem{
		Queries: comp.Query, Gallery: comp.Gallery, QueryIDs: ds.QueryIDs(), GalleryIDs: ds.GalleryIDs(),
		Exclusions: ds.RawExclusions(),
	}
	if c := ds.Classes(); c != nil {
		fwdProblem.Classes = c // label-derived relevance stays implicit (SPEC §2.7)
	} else {
		fwdProblem.Relevance = ds.RawRelevance()
	}
	res, err := Pair(ctx, fwdProblem, cfg, comp.Warnings, opt.Threads, opt.RunDepth)
	if err != nil {
		return nil, err
	}
	res.ExtractorType, res.Recipe, res.CompressionMetadata = b.Type, b.Recipe, comp.Metadata
	if res.ExtractorType == "" {
		res.ExtractorType = "unknown"
	}
	if res.Recipe == nil {
		res.Recipe = map[string]any{}
	}
	res.Runtime.ScoringSeconds = time.Since(t1).Seconds()
	return res, nil
}

// Pair scores one pair of (already compressed) endpoints: the forward
// direction, the reverse one when cfg is bidirectional, primary_score (the
// forward score or the mean of both, SPEC §4.8) and the sorted union of the
// directions' and compressionWarnings. It is the one scoring path of local
// and artifact-backed runs (SPEC §10.7), which are therefore bit-identical.
// The result has no name, type, recipe, compression metadata or runtime.
func Pair(ctx context.Context, p rank.Problem, cfg retrieval.Config, compressionWarnings []string, threads, runDepth int) (*results.ExtractorResult, error) {
	fwd, err := Direction(ctx, p, cfg, threads, runDepth)
	if err != nil {
		return nil, err
	}
	res := &results.ExtractorResult{Forward: fwd, PrimaryScore: fwd.Score}
	if cfg.Bidirectional {
		rp, err := ReverseFor(p, cfg, p.Gallery.Rows())
		if err != nil {
			return nil, err
		}
		rev, err := Direction(ctx, rp, cfg, threads, -1)
		if err != nil {
			return nil, err
		}
		res.Reverse = rev
		res.PrimaryScore = (fwd.Score + rev.Score) / 2
	}
	ws := append(append([]string(nil), fwd.Warnings...), compressionWarnings...)
	if res.Reverse != nil {
		ws = append(ws, res.Reverse.Warnings...)
	}
	res.Warnings = sortedUnique(ws)
	return res, nil
}

// Reverse swaps the roles of queries and gallery (SPEC §4.8): relevance is
// transposed and exclusions are swapped.
func Reverse(p rank.Problem) rank.Problem {
	return ReverseRows(p, p.Gallery.Rows())
}

// ReverseRows is Reverse for a problem of ng gallery rows whose matrices
// may be absent (finishing gallery-shard partials reads no embeddings).
func ReverseRows(p rank.Problem, ng int) rank.Problem {
	var rel [][]retrieval.Positive
	var classes *retrieval.Classes
	if p.Classes != nil {
		classes = p.Classes.Reverse()
	} else {
		rel = make([][]retrieval.Positive, ng)
		for q, ps := range p.Relevance { // ascending q keeps each list sorted
			for _, x := range ps {
				rel[x.Index] = append(rel[x.Index], retrieval.Positive{Index: q, Grade: x.Grade})
			}
		}
	}
	var ex [][]int
	if p.Exclusions != nil {
		ex = make([][]int, ng)
		for q, gs := range p.Exclusions {
			for _, g := range gs {
				ex[g] = append(ex[g], q)
			}
		}
	}
	return rank.Problem{
		Queries: p.Gallery, Gallery: p.Queries, QueryIDs: p.GalleryIDs, GalleryIDs: p.QueryIDs,
		Relevance: rel, Exclusions: ex, Classes: classes,
	}
}

// ReverseFor is the reverse problem cfg scores for a problem of ng gallery
// rows: ReverseRows, restricted under queries_without_positives: drop to
// the gallery rows with an eligible reverse positive (the others stay
// forward candidates; the queries stay reverse candidates). The restricted
// problem is exactly the reverse one of a run where those gallery rows are
// no reverse queries, so its results are too. Matrices absent from p stay
// absent.
func ReverseFor(p rank.Problem, cfg retrieval.Config, ng int) (rank.Problem, error) {
	r := ReverseRows(p, ng)
	keep, err := reverseKeep(r, cfg, ng)
	if err != nil || keep == nil {
		return r, err
	}
	return selectQueries(r, keep, 0)
}

// ReverseQueries lists the gallery rows that are reverse queries under cfg
// (ascending: the reverse problem's query i is gallery row keep[i]), or nil
// when every one of the ng rows is.
func ReverseQueries(p rank.Problem, cfg retrieval.Config, ng int) ([]int, error) {
	return reverseKeep(ReverseRows(p, ng), cfg, ng)
}

// reverseKeep is ReverseQueries of the unrestricted reverse problem r.
func reverseKeep(r rank.Problem, cfg retrieval.Config, ng int) ([]int, error) {
	if !cfg.DropsQueriesWithoutPositives() {
		return nil, nil
	}
	keep := make([]int, 0, ng)
	for g := range ng {
		var ex []int
		if r.Exclusions != nil {
			ex = r.Exclusions[g]
		}
		n := 0
		if r.Classes != nil {
			n = r.Classes.EligibleCount(g, ex)
		} else {
			n = len(retrieval.EligiblePositives(r.Relevance[g], ex))
		}
		if n > 0 {
			keep = append(keep, g)
		}
	}
	if len(keep) == ng {
		return nil, nil
	}
	if len(keep) == 0 {
		return nil, &retrieval.InvalidError{Msg: retrieval.ErrNoReverseRelation.Error() + "; no gallery item has one, so no reverse query is left to evaluate"}
	}
	return keep, nil
}

// selectQueries is the problem of p's queries rows (ascending) against
// p's whole gallery: one query's results depend on nothing of the others.
// The query matrix holds rows from base on (a gallery window reversed).
// Contiguous rows of a dense endpoint are a view, not a copy.
func selectQueries(p rank.Problem, rows []int, base int) (rank.Problem, error) {
	out := rank.Problem{Gallery: p.Gallery, GalleryIDs: p.GalleryIDs, QueryIDs: make([]string, len(rows))}
	for i, q := range rows {
		out.QueryIDs[i] = p.QueryIDs[q]
	}
	if p.Queries != nil {
		if d, ok := p.Queries.(*matrix.Dense); ok && len(rows) > 0 && rows[len(rows)-1]-rows[0] == len(rows)-1 {
			out.Queries = d.RowSlice(rows[0]-base, rows[0]-base+len(rows))
		} else {
			local := rows
			if base != 0 {
				local = make([]int, len(rows))
				for i, q := range rows {
					local[i] = q - base
				}
			}
			m, err := retrieval.SelectRows(p.Queries, local)
			if err != nil {
				return rank.Problem{}, err
			}
			out.Queries = m
		}
	}
	if p.Relevance != nil {
		out.Relevance = make([][]retrieval.Positive, len(rows))
		for i, q := range rows {
			out.Relevance[i] = p.Relevance[q]
		}
	}
	if p.Exclusions != nil {
		out.Exclusions = make([][]int, len(rows))
		for i, q := range rows {
			out.Exclusions[i] = p.Exclusions[q]
		}
	}
	if p.Classes != nil {
		out.Classes = p.Classes.SelectQueries(rows)
	}
	return out, nil
}

// Direction scores one direction and builds its score result (SPEC §5.1).
// runDepth < 0 keeps no ranking, 0 the full ranking, N > 0 the top N.
func Direction(ctx context.Context, p rank.Problem, cfg retrieval.Config, threads, runDepth int) (*results.ScoreResult, error) {
	opts, err := DirectionOptions(cfg, threads, runDepth)
	if err != nil {
		return nil, err
	}
	// Label relevance (every grade 1): ranks come ascending and no
	// per-positive lists are built (SPEC §2.7).
	opts.SortedRanks = p.Classes != nil
	// The pooled positive scores are summarised by the scorer, which need
	// not hold them all (SPEC §4.7).
	opts.Pooled = &rank.Pooled{}
	nq, ng := 0, 0
	if p.Queries != nil { // otherwise the scorer's checks fail
		nq = p.Queries.Rows()
	}
	if p.Gallery != nil {
		ng = p.Gallery.Rows()
	}
	return direction(p, cfg, runDepth, nq, ng, opts.SortedRanks, opts.Pooled, nil, func(fn func(q int, r rank.QueryResult) error) error {
		return rank.ScoreEach(ctx, p, opts, fn)
	})
}

// DirectionOptions are the scorer options Direction uses for cfg: the
// protocol fields, the batch sizes, and the kept ranking of runDepth.
func DirectionOptions(cfg retrieval.Config, threads, runDepth int) (rank.Options, error) {
	sim, err := rank.ParseSimilarity(cfg.Similarity)
	if err != nil {
		return rank.Options{}, err
	}
	prec := rank.Float64
	if cfg.Precision == retrieval.PrecisionF32 {
		prec = rank.Float32
	}
	return rank.Options{
		Similarity: sim, Precision: prec, QueryBatch: cfg.QueryBatchSize, GalleryBatch: cfg.GalleryBatchSize,
		Threads: threads, MaxPairwise: cfg.MaxPairwiseComparisons,
		TopN: max(runDepth, 0), FullRanking: runDepth == 0,
	}, nil
}

// direction builds a score result from per-query results, which each
// delivers (once per query, in any order, possibly concurrently). Local
// scoring and finished gallery-shard partials (SPEC §11.3) share it, so
// their results are bit-identical.
//
// sortedRanks says the results' ranks come ascending with every grade 1
// (label relevance). The pooled positive scores (SPEC §4.7) come either
// summarised by the scorer (pooled != nil, after each returns; results
// carry MaxPositive) or in each result's Scores, which are then kept at
// fixed offsets in query order (counts gives the eligible positives per
// query once the first result arrives).
func direction(p rank.Problem, cfg retrieval.Config, runDepth, nq, ng int, sortedRanks bool, pooled *rank.Pooled, counts func() []int, each func(fn func(q int, r rank.QueryResult) error) error) (*results.ScoreResult, error) {
	gain := metrics.Exponential
	if cfg.Gain == retrieval.GainLinear {
		gain = metrics.Linear
	}
	rows := make([]results.QueryRow, nq)
	var top [][]rank.Candidate
	if runDepth >= 0 {
		top = make([][]rank.Candidate, nq)
	}
	// Each query's result is folded in as soon as it is final (the scorer
	// calls back from several workers), so only the pooled positive scores
	// outlive it.
	var once sync.Once
	var offsets []int
	var posScores []float64
	nn, maxPos, hasNeg := make([]float64, nq), make([]float64, nq), make([]bool, nq)
	uniform := &uniformMetrics{ks: cfg.Ks, gain: gain}
	err := each(func(q int, r rank.QueryResult) error {
		var m metrics.Values
		if sortedRanks {
			m = uniform.query(r.Ranks)
		} else {
			grades := make([]float64, len(r.Positives))
			for i, x := range r.Positives {
				grades[i] = x.Grade
			}
			m = metrics.Query(r.Ranks, grades, cfg.Ks, gain)
		}
		rows[q] = results.QueryRow{QueryID: p.QueryIDs[q], Metrics: m}
		nn[q], hasNeg[q] = r.NearestNegative, r.HasNegative
		if pooled != nil {
			maxPos[q] = r.MaxPositive
		} else {
			once.Do(func() { // the problem has passed the scorer's checks
				counts := counts()
				offsets = make([]int, nq+1)
				for i, c := range counts {
					offsets[i+1] = offsets[i] + c
				}
				posScores = make([]float64, offsets[nq])
			})
			copy(posScores[offsets[q]:offsets[q+1]], r.Scores)
			maxPos[q] = slices.Max(r.Scores)
		}
		if top != nil {
			top[q] = r.Top
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var positive metrics.Summary
	if pooled != nil {
		positive = pooled.Summary
	} else {
		positive = metrics.SummariseInPlace(posScores)
	}
	var nearest, margins []float64
	var warnings []string
	for q := range nq {
		if hasNeg[q] {
			nearest = append(nearest, nn[q])
			margins = append(margins, maxPos[q]-nn[q])
		} else {
			warnings = append(warnings, fmt.Sprintf("Query %s has no negative candidates.", msgfmt.Quote(p.QueryIDs[q])))
		}
	}
	mean := metrics.MeanOf(nq, func(i int) metrics.Values { return rows[i].Metrics })
	score, _ := mean.Get(cfg.PrimaryMetric)
	worst := worstRows(rows, cfg.PrimaryMetric, cfg.WorstQueries)
	res := &results.ScoreResult{
		Score: score, PrimaryMetric: cfg.PrimaryMetric, Metrics: results.MetricObject{Values: mean},
		Diagnostics: results.Diagnostics{
			PositiveSimilarity:        positive,
			NearestNegativeSimilarity: metrics.Summarise(nearest),
			RetrievalMargin:           metrics.Summarise(margins),
			EligibleQueries:           nq,
			WorstQueries:              worst,
		},
		Warnings: sortedUnique(warnings),
		Metadata: results.ScoreMetadata{
			Config: cfg.Clone(), NQueries: nq, NGallery: ng, Similarity: cfg.Similarity, Exact: true,
		},
		PerQuery: rows,
		Margins:  margins,
	}
	for _, s := range []metrics.Summary{res.Diagnostics.PositiveSimilarity, res.Diagnostics.NearestNegativeSimilarity, res.Diagnostics.RetrievalMargin} {
		for _, v := range []*float64{s.Mean, s.Median, s.Min, s.Max} {
			if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
				return nil, fmt.Errorf("non-finite similarity summary (scores too large for the summary statistics)")
			}
		}
	}
	if runDepth >= 0 {
		run := &results.Run{QueryIDs: p.QueryIDs, GalleryIDs: p.GalleryIDs, Float32: cfg.Precision == retrieval.PrecisionF32,
			Candidates: make([][]results.RankedCandidate, nq)}
		for q, rt := range top {
			cs := make([]results.RankedCandidate, len(rt))
			for i, c := range rt {
				cs[i] = results.RankedCandidate{Index: c.Index, Score: c.Score}
			}
			run.Candidates[q] = cs
		}
		res.Run = run
	}
	return res, nil
}

// worstRows is the first w rows of rows stably sorted by ascending
// primary metric (ties keep query order): for a small w, the w smallest
// by (value, query index) picked in one pass, without copying or sorting
// every row (a reverse direction has a row per gallery row).
func worstRows(rows []results.QueryRow, primary string, w int) []results.QueryRow {
	value := func(i int) float64 { v, _ := rows[i].Metrics.Get(primary); return v }
	if w > 64 || w >= len(rows) {
		worst := slices.Clone(rows)
		sort.SliceStable(worst, func(a, b int) bool {
			va, _ := worst[a].Metrics.Get(primary)
			vb, _ := worst[b].Metrics.Get(primary)
			return va < vb
		})
		return worst[:max(0, min(w, len(worst)))]
	}
	if w <= 0 {
		return []results.QueryRow{}
	}
	// pick holds the row indices chosen so far in (value, index) order;
	// a later row enters only with a smaller value, never on a tie.
	pick := make([]int, 0, w+1)
	vals := make([]float64, 0, w+1)
	for i := range rows {
		v := value(i)
		if len(pick) == w && !(v < vals[w-1]) {
			continue
		}
		at := len(pick)
		for at > 0 && v < vals[at-1] {
			at--
		}
		pick, vals = slices.Insert(pick, at, i), slices.Insert(vals, at, v)
		if len(pick) > w {
			pick, vals = pick[:w], vals[:w]
		}
	}
	out := make([]results.QueryRow, len(pick))
	for k, i := range pick {
		out[k] = rows[i]
	}
	return out
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	out = slices.Compact(out)
	if out == nil {
		out = []string{}
	}
	return out
}
