package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/rank"
)

// TypeEvaluationPartial is one gallery shard of a score (SPEC §11.3).
const TypeEvaluationPartial = "retrieval_evaluation_partial"

// PartialColumns name the columns of a partial's array: one row per
// eligible positive (forward positives in query order, then ascending
// gallery index; then the reverse ones likewise), holding the shard's
// count of eligible candidates that precede the positive (an integer,
// exact in float64 below 2⁵³) and the positive's score.
var PartialColumns = []string{"preceding_count", "positive_score"}

// PartialCountColumns name the column of a count stage's partial (one
// direction, every positives stage committed): the counts alone, in the
// same rows; the positives' scores are the positives stages', which
// finalize reads once instead of once per shard.
var PartialCountColumns = []string{"preceding_count"}

// EvaluationPartial is retrieval_evaluation_partial, the metadata of gallery
// shard Shard.ShardIndex of Shard.TotalShards of the score at ScoreKey. The
// identity fields repeat the score's, so finalize can tell a foreign or
// stale partial from a valid one.
type EvaluationPartial struct {
	Common
	ArrayInfo
	ScoreKey              string            `json:"score_key"`
	QueryEmbeddingKey     string            `json:"query_embedding_key"`
	GalleryEmbeddingKey   string            `json:"gallery_embedding_key"`
	RelevanceKey          string            `json:"relevance_key"`
	ExclusionsKey         *string           `json:"exclusions_key"`
	RetrievalConfig       map[string]any    `json:"retrieval_config"`
	ProtocolFingerprint   string            `json:"protocol_fingerprint"`
	EvaluationFingerprint string            `json:"evaluation_fingerprint"`
	Shard                 PartialShard      `json:"shard"`
	NQueries              int               `json:"n_queries"`
	NGallery              int               `json:"n_gallery"`
	Columns               []string          `json:"columns"`
	Forward               PartialDirection  `json:"forward"`
	Reverse               *PartialDirection `json:"reverse"`
}

// PartialShard locates a gallery shard. Its reverse direction is the
// shard's block of reverse queries (evaluate.ReverseBlock), scored against
// every original query.
type PartialShard struct {
	TotalShards int    `json:"total_shards"`
	ShardIndex  int    `json:"shard_index"`
	ShardBy     string `json:"shard_by"` // contiguous | modulo
}

// PartialDirection is one direction of a partial: its rows of the array
// and, per query, the best negative score among the shard's candidates
// (null when the shard holds none). Forward: every query against the
// shard's shard_rows gallery rows. Reverse: the block [query_lo, query_hi)
// of reverse queries (shard_rows of them) against every candidate, so its
// counts are final.
type PartialDirection struct {
	NPositives      int        `json:"n_positives"`
	ShardRows       int        `json:"shard_rows"`
	QueryLo         *int       `json:"query_lo,omitempty"`
	QueryHi         *int       `json:"query_hi,omitempty"`
	NearestNegative []*float64 `json:"nearest_negative"`
}

// ScoredPartial is a committed partial.
type ScoredPartial struct {
	Key, ScoreKey string
	Doc           *EvaluationPartial
}

// ScorePartial scores gallery shard `shard` of the request (and, when
// bidirectional, its block of reverse queries) after every check Score
// runs, and commits the partial at PartialKey(score key, shard.Index,
// shard.Total). When every contiguous shard's positives stage is committed
// (ScorePositivesStage), this is the count stage: the shard reads only its
// gallery rows and takes every positive's score from the stages; without
// them the shard reads the whole gallery and scores the positives itself.
// Re-running it rewrites identical content.
func (s *Store) ScorePartial(ctx context.Context, req ScoreRequest, shard rank.Shard) (*ScoredPartial, error) {
	if err := shard.Validate(); err != nil {
		return nil, err
	}
	job, err := s.prepareJob(ctx, req, shardRelevance(req.Config, shard))
	if err != nil {
		return nil, err
	}
	var pp *evaluate.PairPartial
	var pos *rank.PositiveScores
	if pos, err = s.readPositives(ctx, job, shard.Total); err != nil {
		return nil, err
	}
	if pos == nil && job.prot.view {
		// No positives stages: this shard scores over the whole gallery,
		// whose every ID a failure may name.
		if job, err = s.PrepareScore(ctx, req); err != nil {
			return nil, err
		}
	}
	if pos != nil {
		// Every shard ran its positives stage: this one reads only its rows.
		problem, rev, err := s.loadWindow(ctx, job, shard, true)
		if err != nil {
			return nil, err
		}
		if pp, err = evaluate.PairWindow(ctx, problem, job.cfg, req.Threads, -1, shard, pos, rev); err != nil {
			return nil, err
		}
	} else {
		problem, err := s.LoadProblem(ctx, job)
		if err != nil {
			return nil, err
		}
		if pp, err = evaluate.PairShard(ctx, problem, job.cfg, req.Threads, -1, shard); err != nil {
			return nil, err
		}
	}
	key := PartialKey(job.key, shard.Index, shard.Total)
	doc, arr, err := partialDocument(job, key, pp, pos == nil || pp.Reverse != nil)
	if err != nil {
		return nil, err
	}
	if err := s.WriteArray(ctx, key, arr, doc); err != nil {
		return nil, err
	}
	return &ScoredPartial{Key: key, ScoreKey: job.key, Doc: doc}, nil
}

// partialDocument is the partial's metadata and array; withScores keeps the
// positives' scores (PartialColumns), else the counts alone
// (PartialCountColumns).
func partialDocument(j *ScoreJob, key string, pp *evaluate.PairPartial, withScores bool) (*EvaluationPartial, Source, error) {
	f := pp.Forward
	doc := &EvaluationPartial{
		Common:   Common{ArtifactType: TypeEvaluationPartial, VertebraeVersion: version.Version, OutputKey: key},
		ScoreKey: j.key, QueryEmbeddingKey: j.req.QueryKey, GalleryEmbeddingKey: j.req.GalleryKey,
		RelevanceKey: j.req.RelevanceKey, ExclusionsKey: j.exclKey, RetrievalConfig: j.cfg.AsMap(),
		ProtocolFingerprint: j.pf, EvaluationFingerprint: j.ef,
		Shard:    PartialShard{TotalShards: f.TotalShards, ShardIndex: f.Shards[0], ShardBy: f.Layout.String()},
		NQueries: f.NQueries, NGallery: f.NGallery, Columns: PartialColumns,
	}
	if !withScores {
		doc.Columns = PartialCountColumns
	}
	cols := len(doc.Columns)
	dirs := []*rank.Partial{f}
	if pp.Reverse != nil {
		dirs = append(dirs, pp.Reverse)
	}
	for i, p := range dirs {
		if p.Top != nil {
			return nil, nil, fmt.Errorf("a score partial keeps no ranking")
		}
		d := PartialDirection{NPositives: len(p.Counts), NearestNegative: make([]*float64, len(p.HasNegative))}
		if i == 0 {
			d.ShardRows = rank.Shard{Index: p.Shards[0], Total: p.TotalShards, Layout: p.Layout}.Count(p.NGallery)
		} else {
			lo, hi := p.QueryLo, p.QueryHi()
			d.ShardRows, d.QueryLo, d.QueryHi = hi-lo, &lo, &hi
		}
		for q, has := range p.HasNegative {
			if has {
				v := p.Nearest[q]
				d.NearestNegative[q] = &v
			}
		}
		if i == 0 {
			doc.Forward = d
		} else {
			doc.Reverse = &d
		}
	}
	arr := partialRows{dirs: dirs, cols: cols}
	doc.ArrayInfo = ArrayInfo{Shape: []int{arr.Rows(), cols}, DType: arr.DType().String(), NSamples: arr.Rows(), EmbeddingDim: cols}
	return doc, arr, nil
}

// partialRows is a partial's array (count, then score when cols = 2, per
// eligible positive; forward, then reverse), converted batch by batch as
// the writer reads it (twice: to hash, then to store) and never held
// whole: a shard of a label run holds millions of positives.
type partialRows struct {
	dirs []*rank.Partial
	cols int
}

func (a partialRows) Rows() int {
	n := 0
	for _, p := range a.dirs {
		n += len(p.Counts)
	}
	return n
}
func (a partialRows) Cols() int           { return a.cols }
func (a partialRows) DType() matrix.DType { return matrix.Float64 }
func (a partialRows) Sparse() bool        { return false }

func (a partialRows) Batches(ctx context.Context, yield func(matrix.Matrix) error) error {
	buf := make([]float64, 0, batchRows(a.cols, matrix.Float64)*a.cols)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		m, err := matrix.NewDense64(len(buf)/a.cols, a.cols, buf)
		if err == nil {
			err = yield(m) // the encoder writes the batch before returning
		}
		buf = buf[:0]
		if err != nil {
			return err
		}
		return ctx.Err()
	}
	for _, p := range a.dirs {
		for k, c := range p.Counts {
			buf = append(buf, float64(c))
			if a.cols == 2 {
				buf = append(buf, p.Scores[k])
			}
			if len(buf) == cap(buf) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// FinalizeScore reads all totalShards partials of the request's score key,
// checks that each exists and belongs to this evaluation (artifact type,
// evaluation fingerprint, shard count, index and layout; a failure names
// the partial's key), merges them exactly (SPEC §11.3) and commits the
// retrieval_evaluation artifact Score would have written. shardBy, when not
// empty, is the layout every partial must have; otherwise they must agree.
func (s *Store) FinalizeScore(ctx context.Context, req ScoreRequest, totalShards int, shardBy string) (*Scored, error) {
	if totalShards < 1 {
		return nil, fmt.Errorf("total shards must be >= 1, got %d", totalShards)
	}
	// Finalize names gallery rows only as reverse queries: one direction
	// keeps no gallery ID (a message looks its row's up).
	rr := wholeRelevance
	if !req.Config.Bidirectional {
		rr = namelessRelevance
	}
	job, err := s.prepareJob(ctx, req, rr)
	if err != nil {
		return nil, err
	}
	problem := job.Problem()
	_, compWarnings, err := job.Compression()
	if err != nil {
		return nil, err
	}
	// Forward partials are added into the first as they are read (merging
	// is exact and associative), so finalize holds the accumulator and one
	// partial, not N; each reverse block is already complete and is kept as
	// it is. Count-only partials take their positives' scores from the
	// positives stages, read once.
	var f *rank.Partial
	var revBlocks []*rank.Partial
	var pos *rank.PositiveScores
	var spare []int64 // the counts of the partial added last, reused for the next
	layout := shardBy
	for i := range totalShards {
		key := PartialKey(job.key, i, totalShards)
		pp, doc, err := s.readPartial(ctx, job, key, i, totalShards, spare, func() (*rank.PositiveScores, error) {
			if pos != nil {
				return pos, nil
			}
			p, err := s.readPositives(ctx, job, totalShards)
			if err == nil && p == nil {
				err = checkErr(key, "foreign partial: it holds counts only, and no positives stage holds the scores")
			}
			pos = p
			return p, err
		})
		if err != nil {
			return nil, err
		}
		if layout == "" {
			layout = doc.Shard.ShardBy
		} else if doc.Shard.ShardBy != layout {
			return nil, checkErr(key, fmt.Sprintf("foreign partial: shard_by %q differs from %q", doc.Shard.ShardBy, layout))
		}
		if f == nil {
			f = pp.Forward
		} else {
			if err := f.Add(pp.Forward); err != nil {
				return nil, keyErr(job.key, ErrCheck, fmt.Sprintf("merging partials: %v", err))
			}
			spare = pp.Forward.Counts
		}
		if pp.Reverse != nil {
			revBlocks = append(revBlocks, pp.Reverse) // complete blocks, in query order
		}
	}
	res, err := evaluate.PairFromPartials(problem, job.cfg, compWarnings, -1, []*rank.Partial{f}, revBlocks)
	if err != nil {
		return nil, keyErr(job.key, ErrCheck, fmt.Sprintf("finishing partials: %v", err))
	}
	return s.CommitScore(ctx, job, res)
}

// readPartial loads and checks partial i of n of job, its forward counts in
// spare when it is large enough; positives supplies the positives stages'
// scores when the partial holds counts only.
func (s *Store) readPartial(ctx context.Context, j *ScoreJob, key string, i, n int, spare []int64, positives func() (*rank.PositiveScores, error)) (*evaluate.PairPartial, *EvaluationPartial, error) {
	m, md, err := s.LoadArray(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, checkErr(key, fmt.Sprintf("missing partial: gallery shard %d of %d has not been scored (run score --total-shards %d --shard-index %d)", i, n, n, i))
	}
	if err != nil {
		return nil, nil, err
	}
	var doc EvaluationPartial
	if err := json.Unmarshal(md, &doc); err != nil {
		return nil, nil, keyErr(key, ErrInvalidMetadata, fmt.Sprintf("partial metadata: %v", err))
	}
	foreign := func(format string, args ...any) error {
		return checkErr(key, "foreign partial: "+fmt.Sprintf(format, args...))
	}
	switch {
	case doc.ArtifactType != TypeEvaluationPartial:
		return nil, nil, foreign("artifact_type %q is not %s", doc.ArtifactType, TypeEvaluationPartial)
	case doc.EvaluationFingerprint != j.ef:
		return nil, nil, foreign("evaluation fingerprint %s differs from %s", doc.EvaluationFingerprint, j.ef)
	case doc.ScoreKey != j.key:
		return nil, nil, foreign("score_key %q differs from %q", doc.ScoreKey, j.key)
	case doc.Shard.TotalShards != n || doc.Shard.ShardIndex != i:
		return nil, nil, foreign("it is shard %d of %d, expected %d of %d", doc.Shard.ShardIndex, doc.Shard.TotalShards, i, n)
	case doc.ProtocolFingerprint != j.pf || !reflect.DeepEqual(doc.Columns, PartialColumns) && (doc.Reverse != nil || !reflect.DeepEqual(doc.Columns, PartialCountColumns)):
		return nil, nil, foreign("protocol fingerprint or columns differ")
	case (doc.Reverse != nil) != j.cfg.Bidirectional:
		return nil, nil, foreign("reverse direction present: %v, config bidirectional: %v", doc.Reverse != nil, j.cfg.Bidirectional)
	}
	layout, err := rank.ParseShardLayout(doc.Shard.ShardBy)
	if err != nil {
		return nil, nil, foreign("%v", err)
	}
	cols := len(doc.Columns)
	dm, ok := m.(*matrix.Dense)
	if !ok || dm.DType() != matrix.Float64 || dm.Cols() != cols {
		return nil, nil, foreign("array is not an n×%d float64 array", cols)
	}
	data := dm.Float64Data()
	var pos *rank.PositiveScores
	if cols == 1 {
		if pos, err = positives(); err != nil {
			return nil, nil, err
		}
	}
	nq, ng := len(j.prot.Doc.QueryIDs), j.prot.Doc.NGallery
	if doc.NQueries != nq || doc.NGallery != ng {
		return nil, nil, foreign("%d × %d rows, the relevance artifact has %d × %d", doc.NQueries, doc.NGallery, nq, ng)
	}
	problem := j.Problem()
	// build rebuilds a direction's partial for queries [lo, hi) of p.
	build := func(d *PartialDirection, p rank.Problem, pt *rank.Partial, lo, hi int, rows []float64, spare []int64) (*rank.Partial, error) {
		bn := hi - lo
		pt.QueryLo, pt.Offsets, pt.HasNegative, pt.Nearest = lo, make([]int, bn+1), make([]bool, bn), make([]float64, bn)
		if pos != nil {
			// Counts only: the eligible positives and their scores are the
			// positives stages' (one direction, so lo = 0 and hi = n_q).
			copy(pt.Offsets, pos.Offsets)
			pt.Positives, pt.Scores = pos.Index, pos.Scores
		} else {
			var el []int
			for q := lo; q < hi; q++ {
				el = p.EligibleRows(q, el)
				pt.Offsets[q-lo+1] = pt.Offsets[q-lo] + len(el)
				pt.Positives = append(pt.Positives, el...)
			}
		}
		np := pt.Offsets[bn]
		if d.NPositives != np || len(rows) != cols*np || len(d.NearestNegative) != bn {
			return nil, foreign("%d positives and %d best negatives, the relevance has %d eligible positives of %d queries", d.NPositives, len(d.NearestNegative), np, bn)
		}
		if cap(spare) >= np {
			pt.Counts = spare[:np] // every count is written below
		} else {
			pt.Counts = make([]int64, np)
			memory.AdviseHugePages(pt.Counts)
		}
		if pos == nil {
			pt.Scores = make([]float64, np)
		}
		for k := range np {
			c := rows[cols*k]
			if c != math.Trunc(c) || c < 0 || c >= float64(pt.NGallery) {
				return nil, foreign("count %v of row %d is not a count", c, k)
			}
			pt.Counts[k] = int64(c)
			if pos == nil {
				pt.Scores[k] = rows[cols*k+1]
			}
		}
		for q, v := range d.NearestNegative {
			if v != nil {
				pt.HasNegative[q], pt.Nearest[q] = true, *v
			}
		}
		return pt, nil
	}
	out := &evaluate.PairPartial{}
	nf := doc.Forward.NPositives
	if cols*nf > len(data) {
		return nil, nil, foreign("array has %d rows for %d forward positives", len(data)/cols, nf)
	}
	fwd := &rank.Partial{Layout: layout, TotalShards: n, Shards: []int{i}, NQueries: nq, NGallery: ng}
	if out.Forward, err = build(&doc.Forward, problem, fwd, 0, nq, data[:cols*nf], spare); err != nil {
		return nil, nil, err
	}
	if d := doc.Reverse; d != nil {
		rp, err := evaluate.ReverseFor(problem, j.cfg, ng)
		if err != nil {
			return nil, nil, err
		}
		keep, err := evaluate.ReverseQueries(problem, j.cfg, ng)
		if err != nil {
			return nil, nil, err
		}
		nr := len(rp.QueryIDs)
		lo, hi := evaluate.ReverseBlock(rank.Shard{Index: i, Total: n, Layout: layout}, ng, keep)
		if d.QueryLo == nil || d.QueryHi == nil || *d.QueryLo != lo || *d.QueryHi != hi || d.ShardRows != hi-lo {
			return nil, nil, foreign("its reverse direction is not the block [%d, %d) of the %d reverse queries", lo, hi, nr)
		}
		rev := &rank.Partial{Layout: rank.Contiguous, TotalShards: 1, Shards: []int{0}, NQueries: nr, NGallery: nq}
		if out.Reverse, err = build(d, rp, rev, lo, hi, data[2*nf:], nil); err != nil {
			return nil, nil, err
		}
	} else if len(data) != cols*nf {
		return nil, nil, foreign("array has %d rows for %d positives", len(data)/cols, nf)
	}
	return out, &doc, nil
}
