package evaluate

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// PairPartial is gallery shard I of N of Pair (SPEC §11.3): the forward
// direction (every query against gallery shard I) and, when the config is
// bidirectional, the reverse one (reverse-query block ReverseBlock(I, N,
// n) against all original queries: complete for its block).
type PairPartial struct {
	Forward *rank.Partial
	Reverse *rank.Partial // nil unless bidirectional
}

// PairShard scores shard of one pair of endpoints as Pair would, direction
// by direction (so input errors come in Pair's order). runDepth is the
// forward kept ranking (Pair keeps none in reverse).
//
// The forward direction counts every query against the shard's gallery
// rows. The reverse direction is split by its queries instead (SPEC
// §11.3): the shard scores its block of reverse queries (ReverseBlock)
// against the whole reverse gallery, the original queries, which every
// worker holds, so its reverse results are complete and finalize
// concatenates the blocks in order: no count merge, and per-worker work
// and state for 1/N of the reverse queries.
func PairShard(ctx context.Context, p rank.Problem, cfg retrieval.Config, threads, runDepth int, shard rank.Shard) (*PairPartial, error) {
	fwd, err := DirectionShard(ctx, p, cfg, threads, runDepth, shard)
	if err != nil {
		return nil, err
	}
	out := &PairPartial{Forward: fwd}
	if cfg.Bidirectional {
		if out.Reverse, err = reverseShard(ctx, p, cfg, threads, shard, p.Gallery, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReverseGalleryRows is the range [lo, hi) of gallery rows that gallery
// shard `shard`'s reverse block reads as its queries (empty when the block
// is): within the shard's own rows for a contiguous shard; a modulo shard's
// block is a contiguous run of reverse queries, which a worker holding only
// its own rows reads on its own (GalleryRows of PairWindow).
func ReverseGalleryRows(p rank.Problem, cfg retrieval.Config, shard rank.Shard) (lo, hi int, err error) {
	ng := len(p.GalleryIDs)
	keep, err := reverseKeep(ReverseRows(p, ng), cfg, ng)
	if err != nil {
		return 0, 0, err
	}
	a, b := ReverseBlock(shard, ng, keep)
	if a == b {
		return 0, 0, nil
	}
	if keep == nil {
		return a, b, nil
	}
	return keep[a], keep[b-1] + 1, nil
}

// GalleryRows are gallery rows [First, First+Rows.Rows()) held apart from
// a window (a modulo shard's reverse block, ReverseGalleryRows).
type GalleryRows struct {
	First int
	Rows  matrix.Matrix
}

// ReverseBlock is a gallery shard's block [lo, hi) of the reverse queries:
// keep lists the gallery rows that are reverse queries (ReverseQueries;
// nil: all ng). A contiguous shard takes the reverse queries among its own
// gallery rows; a modulo shard, whose rows are not a block, the contiguous
// split of the reverse queries (every worker holds the whole gallery). A
// block is empty when the shard holds no reverse query.
func ReverseBlock(shard rank.Shard, ng int, keep []int) (lo, hi int) {
	m := ng
	if keep != nil {
		m = len(keep)
	}
	if shard.Layout == rank.Modulo {
		return shard.Range(m)
	}
	glo, ghi := shard.Range(ng)
	if keep == nil {
		return glo, ghi
	}
	lo, _ = slices.BinarySearch(keep, glo)
	hi, _ = slices.BinarySearch(keep, ghi)
	return lo, hi
}

// reverseShard scores the shard's block of reverse queries against every
// original query: a complete partial of the reverse problem's block (an
// empty one when the block is).
//
// The reverse queries are gallery rows read from rows, whose first row is
// gallery row base.
func reverseShard(ctx context.Context, p rank.Problem, cfg retrieval.Config, threads int, shard rank.Shard, rows matrix.Matrix, base int) (*rank.Partial, error) {
	ng := len(p.GalleryIDs)
	r := ReverseRows(p, ng)
	r.Queries = rows
	keep, err := reverseKeep(r, cfg, ng)
	if err != nil {
		return nil, err
	}
	lo, hi := ReverseBlock(shard, ng, keep)
	m := ng
	if keep != nil {
		m = len(keep)
	}
	if lo == hi {
		return &rank.Partial{Layout: rank.Contiguous, TotalShards: 1, Shards: []int{0}, NQueries: m, NGallery: len(p.QueryIDs),
			QueryLo: lo, Offsets: []int{0}, Positives: []int{}, Scores: []float64{}, Counts: []int64{},
			HasNegative: []bool{}, Nearest: []float64{}}, nil
	}
	qs := make([]int, hi-lo)
	for i := range qs {
		qs[i] = lo + i
		if keep != nil {
			qs[i] = keep[lo+i]
		}
	}
	block, err := selectQueries(r, qs, base)
	if err != nil {
		return nil, err
	}
	part, err := DirectionShard(ctx, block, cfg, threads, -1, rank.Shard{Index: 0, Total: 1})
	if err != nil {
		return nil, err
	}
	part.QueryLo, part.NQueries = lo, m
	return part, nil
}

// WindowPositives is the positives stage of a contiguous gallery shard
// that holds only its rows (p.GalleryTotal > 0, SPEC §11.3): the scores of
// the eligible forward positives among those rows.
func WindowPositives(ctx context.Context, p rank.Problem, cfg retrieval.Config, threads int) (*rank.PositiveScores, error) {
	opts, err := DirectionOptions(cfg, threads, -1)
	if err != nil {
		return nil, err
	}
	return rank.ScoreWindowPositives(ctx, p, opts)
}

// PairWindow is PairShard for a gallery shard that holds only its rows
// (p.GalleryTotal > 0): pos is every shard's WindowPositives merged
// (rank.AssemblePositiveScores). A contiguous shard's reverse block lies in
// its own rows; a modulo shard's comes in rev (ReverseGalleryRows; nil
// when the config is not bidirectional or the block is empty). The result
// equals PairShard's bit for bit.
func PairWindow(ctx context.Context, p rank.Problem, cfg retrieval.Config, threads, runDepth int, shard rank.Shard, pos *rank.PositiveScores, rev *GalleryRows) (*PairPartial, error) {
	opts, err := DirectionOptions(cfg, threads, runDepth)
	if err != nil {
		return nil, err
	}
	fwd, err := rank.ScoreShard(ctx, p, opts, pos, rank.ShardTask{QueryLo: 0, QueryHi: p.Queries.Rows(), Gallery: shard})
	if err != nil {
		return nil, err
	}
	out := &PairPartial{Forward: fwd}
	if cfg.Bidirectional {
		rows, base := p.Gallery, p.GalleryFirst
		if shard.Layout == rank.Modulo {
			rows, base = nil, 0
			if rev != nil {
				rows, base = rev.Rows, rev.First
			}
		}
		if out.Reverse, err = reverseShard(ctx, p, cfg, threads, shard, rows, base); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DirectionShard scores every query of p against one gallery shard: the
// positives first (rank.ScorePositives), then the shard.
func DirectionShard(ctx context.Context, p rank.Problem, cfg retrieval.Config, threads, runDepth int, shard rank.Shard) (*rank.Partial, error) {
	if err := shard.Validate(); err != nil {
		return nil, err
	}
	opts, err := DirectionOptions(cfg, threads, runDepth)
	if err != nil {
		return nil, err
	}
	pos, err := rank.ScorePositives(ctx, p, opts)
	if err != nil {
		return nil, err
	}
	return rank.ScoreShard(ctx, p, opts, pos, rank.ShardTask{QueryLo: 0, QueryHi: p.Queries.Rows(), Gallery: shard})
}

// MergePairPartials combines the pair partials of gallery shards given in
// any order: the forward partials merge (rank.MergePartials), the reverse
// blocks (complete per block) are returned in query order.
func MergePairPartials(parts ...*PairPartial) (fwd *rank.Partial, rev []*rank.Partial, err error) {
	if len(parts) == 0 {
		return nil, nil, fmt.Errorf("%w: no partials to merge", rank.ErrPartialMismatch)
	}
	fs := make([]*rank.Partial, len(parts))
	for i, pp := range parts {
		if (pp.Reverse == nil) != (parts[0].Reverse == nil) {
			return nil, nil, fmt.Errorf("%w: some partials hold the reverse direction and some do not", rank.ErrPartialMismatch)
		}
		fs[i] = pp.Forward
		if pp.Reverse != nil {
			rev = append(rev, pp.Reverse)
		}
	}
	if fwd, err = rank.MergePartials(fs...); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(rev, func(a, b *rank.Partial) int {
		return cmp.Or(cmp.Compare(a.QueryLo, b.QueryLo), cmp.Compare(a.QueryHi(), b.QueryHi()))
	})
	return fwd, rev, nil
}

// PairFromPartials is Pair computed from finished shards: fwd (and, when
// bidirectional, rev) are complete partials (every gallery shard merged
// in) whose query blocks cover the direction's queries in order. p
// supplies IDs, relevance and exclusions; its matrices are not read and
// may be nil. The result is bit-identical to Pair on the same matrices.
func PairFromPartials(p rank.Problem, cfg retrieval.Config, compressionWarnings []string, runDepth int, fwd, rev []*rank.Partial) (*results.ExtractorResult, error) {
	f, err := DirectionFromPartials(p, cfg, runDepth, fwd)
	if err != nil {
		return nil, err
	}
	res := &results.ExtractorResult{Forward: f, PrimaryScore: f.Score}
	if cfg.Bidirectional != (len(rev) > 0) {
		return nil, fmt.Errorf("%w: the reverse partials must be present exactly when the config is bidirectional", rank.ErrPartialMismatch)
	}
	if cfg.Bidirectional {
		rp, err := ReverseFor(p, cfg, fwd[0].NGallery)
		if err != nil {
			return nil, err
		}
		r, err := DirectionFromPartials(rp, cfg, -1, rev)
		if err != nil {
			return nil, err
		}
		res.Reverse = r
		res.PrimaryScore = (f.Score + r.Score) / 2
	}
	ws := append(append([]string(nil), f.Warnings...), compressionWarnings...)
	if res.Reverse != nil {
		ws = append(ws, res.Reverse.Warnings...)
	}
	res.Warnings = sortedUnique(ws)
	return res, nil
}

// DirectionFromPartials is Direction computed from finished shards of one
// direction (see PairFromPartials).
func DirectionFromPartials(p rank.Problem, cfg retrieval.Config, runDepth int, blocks []*rank.Partial) (*results.ScoreResult, error) {
	if len(blocks) == 0 {
		return nil, fmt.Errorf("%w: no partials", rank.ErrPartialMismatch)
	}
	for _, b := range blocks {
		if keep := b.FullRanking || b.TopN > 0; keep != (runDepth >= 0) || (runDepth == 0) != b.FullRanking || (runDepth > 0 && b.TopN != runDepth) {
			return nil, fmt.Errorf("%w: the partials keep another ranking depth than %d", rank.ErrPartialMismatch, runDepth)
		}
	}
	nq, ng := len(p.QueryIDs), blocks[0].NGallery
	if len(p.GalleryIDs) != ng && (p.GalleryIDs != nil || p.GalleryName == nil || runDepth >= 0) {
		return nil, fmt.Errorf("%w: %d gallery IDs for partials of %d gallery rows", rank.ErrPartialMismatch, len(p.GalleryIDs), ng)
	}
	counts := func() []int {
		out := make([]int, 0, nq)
		for _, b := range blocks {
			for i := range len(b.Offsets) - 1 {
				out = append(out, b.Offsets[i+1]-b.Offsets[i])
			}
		}
		return out
	}
	return direction(p, cfg, runDepth, nq, ng, false, nil, counts, func(fn func(q int, r rank.QueryResult) error) error {
		return rank.Results(p, blocks, fn)
	})
}

// pairMagic starts the binary form of a PairPartial (version 1).
var pairMagic = []byte("VTBPAIR1")

// MarshalBinary encodes the pair deterministically: a header, then each
// direction's rank.Partial form with its length.
func (pp *PairPartial) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.Write(pairMagic)
	for _, p := range []*rank.Partial{pp.Forward, pp.Reverse} {
		if p == nil {
			b.Write(binary.LittleEndian.AppendUint64(nil, 0))
			continue
		}
		enc, err := p.MarshalBinary()
		if err != nil {
			return nil, err
		}
		b.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(enc))))
		b.Write(enc)
	}
	return b.Bytes(), nil
}

// UnmarshalBinary decodes MarshalBinary's form.
func (pp *PairPartial) UnmarshalBinary(data []byte) error {
	if !bytes.HasPrefix(data, pairMagic) {
		return fmt.Errorf("invalid pair partial encoding: bad header")
	}
	rest := data[len(pairMagic):]
	var out PairPartial
	for i, dst := range []**rank.Partial{&out.Forward, &out.Reverse} {
		if len(rest) < 8 {
			return fmt.Errorf("invalid pair partial encoding: truncated")
		}
		n := binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
		if n > uint64(len(rest)) || (n == 0 && i == 0) {
			return fmt.Errorf("invalid pair partial encoding: truncated or malformed")
		}
		if n == 0 {
			continue
		}
		*dst = new(rank.Partial)
		if err := (*dst).UnmarshalBinary(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return fmt.Errorf("invalid pair partial encoding: trailing bytes")
	}
	*pp = out
	return nil
}
