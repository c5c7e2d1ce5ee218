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
// §11.3): shard i of N scores reverse-query block ReverseBlock(i, N, n)
// (n = reverse queries) against the whole reverse gallery, the original
// queries, which every worker holds, so its reverse results are complete
// and finalize concatenates the blocks in order, with no count merge and
// per-worker state for 1/N of the reverse queries.
func PairShard(ctx context.Context, p rank.Problem, cfg retrieval.Config, threads, runDepth int, shard rank.Shard) (*PairPartial, error) {
	fwd, err := DirectionShard(ctx, p, cfg, threads, runDepth, shard)
	if err != nil {
		return nil, err
	}
	out := &PairPartial{Forward: fwd}
	if cfg.Bidirectional {
		rp, err := ReverseFor(p, cfg, p.Gallery.Rows())
		if err != nil {
			return nil, err
		}
		lo, hi := ReverseBlock(shard.Index, shard.Total, len(rp.QueryIDs))
		if out.Reverse, err = DirectionBlock(ctx, rp, cfg, threads, lo, hi); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReverseBlock is the reverse-query block [lo, hi) of shard i of n over a
// direction with nq queries: the contiguous split, for either gallery
// layout (empty when n > nq).
func ReverseBlock(i, n, nq int) (lo, hi int) {
	return int(int64(i) * int64(nq) / int64(n)), int(int64(i+1) * int64(nq) / int64(n))
}

// DirectionBlock scores queries [lo, hi) of p against its whole gallery
// and returns their complete partial (every gallery row counted), a query
// block of p: the block's queries, IDs, relevance and exclusions form a
// problem of their own, since one query's results depend on nothing of
// the others. An empty block gives an empty partial.
func DirectionBlock(ctx context.Context, p rank.Problem, cfg retrieval.Config, threads, lo, hi int) (*rank.Partial, error) {
	nq, ng := len(p.QueryIDs), len(p.GalleryIDs)
	if lo < 0 || hi > nq || lo > hi {
		return nil, fmt.Errorf("query block [%d, %d) is not a range of [0, %d)", lo, hi, nq)
	}
	if lo == hi {
		return &rank.Partial{Layout: rank.Contiguous, TotalShards: 1, Shards: []int{0}, NQueries: nq, NGallery: ng,
			QueryLo: lo, Offsets: []int{0}, Positives: []int{}, Scores: []float64{}, Counts: []int64{},
			HasNegative: []bool{}, Nearest: []float64{}}, nil
	}
	sub, err := queryBlock(p, lo, hi)
	if err != nil {
		return nil, err
	}
	part, err := DirectionShard(ctx, sub, cfg, threads, -1, rank.Shard{Index: 0, Total: 1})
	if err != nil {
		return nil, err
	}
	part.QueryLo, part.NQueries = lo, nq
	return part, nil
}

// queryBlock is the problem of queries [lo, hi) of p against p's gallery.
func queryBlock(p rank.Problem, lo, hi int) (rank.Problem, error) {
	out := rank.Problem{Gallery: p.Gallery, GalleryIDs: p.GalleryIDs, QueryIDs: p.QueryIDs[lo:hi:hi]}
	switch m := p.Queries.(type) {
	case *matrix.Dense:
		out.Queries = m.RowSlice(lo, hi)
	default:
		rows := make([]int, hi-lo)
		for i := range rows {
			rows[i] = lo + i
		}
		q, err := retrieval.SelectRows(p.Queries, rows)
		if err != nil {
			return rank.Problem{}, err
		}
		out.Queries = q
	}
	if p.Relevance != nil {
		out.Relevance = p.Relevance[lo:hi:hi]
	}
	if p.Exclusions != nil {
		out.Exclusions = p.Exclusions[lo:hi:hi]
	}
	if p.Classes != nil {
		out.Classes = retrieval.NewClasses(p.Classes.Query[lo:hi:hi], p.Classes.Gallery)
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
	if len(p.GalleryIDs) != ng {
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
