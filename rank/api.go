package rank

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Similarity selects the score formula.
type Similarity int

// Similarities of SPEC §4.2.
const (
	Cosine Similarity = iota
	Dot
	SquaredL2
)

// ParseSimilarity maps a config name to a Similarity.
func ParseSimilarity(s string) (Similarity, error) {
	switch s {
	case retrieval.Cosine:
		return Cosine, nil
	case retrieval.Dot:
		return Dot, nil
	case retrieval.SquaredL2:
		return SquaredL2, nil
	}
	return 0, fmt.Errorf("unknown similarity %q", s)
}

// Precision is the working precision.
type Precision int

// Working precisions of SPEC §3.1.
const (
	Float64 Precision = iota
	Float32
)

// Error is a scoring failure; its message holds the SPEC fragment verbatim.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errorf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Problem is one direction of exact retrieval, independent of any dataset.
type Problem struct {
	Queries, Gallery     matrix.Matrix
	QueryIDs, GalleryIDs []string
	// GalleryName, when GalleryIDs is nil, names gallery row g (a global
	// index) for a message: a shard that keeps no gallery ID looks one up
	// only when it reports a row.
	GalleryName func(g int) string
	// Relevance has one entry per query: positives (grade > 0) in ascending
	// gallery order.
	Relevance [][]retrieval.Positive
	// Exclusions has one (possibly empty) ascending list per query, or is nil.
	Exclusions [][]int
	// Classes, when set instead of Relevance, is label-derived relevance
	// held implicitly (SPEC §2.7): every result is as if Relevance held
	// the pairs Classes.Materialise() lists, without materialising them.
	Classes *retrieval.Classes
	// GalleryTotal > 0 says Gallery holds only rows GalleryFirst,
	// GalleryFirst+GalleryStride, … (Gallery.Rows() of them; a stride of 0
	// or 1 is a contiguous range) of a GalleryTotal-row endpoint: a gallery
	// shard that read only its own rows (SPEC §11.3), contiguous or modulo.
	// IDs, relevance and exclusions stay those of the whole endpoint, and
	// every index and message is global. Such a problem is scored by
	// ScoreWindowPositives and by ScoreShard on that shard; its row checks
	// cover the rows it holds.
	GalleryFirst, GalleryTotal, GalleryStride int
}

// galleryName is the ID of gallery row g.
func (p Problem) galleryName(g int) string {
	if p.GalleryIDs == nil && p.GalleryName != nil {
		return p.GalleryName(g)
	}
	return p.GalleryIDs[g]
}

// galleryRows is the row count of the whole gallery endpoint.
func (p Problem) galleryRows() int {
	if p.GalleryTotal > 0 {
		return p.GalleryTotal
	}
	return p.Gallery.Rows()
}

// window is the global rows the problem's gallery matrix holds.
func (p Problem) window() rowSet {
	if p.GalleryTotal == 0 {
		return allRows(p.Gallery.Rows())
	}
	stride := max(1, p.GalleryStride)
	return rowSet{p.GalleryFirst, p.GalleryFirst + max(0, p.Gallery.Rows()-1)*stride + min(1, p.Gallery.Rows()), stride}
}

// Options are the protocol and performance settings of one scoring run.
type Options struct {
	Similarity   Similarity
	Precision    Precision
	QueryBatch   int    // ≥ 1
	GalleryBatch int    // ≥ 1
	Threads      int    // 0 = GOMAXPROCS
	MaxPairwise  *int64 // guard; nil = none
	// TopN > 0 keeps each query's first TopN candidates in rank order;
	// FullRanking keeps all of them (memory O(n_q · n_g): export only).
	TopN        int
	FullRanking bool
	// Exhaustive turns screened scoring off (as VERTEBRAE_SCREEN=off does):
	// every pair is scored by the exact rule. Results are identical.
	Exhaustive bool
	// Stats, when set, receives the phase timings and screening counts of
	// the run (for `vertebrae bench`).
	Stats *Stats
	// SortedRanks changes the results of a Classes problem (label-derived
	// relevance, every grade 1): Ranks lists the eligible positives' ranks
	// in ascending order instead of by positive, Positives is nil and
	// Scores holds the positives' scores in ascending gallery order. With
	// thousands of positives per query this saves the per-positive
	// permutation and lists; metrics.QueryUniformSorted takes it as it is.
	// The Ranks slices are read-only: queries may share one.
	// Problems with explicit Relevance are unaffected.
	SortedRanks bool
	// Pooled, when set, receives the summary of the pooled positive
	// scores (SPEC §4.7 positive_similarity); results then carry
	// MaxPositive instead of Scores, and no positive score outlives the
	// query chunk that computed it (pooled.go).
	Pooled *Pooled

	// tune holds the test-only settings of the plan (plan.go).
	tune *tuning
}

// Pooled receives the summary of every eligible positive score pooled in
// query order, then ascending gallery index (SPEC §4.7).
type Pooled struct {
	Summary metrics.Summary
}

// Stats describes one scoring run.
type Stats struct {
	Prepare   time.Duration // checks, conversion, norms (SPEC §4.1, §4.9)
	Positives time.Duration // exact scores of the positives and their rank order
	Pass      time.Duration // the gallery pass: kernels, screening, verification, counting
	Merge     time.Duration // merging worker state into per-query results (and the caller's fold)
	// Worker time inside the pass, summed over workers (dense endpoints):
	// the block kernels (the cheap scores when screened) and the folding
	// of score rows into counts, which includes the exact verification of
	// undecided pairs.
	Kernel, Fold time.Duration
	Screened     bool // a screen was used (Screen.Kind names it)
	Screen       ScreenStats
	// Chunks is the number of query chunks, each with its own positives
	// stage and gallery pass.
	Chunks int
	// PooledStreamed: the Options.Pooled summary was taken while scoring,
	// without storing every positive score.
	PooledStreamed bool
}

// ScreenStats is what screening did in one run.
type ScreenStats struct {
	Pairs      int64  // pairs given a cheap score
	Exact      int64  // pairs scored exactly after the screen (undecided or nearest-negative candidates)
	ExactTiles int64  // gallery blocks scored exhaustively (values beyond the screen's range)
	Kind       string // the screen that ran: "float32", "int8" or "int16"
}

// Candidate is a ranked gallery row.
type Candidate struct {
	Index int
	Score float64
}

// QueryResult is what scoring learns about one query.
type QueryResult struct {
	Positives       []retrieval.Positive // eligible positives, ascending gallery index
	Ranks           []int                // 1-based rank of each positive
	Scores          []float64            // score of each positive
	NearestNegative float64
	HasNegative     bool
	Top             []Candidate // rank order (TopN or FullRanking)
	// MaxPositive is the largest positive score (set under Options.Pooled,
	// which leaves Scores nil).
	MaxPositive float64
}

// Score runs exact retrieval after checking the preconditions of SPEC §4.9 in
// order. Results are bit-identical for every block size and thread count.
func Score(ctx context.Context, p Problem, o Options) ([]QueryResult, error) {
	var out []QueryResult
	if p.Queries != nil {
		out = make([]QueryResult, p.Queries.Rows())
	}
	err := ScoreEach(ctx, p, o, func(q int, r QueryResult) error {
		r.Ranks = slices.Clone(r.Ranks) // ScoreEach reuses sorted ranks
		out[q] = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScoreEach is Score handing each query's result to fn as soon as it is
// final; nothing of a query is retained after its call, so a caller that
// keeps only what it needs (metrics, pooled scores) holds less than Score's
// full result list. fn is called exactly once per query, from several
// goroutines at once and in no particular order: it must be safe for
// concurrent use (writing to per-query slots is). Under SortedRanks the
// Ranks slice is valid only during the call (it is reused): copy it to
// keep it.
func ScoreEach(ctx context.Context, p Problem, o Options, fn func(q int, r QueryResult) error) error {
	t0 := time.Now()
	pr, err := prepare(ctx, p, o)
	if err != nil {
		return err
	}
	return scoreRun(ctx, pr, t0, fn)
}
