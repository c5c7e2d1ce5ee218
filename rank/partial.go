package rank

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Gallery-sharded scoring (SPEC §11.3). The positives of every query are
// scored once (ScorePositives); each gallery shard then counts, for every
// eligible positive p, its own eligible candidates g with s_g > s_p or
// (s_g = s_p and g < p), and keeps its best negative and, on request, its
// top candidates (ScoreShard). Partials merge exactly — integer counts add,
// best negatives take the maximum, top lists merge by (score desc, index
// asc) — and Results turns merged partials into the QueryResults Score
// would have produced, bit for bit.
//
// A shard is scored by the ordinary block scorer (screening, sparse
// endpoints and both precisions included) run over the shard's rows in
// local indices. Both layouts keep the ascending global order, so a
// positive p outside the shard takes the local tie position "number of
// shard rows with global index < p": a shard row with local index l and
// global index g then satisfies g < p exactly when l < that position.

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
	var out []int
	if s.Layout == Modulo {
		for r := s.Index; r < n; r += s.Total {
			out = append(out, r)
		}
		return out
	}
	lo, hi := int(int64(s.Index)*int64(n)/int64(s.Total)), int(int64(s.Index+1)*int64(n)/int64(s.Total))
	for r := lo; r < hi; r++ {
		out = append(out, r)
	}
	return out
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

// prepared is a problem that passed every check of ScoreEach, in the same
// order and with the same messages (global row indices and IDs).
type prepared struct {
	orig     Problem // as given
	p        Problem // label classes materialised
	o        Options
	threads  int
	q, g     *source
	eligible [][]retrieval.Positive
}

// prepareProblem runs ScoreEach's checks on the whole problem. Label
// classes are materialised (the documented explicit path, O(P) per query):
// a shard counts against all of a query's positives.
func prepareProblem(ctx context.Context, p Problem, o Options) (*prepared, error) {
	orig := p
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	scans, err := check(p, o, threads)
	if err != nil {
		return nil, err
	}
	nq, ng := p.Queries.Rows(), p.Gallery.Rows()
	if p.Classes != nil {
		p.Relevance, p.Classes = p.Classes.Materialise(), nil
	}
	eligible, missing := eligibleOf(p)
	if err := checkEligible(missing, o, nq, ng); err != nil {
		return nil, err
	}
	qs, err := newSource(p.Queries, p.QueryIDs, "Query", o.Similarity, o.Precision, threads, scans[0])
	if err != nil {
		return nil, err
	}
	gs, err := newSource(p.Gallery, p.GalleryIDs, "Gallery", o.Similarity, o.Precision, threads, scans[1])
	if err != nil {
		return nil, err
	}
	if err := checkMemory(ctx, p, o, threads); err != nil {
		return nil, err
	}
	return &prepared{orig: orig, p: p, o: o, threads: threads, q: qs, g: gs, eligible: eligible}, nil
}

// reusable reports whether pr was prepared from problem p under o: the same
// matrices, ID lists, relevance and exclusions (the same storage, not
// merely equal values) and the same protocol options.
func (pr *prepared) reusable(p Problem, o Options) bool {
	a, po := pr.orig, pr.o
	same := func(x, y matrix.Matrix) bool {
		vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
		return vx.Kind() == reflect.Pointer && vy.Kind() == reflect.Pointer && vx.Type() == vy.Type() && vx.Pointer() == vy.Pointer()
	}
	maxEq := (po.MaxPairwise == nil) == (o.MaxPairwise == nil) && (o.MaxPairwise == nil || *po.MaxPairwise == *o.MaxPairwise)
	return same(a.Queries, p.Queries) && same(a.Gallery, p.Gallery) && sameSlice(a.QueryIDs, p.QueryIDs) &&
		sameSlice(a.GalleryIDs, p.GalleryIDs) && sameSlice(a.Relevance, p.Relevance) && sameSlice(a.Exclusions, p.Exclusions) &&
		a.Classes == p.Classes && maxEq && po.Similarity == o.Similarity && po.Precision == o.Precision &&
		po.QueryBatch == o.QueryBatch && po.GalleryBatch == o.GalleryBatch && po.TopN == o.TopN && po.FullRanking == o.FullRanking &&
		(o.Threads <= 0 || o.Threads == pr.threads)
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// holdQueries keeps a dense query endpoint in working precision, as
// ScoreEach does.
func (s *scorer) holdQueries() {
	if s.q.csr != nil {
		return
	}
	tmp := make([]float64, s.d)
	if s.o.Precision == Float64 {
		s.q64 = s.q.block64(0, s.nq, make([]float64, s.nq*s.d))
	} else {
		s.q32 = s.q.block32(0, s.nq, make([]float32, s.nq*s.d), tmp)
	}
}

// ScorePositives checks p as Score does (SPEC §4.9, same order and
// messages) and scores every eligible positive by the one formula.
func ScorePositives(ctx context.Context, p Problem, o Options) (*PositiveScores, error) {
	pr, err := prepareProblem(ctx, p, o)
	if err != nil {
		return nil, err
	}
	nq, ng := pr.p.Queries.Rows(), pr.p.Gallery.Rows()
	s := &scorer{p: pr.p, o: o, q: pr.q, g: pr.g, nq: nq, ng: ng, d: pr.p.Queries.Cols(), eligible: pr.eligible, threads: pr.threads}
	s.sparse = pr.q.csr != nil && pr.g.csr != nil
	s.holdQueries()
	s.stats = &Stats{}
	if err := s.preparePositives(ctx); err != nil {
		return nil, err
	}
	out := &PositiveScores{Offsets: make([]int, nq+1), prep: pr}
	for q := range nq {
		out.Offsets[q+1] = out.Offsets[q] + len(s.qs[q].pos)
	}
	out.Index = make([]int, out.Offsets[nq])
	out.Scores = make([]float64, out.Offsets[nq])
	for q := range nq {
		o := out.Offsets[q]
		for k, x := range s.qs[q].pos {
			out.Index[o+k] = x.Index
		}
		copy(out.Scores[o:], s.qs[q].scores)
	}
	return out, nil
}

// ScoreShard scores query rows [t.QueryLo, t.QueryHi) of p against gallery
// shard t.Gallery. pos must be ScorePositives(p, o) (it is checked against
// p's eligible positives). The whole problem is checked first, exactly as
// Score checks it, so input errors name global rows and IDs.
func ScoreShard(ctx context.Context, p Problem, o Options, pos *PositiveScores, t ShardTask) (*Partial, error) {
	t0 := time.Now()
	var pr *prepared
	if pos != nil && pos.prep != nil && pos.prep.reusable(p, o) {
		pr = pos.prep
	} else {
		var err error
		if pr, err = prepareProblem(ctx, p, o); err != nil {
			return nil, err
		}
	}
	if err := t.Gallery.Validate(); err != nil {
		return nil, err
	}
	nq, ng, d := pr.p.Queries.Rows(), pr.p.Gallery.Rows(), pr.p.Queries.Cols()
	if t.QueryLo < 0 || t.QueryHi > nq || t.QueryLo >= t.QueryHi {
		return nil, fmt.Errorf("query block [%d, %d) is not a non-empty range of [0, %d)", t.QueryLo, t.QueryHi, nq)
	}
	if err := pos.check(pr.eligible); err != nil {
		return nil, err
	}
	qrows := make([]int, t.QueryHi-t.QueryLo)
	for i := range qrows {
		qrows[i] = t.QueryLo + i
	}
	grows := t.Gallery.Rows(ng)
	bn := len(qrows)
	part := &Partial{
		Layout: t.Gallery.Layout, TotalShards: t.Gallery.Total, Shards: []int{t.Gallery.Index},
		NQueries: nq, NGallery: ng, QueryLo: t.QueryLo, Offsets: make([]int, bn+1),
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
	part.Positives = slices.Clone(pos.Index[base : base+np])
	part.Scores = slices.Clone(pos.Scores[base : base+np])
	part.Counts = make([]int64, np)
	if part.keepsTop() {
		part.Top = make([][]Candidate, bn)
		for i := range part.Top {
			part.Top[i] = []Candidate{}
		}
	}
	if len(grows) == 0 {
		return part, nil // an empty shard: nothing precedes, no negatives
	}

	subQ, err := rowsOf(pr.p.Queries, qrows)
	if err != nil {
		return nil, err
	}
	subG, err := rowsOf(pr.p.Gallery, grows)
	if err != nil {
		return nil, err
	}
	sub := Problem{Queries: subQ, Gallery: subG, QueryIDs: pr.p.QueryIDs[t.QueryLo:t.QueryHi], GalleryIDs: make([]string, len(grows))}
	for l, g := range grows {
		sub.GalleryIDs[l] = pr.p.GalleryIDs[g]
	}
	local := func(g int) (int, bool) { // tie position of global g, and whether the shard holds it
		l := sort.SearchInts(grows, g)
		return l, l < len(grows) && grows[l] == g
	}
	if pr.p.Exclusions != nil {
		sub.Exclusions = make([][]int, bn)
		for i, q := range qrows {
			for _, g := range pr.p.Exclusions[q] {
				if l, in := local(g); in {
					sub.Exclusions[i] = append(sub.Exclusions[i], l)
				}
			}
		}
	}
	s := &scorer{p: sub, o: o, q: pr.q.subset(subQ, qrows), g: pr.g.subset(subG, grows), nq: bn, ng: len(grows), d: d, threads: pr.threads}
	s.sparse = s.q.csr != nil && s.g.csr != nil
	s.holdQueries()
	// The rank order holds every eligible positive of the query at its
	// local tie position; qi.pos lists only the shard's own positives (the
	// candidates the row walk treats as positives), padded to the length
	// of the rank order with sentinels past the shard's last row, which no
	// block reaches (the walk sizes its counters by len(qi.pos)).
	s.qs = make([]queryInfo, bn)
	off := 0
	for i := range bn {
		qi := &s.qs[i]
		lo, hi := part.Offsets[i], part.Offsets[i+1]
		n := hi - lo
		all := pr.eligible[qrows[i]]
		virt := make([]int, n)
		for k := range n {
			l, in := local(all[k].Index)
			virt[k] = l
			if in {
				qi.pos = append(qi.pos, retrieval.Positive{Index: l, Grade: all[k].Grade})
				qi.scores = append(qi.scores, part.Scores[lo+k])
			}
		}
		for k := len(qi.pos); k < n; k++ {
			qi.pos = append(qi.pos, retrieval.Positive{Index: len(grows) + k, Grade: 1})
			qi.scores = append(qi.scores, 0)
		}
		qi.order = make([]int, n)
		for k := range qi.order {
			qi.order[k] = k
		}
		sc := part.Scores[lo:hi]
		sort.Slice(qi.order, func(a, b int) bool {
			ka, kb := qi.order[a], qi.order[b]
			return precedes(sc[ka], all[ka].Index, sc[kb], all[kb].Index)
		})
		qi.ordScore, qi.ordIndex = make([]float64, n), make([]int, n)
		for r, k := range qi.order {
			qi.ordScore[r], qi.ordIndex[r] = sc[k], virt[k]
		}
		if sub.Exclusions != nil {
			qi.excl = sub.Exclusions[i]
		}
		qi.off = off
		off += n + 1
	}
	s.nBeaten = off
	s.meter = newMeter(ctx, int64(bn)*int64(len(grows)))
	s.stats = o.Stats
	if s.stats == nil {
		s.stats = &Stats{}
	}
	s.stats.Prepare = time.Since(t0)
	s.screen = s.newScreen()
	// The scorer's merge hands out ranks by position in the rank order:
	// rank − 1 is the shard's count of candidates preceding that positive.
	s.emit = func(q int, r QueryResult) error {
		lo := part.Offsets[q]
		for k, rk := range r.Ranks {
			part.Counts[lo+k] = int64(rk - 1)
		}
		part.HasNegative[q], part.Nearest[q] = r.HasNegative, r.NearestNegative
		if part.Top != nil {
			top := make([]Candidate, len(r.Top))
			for k, c := range r.Top {
				top[k] = Candidate{Index: grows[c.Index], Score: c.Score}
			}
			part.Top[q] = top // per-query slot: safe from concurrent calls
		}
		return nil
	}
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	return part, nil
}

func (p *Partial) keepsTop() bool { return p.FullRanking || p.TopN > 0 }

// check verifies that pos lists exactly the eligible positives.
func (pos *PositiveScores) check(eligible [][]retrieval.Positive) error {
	if pos == nil || len(pos.Offsets) != len(eligible)+1 || pos.Offsets[0] != 0 ||
		len(pos.Index) != pos.Offsets[len(eligible)] || len(pos.Scores) != len(pos.Index) {
		return fmt.Errorf("positive scores do not match the problem's eligible positives")
	}
	for q, el := range eligible {
		if pos.Offsets[q+1]-pos.Offsets[q] != len(el) {
			return fmt.Errorf("positive scores do not match the problem's eligible positives (query %d)", q)
		}
		for k, x := range el {
			if pos.Index[pos.Offsets[q]+k] != x.Index {
				return fmt.Errorf("positive scores do not match the problem's eligible positives (query %d)", q)
			}
		}
	}
	return nil
}

// subset is the source of rows (global indices, ascending) of s, held by m
// (those rows, already gathered). Per-row preparation is a pure function
// of the row (SPEC §4.1), so cosine norms are taken from s.
func (s *source) subset(m matrix.Matrix, rows []int) *source {
	sub := &source{m: m, rows: len(rows), cols: s.cols, prec: s.prec, cosine: s.cosine}
	sub.csr, _ = m.(*matrix.CSR)
	if s.cosine {
		sub.norms = make([]float64, len(rows))
		for i, r := range rows {
			sub.norms[i] = s.norms[r]
		}
		return sub
	}
	if dm, ok := m.(*matrix.Dense); ok {
		switch {
		case s.prec == Float64 && dm.DType() == matrix.Float64:
			sub.direct64 = dm.Float64Data()
		case s.prec == Float32 && dm.DType() == matrix.Float32:
			sub.direct32 = dm.Float32Data()
		}
	}
	return sub
}

// rowsOf returns the given rows (ascending) of m as a matrix of the same
// storage type: a view when they are contiguous, else a copy.
func rowsOf(m matrix.Matrix, rows []int) (matrix.Matrix, error) {
	contiguous := len(rows) > 0 && rows[len(rows)-1]-rows[0] == len(rows)-1
	switch x := m.(type) {
	case *matrix.Dense:
		if contiguous {
			return x.RowSlice(rows[0], rows[0]+len(rows)), nil
		}
		return gatherDense(x, rows)
	case *matrix.CSR:
		if contiguous {
			return x.RowSlice(rows[0], rows[0]+len(rows)), nil
		}
		return gatherCSR(x, rows)
	}
	return &rowView{m: m, rows: rows}, nil
}

func gatherDense(m *matrix.Dense, rows []int) (*matrix.Dense, error) {
	d := m.Cols()
	var out *matrix.Dense
	var err error
	switch m.DType() {
	case matrix.Float16:
		src, dst := m.Float16Bits(), make([]uint16, len(rows)*d)
		for i, r := range rows {
			copy(dst[i*d:(i+1)*d], src[r*d:(r+1)*d])
		}
		out, err = matrix.NewDense16(len(rows), d, dst)
	case matrix.Float32:
		src, dst := m.Float32Data(), make([]float32, len(rows)*d)
		for i, r := range rows {
			copy(dst[i*d:(i+1)*d], src[r*d:(r+1)*d])
		}
		out, err = matrix.NewDense32(len(rows), d, dst)
	default:
		src, dst := m.Float64Data(), make([]float64, len(rows)*d)
		for i, r := range rows {
			copy(dst[i*d:(i+1)*d], src[r*d:(r+1)*d])
		}
		out, err = matrix.NewDense64(len(rows), d, dst)
	}
	return out, err
}

func gatherCSR(m *matrix.CSR, rows []int) (*matrix.CSR, error) {
	indptr, indices := m.Components()
	ptr := make([]int64, len(rows)+1)
	for i, r := range rows {
		ptr[i+1] = ptr[i] + indptr[r+1] - indptr[r]
	}
	idx := make([]int32, ptr[len(rows)])
	for i, r := range rows {
		copy(idx[ptr[i]:ptr[i+1]], indices[indptr[r]:indptr[r+1]])
	}
	var out *matrix.CSR
	var err error
	if m.DType() == matrix.Float32 {
		src, dst := m.Float32Data(), make([]float32, len(idx))
		for i, r := range rows {
			copy(dst[ptr[i]:ptr[i+1]], src[indptr[r]:indptr[r+1]])
		}
		out, err = matrix.NewCSR32(len(rows), m.Cols(), ptr, idx, dst)
	} else {
		src, dst := m.Float64Data(), make([]float64, len(idx))
		for i, r := range rows {
			copy(dst[ptr[i]:ptr[i+1]], src[indptr[r]:indptr[r+1]])
		}
		out, err = matrix.NewCSR64(len(rows), m.Cols(), ptr, idx, dst)
	}
	return out, err
}

// rowView presents rows of another matrix (any implementation).
type rowView struct {
	m    matrix.Matrix
	rows []int
}

func (v *rowView) Rows() int                       { return len(v.rows) }
func (v *rowView) Cols() int                       { return v.m.Cols() }
func (v *rowView) DType() matrix.DType             { return v.m.DType() }
func (v *rowView) Sparse() bool                    { return v.m.Sparse() }
func (v *rowView) RowFloat64(i int, dst []float64) { v.m.RowFloat64(v.rows[i], dst) }
