package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/rank"
)

// Shard-local scoring (SPEC §11.3). A gallery shard reads only its own
// gallery rows and the query endpoint: a contiguous shard its row range
// (ReadEndpointRows: verified chunk reads), a modulo shard the extraction
// shard with the same index and count when the gallery was merged from N
// shards (a verified artifact of its own), else the gallery streamed once,
// keeping its rows. Its positives stage (ScorePositivesStage) scores the
// eligible positives among its rows; once every shard's stage is
// committed, each shard's count stage (ScorePartial) loads all of them
// (O(eligible pairs)) and counts over its own rows. A worker's memory is
// O(shard rows × width + queries + per-query state), not O(gallery).

// TypeEvaluationPositives is one gallery shard's positives stage.
const TypeEvaluationPositives = "retrieval_evaluation_positives"

// PositivesColumns name the column of a positives stage's array: one row
// per eligible positive among the shard's rows, in query order, then
// gallery order. The rows' (query, gallery) pairs are not stored: the
// relevance artifact lists them (rank.AssemblePositiveScores), and a label
// run's positives are millions.
var PositivesColumns = []string{"positive_score"}

// EvaluationPositives is retrieval_evaluation_positives, the metadata of
// gallery shard Shard.ShardIndex of Shard.TotalShards's positives stage of
// the score at ScoreKey. A stage with no positive in its rows is a JSON
// artifact (n_positives 0, no array).
type EvaluationPositives struct {
	Common
	ScoreKey              string       `json:"score_key"`
	EvaluationFingerprint string       `json:"evaluation_fingerprint"`
	ProtocolFingerprint   string       `json:"protocol_fingerprint"`
	Shard                 PartialShard `json:"shard"`
	GalleryRows           int          `json:"gallery_rows"` // rows the shard holds
	NQueries              int          `json:"n_queries"`
	NGallery              int          `json:"n_gallery"`
	NPositives            int          `json:"n_positives"`
	Columns               []string     `json:"columns"`
}

// PositivesKey is the key of gallery shard i of n's positives stage.
func PositivesKey(scoreKey string, i, n int) string {
	return fmt.Sprintf("%s/positives/%05d-of-%05d", scoreKey, i, n)
}

// loadWindow reads the query endpoint and the shard's gallery rows (and,
// with reverse set, for a bidirectional modulo shard, the gallery rows of
// its reverse block), after checking their size against the memory budget
// in ctx.
func (s *Store) loadWindow(ctx context.Context, j *ScoreJob, shard rank.Shard, reverse bool) (rank.Problem, *evaluate.GalleryRows, error) {
	if j.gm.Sparse {
		return rank.Problem{}, nil, checkErr(j.req.GalleryKey, "a sparse gallery is read whole: score its shards without --stage positives")
	}
	ng := j.gm.NSamples
	p := j.Problem()
	rows := shard.Count(ng)
	revLo, revHi := 0, 0
	if reverse && shard.Layout == rank.Modulo && j.cfg.Bidirectional {
		var err error
		if revLo, revHi, err = evaluate.ReverseGalleryRows(p, j.cfg, shard); err != nil {
			return rank.Problem{}, nil, err
		}
	}
	if err := s.checkEndpointMemory(ctx, j, rows+revHi-revLo); err != nil {
		return rank.Problem{}, nil, err
	}
	q, _, err := s.ReadEndpoint(ctx, j.req.QueryKey)
	if err != nil {
		return rank.Problem{}, nil, err
	}
	p.Queries, p.GalleryTotal = q, ng
	if shard.Layout == rank.Contiguous {
		lo, hi := shard.Range(ng)
		if p.Gallery, _, err = s.ReadEndpointRows(ctx, j.req.GalleryKey, lo, hi); err != nil {
			return rank.Problem{}, nil, err
		}
		p.GalleryFirst = lo
		return p, nil, nil
	}
	if p.Gallery, err = s.moduloRows(ctx, j, shard); err != nil {
		return rank.Problem{}, nil, err
	}
	p.GalleryFirst, p.GalleryStride = shard.Index, shard.Total
	var rev *evaluate.GalleryRows
	if revLo < revHi {
		if err := s.holdGalleryIDs(ctx, j, revLo, revHi); err != nil {
			return rank.Problem{}, nil, err
		}
		p.GalleryIDs = j.prot.Doc.GalleryIDs
		g, _, err := s.ReadEndpointRows(ctx, j.req.GalleryKey, revLo, revHi)
		if err != nil {
			return rank.Problem{}, nil, err
		}
		rev = &evaluate.GalleryRows{First: revLo, Rows: g}
	}
	return p, rev, nil
}

// holdGalleryIDs adds the IDs of gallery rows [lo, hi) to a relevance view
// (the reverse block of a bidirectional modulo shard, which holds other
// rows than its forward ones): a second streamed pass keeping those.
func (s *Store) holdGalleryIDs(ctx context.Context, j *ScoreJob, lo, hi int) error {
	if !j.prot.view {
		return nil
	}
	v, err := s.readRelevanceView(ctx, j.req.RelevanceKey, viewOptions{held: func(g int) bool { return g >= lo && g < hi }, keepIDs: true, trusted: j.prot.trusted})
	if err != nil {
		return err
	}
	if v.Doc.ProtocolFingerprint != j.prot.Doc.ProtocolFingerprint || len(v.Doc.GalleryIDs) != len(j.prot.Doc.GalleryIDs) {
		return checkErr(j.req.RelevanceKey, "relevance artifact changed while the shard read it")
	}
	copy(j.prot.Doc.GalleryIDs[lo:hi], v.Doc.GalleryIDs[lo:hi])
	return nil
}

// moduloRows reads rows i, i+N, … of the gallery: extraction shard i of N
// when the gallery was merged from N shards (checked to be that endpoint's
// shard), else the gallery streamed once (verified), keeping those rows.
func (s *Store) moduloRows(ctx context.Context, j *ScoreJob, shard rank.Shard) (matrix.Matrix, error) {
	gm, ng := j.gm, j.gm.NSamples
	want := shard.Count(ng)
	if gm.ArtifactType == TypeEmbedding && gm.NShards == shard.Total && len(gm.ShardKeys) == shard.Total {
		key := gm.ShardKeys[shard.Index]
		m, sm, err := s.ReadEndpoint(ctx, key)
		if err != nil {
			return nil, err
		}
		if sm.ArtifactType != TypeEmbeddingShard || sm.Shard == nil || sm.Shard.ShardIndex != shard.Index || sm.Shard.TotalShards != shard.Total ||
			fmt.Sprint(sm.Raw["endpoint_rows"]) != fmt.Sprint(ng) || sm.RecipeHash != gm.RecipeHash || sm.DatasetIdentityKey != gm.DatasetIdentityKey ||
			sm.Side != gm.Side || sm.Branch != gm.Branch || sm.DType != gm.DType || sm.EmbeddingDim != gm.EmbeddingDim || m.Rows() != want {
			return nil, checkErr(key, fmt.Sprintf("is not extraction shard %d of %d of gallery %s", shard.Index, shard.Total, j.req.GalleryKey))
		}
		return m, nil
	}
	dt, err := matrix.ParseDType(gm.DType)
	if err != nil {
		return nil, keyErr(j.req.GalleryKey, ErrInvalidMetadata, err.Error())
	}
	d := gm.EmbeddingDim
	build, dst := newDense(dt, want, d)
	rowBytes := d * dt.Size()
	row, kept := 0, 0
	_, err = s.StreamArray(ctx, j.req.GalleryKey, func(b matrix.Matrix) error {
		db, ok := b.(*matrix.Dense)
		if !ok {
			return fmt.Errorf("a sparse gallery is read whole")
		}
		for r := range db.Rows() {
			if (row+r)%shard.Total == shard.Index && kept < want {
				if err := db.RowSlice(r, r+1).WriteLE(&fixedWriter{b: dst[kept*rowBytes : (kept+1)*rowBytes]}); err != nil {
					return err
				}
				kept++
			}
		}
		row += db.Rows()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !hostLittleEndian {
		build = fromLE(dt, want, d, dst)
	}
	return build()
}

// checkEndpointMemory checks the endpoints a score worker loads — the
// whole query endpoint and galleryRows gallery rows — against the budget
// in ctx (SPEC §7): a sharded worker needs its shard's rows, an unsharded
// one the whole gallery.
func (s *Store) checkEndpointMemory(ctx context.Context, j *ScoreJob, galleryRows int) error {
	size := func(m *EndpointMeta, rows int) int64 {
		dt, err := matrix.ParseDType(m.DType)
		if err != nil {
			return 0
		}
		return memory.Bytes(int64(rows), int64(m.EmbeddingDim), int64(dt.Size()))
	}
	need := memory.Sum(size(j.qm, j.qm.NSamples), size(j.gm, galleryRows))
	return memory.Check(ctx, fmt.Sprintf("Scoring endpoints (%d queries, %d gallery rows)", j.qm.NSamples, galleryRows), need)
}

// ScorePositivesStage runs contiguous gallery shard `shard`'s positives
// stage: every check a score runs (the shard's rows for the row checks,
// named by global row and ID), then the scores of the eligible positives
// among its rows, committed at PositivesKey. Re-running it rewrites
// identical content.
func (s *Store) ScorePositivesStage(ctx context.Context, req ScoreRequest, shard rank.Shard) (string, *EvaluationPositives, error) {
	if err := shard.Validate(); err != nil {
		return "", nil, err
	}
	job, err := s.prepareJob(ctx, req, shardRelevance(req.Config, shard))
	if err != nil {
		return "", nil, err
	}
	p, _, err := s.loadWindow(ctx, job, shard, false)
	if err != nil {
		return "", nil, err
	}
	pos, err := evaluate.WindowPositives(ctx, p, job.cfg, req.Threads)
	if err != nil {
		return "", nil, err
	}
	key := PositivesKey(job.key, shard.Index, shard.Total)
	doc := &EvaluationPositives{
		Common:   Common{ArtifactType: TypeEvaluationPositives, VertebraeVersion: version.Version, OutputKey: key},
		ScoreKey: job.key, EvaluationFingerprint: job.ef, ProtocolFingerprint: job.pf,
		Shard:       PartialShard{TotalShards: shard.Total, ShardIndex: shard.Index, ShardBy: shard.Layout.String()},
		GalleryRows: p.Gallery.Rows(), NQueries: len(p.QueryIDs), NGallery: p.GalleryTotal, NPositives: len(pos.Index), Columns: PositivesColumns,
	}
	if len(pos.Index) == 0 {
		return key, doc, s.WriteJSON(ctx, key, doc)
	}
	arr, err := matrix.NewDense64(len(pos.Scores), 1, pos.Scores)
	if err != nil {
		return "", nil, err
	}
	return key, doc, s.WriteArray(ctx, key, FromMatrix(arr), doc)
}

// readPositives loads the n positives stages of job, or reports (nil, nil)
// when none exists (the shards then score the positives themselves over the
// whole gallery). Some but not all is an error naming the first missing.
func (s *Store) readPositives(ctx context.Context, j *ScoreJob, n int) (*rank.PositiveScores, error) {
	// One List, not N existence checks: N count shards each asking for N
	// stages would be N² requests on an object store.
	committed := map[string]bool{}
	for key, err := range s.Keys(ctx, j.key+"/positives") {
		if err != nil {
			return nil, err
		}
		committed[key] = true
	}
	var stages [][]float64
	missing, layout := -1, ""
	for i := range n {
		key := PositivesKey(j.key, i, n)
		if !committed[key] {
			if missing < 0 {
				missing = i
			}
			continue
		}
		p, by, err := s.readPositivesStage(ctx, j, key, i, n)
		if err != nil {
			return nil, err
		}
		if layout != "" && by != layout {
			return nil, checkErr(key, fmt.Sprintf("foreign positives stage: shard_by %q differs from %q of the other stages", by, layout))
		}
		layout = by
		stages = append(stages, p)
	}
	switch {
	case len(stages) == 0:
		return nil, nil
	case missing >= 0:
		return nil, checkErr(PositivesKey(j.key, missing, n), fmt.Sprintf("missing positives stage: gallery shard %d of %d has not run it (score --total-shards %d --shard-index %d --stage positives)", missing, n, n, missing))
	}
	by, err := rank.ParseShardLayout(layout)
	if err != nil {
		return nil, err
	}
	pos, err := rank.AssemblePositiveScores(j.Problem(), j.prot.Doc.NGallery, by, stages)
	var le *rank.StageLengthError
	if errors.As(err, &le) {
		return nil, checkErr(PositivesKey(j.key, le.Shard, n), fmt.Sprintf("foreign positives stage: it lists %d scores, the relevance gives gallery shard %d's rows %d eligible positives", le.Scores, le.Shard, le.Eligible))
	}
	if err != nil {
		return nil, checkErr(j.key, fmt.Sprintf("merging positives stages: %v", err))
	}
	return pos, nil
}

// readPositivesStage loads and checks shard i of n's positives stage and
// returns its scores with its layout.
func (s *Store) readPositivesStage(ctx context.Context, j *ScoreJob, key string, i, n int) ([]float64, string, error) {
	m, err := s.Manifest(ctx, key)
	if err != nil {
		return nil, "", err
	}
	var md []byte
	var arr matrix.Matrix
	if m.Kind == KindArrayMetadata {
		arr, md, err = s.LoadArray(ctx, key)
	} else {
		md, _, err = s.ReadMetadata(ctx, key)
	}
	if err != nil {
		return nil, "", err
	}
	var doc EvaluationPositives
	if err := json.Unmarshal(md, &doc); err != nil {
		return nil, "", keyErr(key, ErrInvalidMetadata, fmt.Sprintf("positives metadata: %v", err))
	}
	foreign := func(format string, args ...any) error {
		return checkErr(key, "foreign positives stage: "+fmt.Sprintf(format, args...))
	}
	nq, ng := len(j.prot.Doc.QueryIDs), j.prot.Doc.NGallery
	layout, lerr := rank.ParseShardLayout(doc.Shard.ShardBy)
	sh := rank.Shard{Index: i, Total: n, Layout: layout}
	switch {
	case lerr != nil:
		return nil, "", foreign("%v", lerr)
	case doc.ArtifactType != TypeEvaluationPositives:
		return nil, "", foreign("artifact_type %q is not %s", doc.ArtifactType, TypeEvaluationPositives)
	case doc.EvaluationFingerprint != j.ef || doc.ScoreKey != j.key || doc.ProtocolFingerprint != j.pf:
		return nil, "", foreign("it belongs to another evaluation (fingerprint %s, score key %q)", doc.EvaluationFingerprint, doc.ScoreKey)
	case doc.Shard.TotalShards != n || doc.Shard.ShardIndex != i || doc.GalleryRows != sh.Count(ng):
		return nil, "", foreign("it is shard %d of %d (%d rows), expected %d of %d", doc.Shard.ShardIndex, doc.Shard.TotalShards, doc.GalleryRows, i, n)
	case doc.NQueries != nq || doc.NGallery != ng || !reflect.DeepEqual(doc.Columns, PositivesColumns):
		return nil, "", foreign("%d × %d rows or columns %v differ", doc.NQueries, doc.NGallery, doc.Columns)
	case (arr == nil) != (doc.NPositives == 0):
		return nil, "", foreign("%d positives, array present: %v", doc.NPositives, arr != nil)
	}
	if arr == nil {
		return []float64{}, doc.Shard.ShardBy, nil
	}
	d, ok := arr.(*matrix.Dense)
	if !ok || d.DType() != matrix.Float64 || d.Cols() != 1 || d.Rows() != doc.NPositives {
		return nil, "", foreign("array is not an n_positives × 1 float64 array")
	}
	return d.Float64Data(), doc.Shard.ShardBy, nil
}
