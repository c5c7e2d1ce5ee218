package rank

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
)

// Gallery-sharded scoring (SPEC §11.3). The positives of every query are
// scored once (ScorePositives); each gallery shard then runs the pipeline's
// gallery pass over its own rows (global indices kept), with every screen
// and the implicit label classes, and counts for every eligible positive p
// its eligible candidates g with s_g > s_p or (s_g = s_p and g < p): the
// shard's negatives from the pass, its positives from the rank order. It
// keeps its best negative and, on request, its top candidates
// (ScoreShard). Partials merge exactly — integer counts add, best
// negatives take the maximum, top lists merge by (score desc, index asc) —
// and Results turns merged partials into the QueryResults Score would have
// produced, bit for bit.

// ShardLayout is how gallery rows are dealt to shards.
type ShardLayout int

// Shard layouts. Both keep global indices in ascending order.
const (
	// Contiguous: shard i of N holds rows [⌊i·n/N⌋, ⌊(i+1)·n/N⌋).
	Contiguous ShardLayout = iota
	// Modulo: shard i of N holds rows {r : r mod N = i}.
	Modulo
)

// String is the CLI name of the layout.
func (l ShardLayout) String() string {
	if l == Modulo {
		return "modulo"
	}
	return "contiguous"
}

// ParseShardLayout maps "contiguous" or "modulo" to a layout.
func ParseShardLayout(s string) (ShardLayout, error) {
	switch s {
	case "contiguous":
		return Contiguous, nil
	case "modulo":
		return Modulo, nil
	}
	return 0, fmt.Errorf("unknown shard layout %q (want contiguous or modulo)", s)
}

// Shard is gallery shard Index of Total.
type Shard struct {
	Index, Total int
	Layout       ShardLayout
}

// Validate checks 0 ≤ Index < Total and the layout.
func (s Shard) Validate() error {
	if s.Total < 1 || s.Index < 0 || s.Index >= s.Total {
		return fmt.Errorf("shard index %d of %d: shard index must lie in [0, total) with total >= 1", s.Index, s.Total)
	}
	if s.Layout != Contiguous && s.Layout != Modulo {
		return fmt.Errorf("unknown shard layout %d", s.Layout)
	}
	return nil
}

// Rows lists the global indices of an n-row endpoint held by the shard, in
// ascending order (empty when the shard holds none, e.g. Total > n).
func (s Shard) Rows(n int) []int {
	rs := s.rowSet(n)
	out := make([]int, rs.len())
	for p := range out {
		out[p] = rs.at(p)
	}
	return out
}

// Count is how many rows of an n-row endpoint the shard holds.
func (s Shard) Count(n int) int { return s.rowSet(n).len() }

// Holds reports whether the shard holds global row g of an n-row endpoint.
func (s Shard) Holds(n, g int) bool { return g >= 0 && s.rowSet(n).has(g) }

// Range is [⌊Index·n/Total⌋, ⌊(Index+1)·n/Total⌋): the rows of a
// contiguous shard, and the contiguous split of n items whatever the
// layout (reverse-query blocks).
func (s Shard) Range(n int) (lo, hi int) {
	return int(int64(s.Index) * int64(n) / int64(s.Total)), int(int64(s.Index+1) * int64(n) / int64(s.Total))
}

// rowSet is the shard's rows of an n-row endpoint.
func (s Shard) rowSet(n int) rowSet {
	if s.Layout == Modulo {
		return rowSet{s.Index, n, s.Total}
	}
	lo, hi := s.Range(n)
	return rowSet{lo, hi, 1}
}

// ShardTask is the unit of sharded work: query rows [QueryLo, QueryHi)
// against one gallery shard. Query blocks are independent and concatenate
// in query order.
type ShardTask struct {
	QueryLo, QueryHi int
	Gallery          Shard
}

// PositiveScores are the exact scores of every query's eligible positives
// (SPEC §11.3: computed once, given to every shard).
type PositiveScores struct {
	// Offsets has n_q+1 entries: query q's positives are
	// [Offsets[q], Offsets[q+1]) of Index and Scores.
	Offsets []int
	Index   []int     // eligible positive gallery indices, ascending per query
	Scores  []float64 // their scores (SPEC §4.2)

	// prep is the checked problem ScorePositives prepared: ScoreShard
	// reuses it for the same problem and options instead of checking and
	// preparing the whole problem again (absent after a binary round trip).
	prep *prepared
	orig Problem // the problem prep was prepared from
}

// Partial is what a set of gallery shards learnt about a block of queries.
// Positives are listed per query in ascending gallery index.
type Partial struct {
	Layout      ShardLayout
	TotalShards int
	Shards      []int // gallery shards merged into this partial, ascending
	NQueries    int   // query rows of the whole problem
	NGallery    int   // gallery rows of the whole problem
	QueryLo     int   // first query of the block; the block has len(Offsets)-1 queries
	Offsets     []int
	Positives   []int
	Scores      []float64
	// Counts: per positive, the shards' eligible candidates that precede it
	// (rank = 1 + the total over all shards).
	Counts      []int64
	HasNegative []bool    // per query
	Nearest     []float64 // per query: best negative score (valid when HasNegative)
	// TopN > 0 keeps the first TopN candidates per query, FullRanking all;
	// Top then holds them in rank order with global indices.
	TopN        int
	FullRanking bool
	Top         [][]Candidate
}

// QueryHi is one past the block's last query.
func (p *Partial) QueryHi() int { return p.QueryLo + len(p.Offsets) - 1 }

// Complete reports whether every gallery shard has been merged in.
func (p *Partial) Complete() bool {
	if len(p.Shards) != p.TotalShards {
		return false
	}
	for i, s := range p.Shards {
		if s != i {
			return false
		}
	}
	return true
}

// reusable reports whether pos was prepared from problem p under o: the
// same matrices, ID lists, relevance and exclusions (the same storage, not
// merely equal values) and the same protocol options.
func (pos *PositiveScores) reusable(p Problem, o Options) bool {
	if pos == nil || pos.prep == nil {
		return false
	}
	a, po := pos.orig, pos.prep.o
	same := func(x, y matrix.Matrix) bool {
		vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
		return vx.Kind() == reflect.Pointer && vy.Kind() == reflect.Pointer && vx.Type() == vy.Type() && vx.Pointer() == vy.Pointer()
	}
	maxEq := (po.MaxPairwise == nil) == (o.MaxPairwise == nil) && (o.MaxPairwise == nil || *po.MaxPairwise == *o.MaxPairwise)
	return same(a.Queries, p.Queries) && same(a.Gallery, p.Gallery) && sameSlice(a.QueryIDs, p.QueryIDs) &&
		sameSlice(a.GalleryIDs, p.GalleryIDs) && sameSlice(a.Relevance, p.Relevance) && sameSlice(a.Exclusions, p.Exclusions) &&
		a.Classes == p.Classes && maxEq && po.Similarity == o.Similarity && po.Precision == o.Precision &&
		po.QueryBatch == o.QueryBatch && po.GalleryBatch == o.GalleryBatch && po.TopN == o.TopN && po.FullRanking == o.FullRanking &&
		(o.Threads <= 0 || o.Threads == pos.prep.threads)
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// ScorePositives checks p as Score does (SPEC §4.9, same order and
// messages) and scores every eligible positive by the one formula (the
// positives stage of every gallery shard, SPEC §11.3).
func ScorePositives(ctx context.Context, p Problem, o Options) (*PositiveScores, error) {
	if p.GalleryTotal > 0 {
		return nil, errors.New("rank: ScorePositives needs the whole gallery; a gallery window scores its positives with ScoreWindowPositives")
	}
	return scorePositivesOf(ctx, p, o)
}

// ScoreWindowPositives is the positives stage of a gallery shard that holds
// only its rows (p.GalleryTotal > 0): p is checked as Score checks it (the
// window's rows for the row checks), and the eligible positives among the
// window's rows are scored by the one formula. The windows' scores,
// assembled by AssemblePositiveScores, equal ScorePositives bit for bit (SPEC
// §4.2: a positive's score is the same whichever worker computes it).
func ScoreWindowPositives(ctx context.Context, p Problem, o Options) (*PositiveScores, error) {
	return scorePositivesOf(ctx, p, o)
}

func scorePositivesOf(ctx context.Context, p Problem, o Options) (*PositiveScores, error) {
	pr, err := prepare(ctx, p, o)
	if err != nil {
		return nil, err
	}
	var pos *PositiveScores
	if o.Precision == Float32 {
		pos, err = scorePositives[float32](ctx, pr)
	} else {
		pos, err = scorePositives[float64](ctx, pr)
	}
	if err != nil {
		return nil, err
	}
	if p.GalleryTotal == 0 {
		pos.prep, pos.orig = pr, p
	}
	return pos, nil
}

// scorePositives scores the eligible positives among the gallery rows the
// problem holds.
func scorePositives[T working](ctx context.Context, pr *prepared) (*PositiveScores, error) {
	rows := pr.p.window()
	s := newScorer[T](ctx, pr, rows, 0, pr.nq)
	s.cacheGallery(ctx, len(s.chunks()))
	out := &PositiveScores{Offsets: make([]int, pr.nq+1)}
	var buf []T
	var ibuf []int32
	// Sized first: label runs list millions of positives, and growing the
	// slices by appending copies them again and again (a copy of hundreds
	// of MiB also holds up the collector, which cannot preempt it).
	total := 0
	for q := range pr.nq {
		total += rows.count(eligibleScores(s.rel, q, s.rel.list(q), &ibuf))
	}
	out.Scores, out.Index = make([]float64, 0, total), make([]int, 0, total)
	memory.AdviseHugePages(out.Scores[:total])
	memory.AdviseHugePages(out.Index[:total])
	for _, ch := range s.chunks() {
		c := s.scoresOnly(ch[0], ch[1])
		if err := s.positives(ctx, c, false); err != nil {
			if errors.Is(err, errNonFinite) {
				return nil, s.failure(ctx)
			}
			return nil, err
		}
		for i := range c.scores {
			q := c.q0 + i
			vals := eligibleScores(s.rel, q, c.scores[i], &buf)
			idx := eligibleScores(s.rel, q, s.rel.list(q), &ibuf)
			for k, v := range vals {
				if g := int(idx[k]); rows.has(g) {
					out.Scores, out.Index = append(out.Scores, float64(v)+0), append(out.Index, g) // −0 → +0 (SPEC §1.3)
				}
			}
			out.Offsets[q+1] = len(out.Index)
		}
	}
	return out, nil
}

// ScoreShard scores query rows [t.QueryLo, t.QueryHi) of p against gallery
// shard t.Gallery: one pass over the shard's rows (global indices), with
// every screen and the implicit label classes, its thresholds from pos,
// which must be ScorePositives(p, o). The whole problem is checked first,
// exactly as Score checks it, so input errors name global rows and IDs.
func ScoreShard(ctx context.Context, p Problem, o Options, pos *PositiveScores, t ShardTask) (*Partial, error) {
	var pr *prepared
	if pos.reusable(p, o) {
		pr = pos.prep
	} else {
		var err error
		if pr, err = prepare(ctx, p, o); err != nil {
			return nil, err
		}
	}
	if err := t.Gallery.Validate(); err != nil {
		return nil, err
	}
	if w := p.window(); p.GalleryTotal > 0 && !t.Gallery.rowSet(pr.ng).same(w) {
		return nil, fmt.Errorf("gallery shard %d of %d (%s) is not the rows %d, %d, … below %d the problem holds", t.Gallery.Index, t.Gallery.Total, t.Gallery.Layout, w.lo, w.lo+w.stride, w.hi)
	}
	if t.QueryLo < 0 || t.QueryHi > pr.nq || t.QueryLo >= t.QueryHi {
		return nil, fmt.Errorf("query block [%d, %d) is not a non-empty range of [0, %d)", t.QueryLo, t.QueryHi, pr.nq)
	}
	if err := pos.check(pr.rel, pr.nq); err != nil {
		return nil, err
	}
	bn := t.QueryHi - t.QueryLo
	part := &Partial{
		Layout: t.Gallery.Layout, TotalShards: t.Gallery.Total, Shards: []int{t.Gallery.Index},
		NQueries: pr.nq, NGallery: pr.ng, QueryLo: t.QueryLo, Offsets: make([]int, bn+1),
		HasNegative: make([]bool, bn), Nearest: make([]float64, bn), TopN: o.TopN, FullRanking: o.FullRanking,
	}
	if o.FullRanking {
		part.TopN = 0
	}
	base := pos.Offsets[t.QueryLo]
	for i := range bn {
		part.Offsets[i+1] = pos.Offsets[t.QueryLo+i+1] - base
	}
	np := part.Offsets[bn]
	part.Positives = pos.Index[base : base+np : base+np] // shared with pos (read-only)
	part.Scores = pos.Scores[base : base+np : base+np]
	part.Counts = make([]int64, np)
	memory.AdviseHugePages(part.Counts)
	if part.keepsTop() {
		part.Top = make([][]Candidate, bn)
		for i := range part.Top {
			part.Top[i] = []Candidate{}
		}
	}
	rows := t.Gallery.rowSet(pr.ng)
	if rows.len() == 0 {
		return part, nil // an empty shard: nothing precedes, no negatives
	}
	var err error
	if o.Precision == Float32 {
		err = scoreShard[float32](ctx, pr, rows, t, part)
	} else {
		err = scoreShard[float64](ctx, pr, rows, t, part)
	}
	if err != nil {
		return nil, err
	}
	return part, nil
}

func scoreShard[T working](ctx context.Context, pr *prepared, rows rowSet, t ShardTask, part *Partial) error {
	s := newScorer[T](ctx, pr, rows, t.QueryLo, t.QueryHi)
	s.out = &shardOut[T]{part: part, rows: rows}
	for _, ch := range s.chunks() {
		c, err := s.newChunk(ch[0], ch[1], 0)
		if err == nil {
			err = s.scoreChunk(ctx, c)
		}
		if errors.Is(err, errNonFinite) {
			return s.failure(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fill sets the chunk's positive scores from the partial's (the positives
// stage ran once for every shard).
func (o *shardOut[T]) fill(s *scorer[T], c *chunk[T]) {
	for i := range c.scores {
		q := c.q0 + i
		k := o.part.Offsets[q-o.part.QueryLo]
		list, ex := s.rel.list(q), s.rel.excludedPos(q)
		for m := range list {
			if len(ex) > 0 && int(ex[0]) == m {
				ex = ex[1:]
				continue
			}
			c.scores[i][m] = T(o.part.Scores[k])
			k++
		}
	}
}

// shardOut collects a gallery shard's per-query counts into its partial.
type shardOut[T working] struct {
	part *Partial
	rows rowSet
}

// query records query c.q0+i: for each eligible positive, the shard's
// eligible candidates that precede it, negatives (cum, by rank slot) and
// positives (those of the shard earlier in rank order).
func (o *shardOut[T]) query(s *scorer[T], c *chunk[T], i int, cum []int32, best float64, has bool, top []Candidate) {
	q := c.q0 + i
	b := q - o.part.QueryLo
	lo, hi := o.part.Offsets[b], o.part.Offsets[b+1]
	counts := o.part.Counts[lo:hi]
	// The eligible positives in rank order, as list positions.
	var order []int32
	if cum != nil {
		order = c.th[i].pos
	} else {
		rs := sorterPool.Get().(*sorter)
		order, _ = rankOrder(rs, c.scores[i], s.rel.excludedPos(q), false, nil)
		defer sorterPool.Put(rs)
	}
	list, ex := s.rel.list(q), s.rel.excludedPos(q)
	ahead := 0 // positives of the shard earlier in rank order
	for r, p := range order {
		k := int(p) // the eligible index: the list position less the excluded ones before it
		if len(ex) > 0 {
			e, _ := slices.BinarySearch(ex, p)
			k -= e
		}
		n := int64(ahead)
		if cum != nil {
			n += int64(cum[r])
		}
		counts[k] = n
		if o.rows.has(int(list[p])) {
			ahead++
		}
	}
	o.part.HasNegative[b], o.part.Nearest[b] = has, best+0
	if !has {
		o.part.Nearest[b] = 0
	}
	if o.part.Top != nil {
		if top == nil {
			top = []Candidate{}
		}
		o.part.Top[b] = top
	}
}

func (p *Partial) keepsTop() bool { return p.FullRanking || p.TopN > 0 }

// check verifies that pos lists exactly the eligible positives of a
// problem of nq queries with relevance rel.
func (pos *PositiveScores) check(rel *relevance, nq int) error {
	if pos == nil || len(pos.Offsets) != nq+1 || pos.Offsets[0] != 0 ||
		len(pos.Index) != pos.Offsets[nq] || len(pos.Scores) != len(pos.Index) {
		return fmt.Errorf("positive scores do not match the problem's eligible positives")
	}
	var buf []int32
	for q := range nq {
		idx := eligibleScores(rel, q, rel.list(q), &buf)
		if pos.Offsets[q+1]-pos.Offsets[q] != len(idx) {
			return fmt.Errorf("positive scores do not match the problem's eligible positives (query %d)", q)
		}
		for k, g := range idx {
			if pos.Index[pos.Offsets[q]+k] != int(g) {
				return fmt.Errorf("positive scores do not match the problem's eligible positives (query %d)", q)
			}
		}
	}
	return nil
}
