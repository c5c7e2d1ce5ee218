package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// pairProblem is a random problem with duplicated rows (exact ties),
// exclusions and every gallery row judged relevant by some query (so the
// reverse direction is defined).
func pairProblem(r *rand.Rand, nq, ng, d int, f32 bool) rank.Problem {
	row := func() []float64 {
		v := make([]float64, d)
		for i := range v {
			v[i] = float64(r.IntN(5) - 2)
			if r.IntN(2) == 0 {
				v[i] = r.NormFloat64()
			}
		}
		v[r.IntN(d)] = 1 + float64(r.IntN(2)) // nonzero norm
		return v
	}
	build := func(n int) matrix.Matrix {
		rows := make([][]float64, n)
		for i := range rows {
			if i > 0 && r.IntN(3) == 0 {
				rows[i] = rows[r.IntN(i)] // duplicate
			} else {
				rows[i] = row()
			}
		}
		m, _ := matrix.FromRows(rows)
		if f32 {
			data := make([]float32, n*d)
			for i, x := range m.Float64Data() {
				data[i] = float32(x)
			}
			m32, _ := matrix.NewDense32(n, d, data)
			return m32
		}
		return m
	}
	p := rank.Problem{Queries: build(nq), Gallery: build(ng), Relevance: make([][]retrieval.Positive, nq), Exclusions: make([][]int, nq)}
	for q := range nq {
		p.QueryIDs = append(p.QueryIDs, "q"+strconv.Itoa(q))
	}
	for g := range ng {
		p.GalleryIDs = append(p.GalleryIDs, "g"+strconv.Itoa(g))
	}
	rel := make([]map[int]float64, nq)
	for q := range rel {
		rel[q] = map[int]float64{r.IntN(ng): float64(1 + r.IntN(3))}
	}
	for g := range ng { // reverse coverage
		rel[r.IntN(nq)][g] = float64(1 + r.IntN(3))
	}
	for q := range nq {
		for g := range ng {
			if grade, ok := rel[q][g]; ok {
				p.Relevance[q] = append(p.Relevance[q], retrieval.Positive{Index: g, Grade: grade})
			} else if r.IntN(6) == 0 {
				p.Exclusions[q] = append(p.Exclusions[q], g) // never a positive: coverage stays
			}
		}
	}
	return p
}

func resultJSON(t *testing.T, r *results.ExtractorResult) []byte {
	t.Helper()
	// Run and Margins are not part of the JSON form: compare them too.
	extra := []any{r, r.Forward.Run, r.Forward.Margins}
	if r.Reverse != nil {
		extra = append(extra, r.Reverse.Run, r.Reverse.Margins)
	}
	b, err := json.Marshal(extra)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Pair through random gallery shards (both layouts, N ∈ {1, 2, 3, 7}),
// binary round trips and random merge orders equals Pair itself, bit for
// bit, for every similarity, both precisions, both directions and kept
// rankings.
func TestPairFromPartialsEqualsPair(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 10))
	ctx := context.Background()
	for it := range 48 {
		nq, ng, d := 2+r.IntN(8), 3+r.IntN(20), 1+r.IntN(5)
		cfg := retrieval.DefaultConfig()
		cfg.Similarity = []string{retrieval.Cosine, retrieval.Dot, retrieval.SquaredL2}[it%3]
		cfg.Bidirectional = it%2 == 0
		cfg.Ks = []int{1, 3}
		cfg.PrimaryMetric = "ndcg@3"
		f32 := r.IntN(2) == 0
		if f32 {
			cfg.Precision = retrieval.PrecisionF32
		}
		cfg.QueryBatchSize, cfg.GalleryBatchSize = 1+r.IntN(4), 1+r.IntN(6)
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		p := pairProblem(r, nq, ng, d, f32)
		depth := []int{-1, 0, 2}[r.IntN(3)]
		want, err := Pair(ctx, p, cfg, []string{"w"}, 2, depth)
		if err != nil {
			t.Fatal(err)
		}
		total := []int{1, 2, 3, 7}[r.IntN(4)]
		layout := rank.ShardLayout(r.IntN(2))
		var parts []*PairPartial
		for i := range total {
			pp, err := PairShard(ctx, p, cfg, 1+r.IntN(2), depth, rank.Shard{Index: i, Total: total, Layout: layout})
			if err != nil {
				t.Fatal(err)
			}
			if rv := pp.Reverse; rv != nil {
				// The reverse direction is this shard's block of reverse
				// queries, complete: 1/N of the reverse work and state.
				lo, hi := ReverseBlock(rank.Shard{Index: i, Total: total, Layout: layout}, ng, nil)
				if rv.QueryLo != lo || rv.QueryHi() != hi || !rv.Complete() || rv.NQueries != ng || rv.NGallery != nq {
					t.Fatalf("shard %d of %d: reverse block [%d, %d) of %d (complete %v), want [%d, %d)", i, total, rv.QueryLo, rv.QueryHi(), rv.NQueries, rv.Complete(), lo, hi)
				}
			}
			enc, err := pp.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			{
				// The same shard holding only its rows, with the merged
				// positives stages of all shards, gives the same bytes.
				wenc, err := windowPair(ctx, p, cfg, depth, rank.Shard{Index: i, Total: total, Layout: layout}).MarshalBinary()
				if err != nil || !bytes.Equal(wenc, enc) {
					t.Fatalf("iteration %d shard %d of %d: the windowed shard differs (%v)", it, i, total, err)
				}
			}
			var dec PairPartial
			if err := dec.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			parts = append(parts, &dec)
		}
		r.Shuffle(len(parts), func(a, b int) { parts[a], parts[b] = parts[b], parts[a] })
		fwd, rev, err := MergePairPartials(parts...)
		if err != nil {
			t.Fatal(err)
		}
		bare := rank.Problem{QueryIDs: p.QueryIDs, GalleryIDs: p.GalleryIDs, Relevance: p.Relevance, Exclusions: p.Exclusions}
		got, err := PairFromPartials(bare, cfg, []string{"w"}, depth, []*rank.Partial{fwd}, rev)
		if err != nil {
			t.Fatal(err)
		}
		if w, g := resultJSON(t, want), resultJSON(t, got); !bytes.Equal(w, g) {
			t.Fatalf("iteration %d (%s, bidirectional %v, N=%d %s, depth %d):\nwant %s\ngot  %s", it, cfg.Similarity, cfg.Bidirectional, total, layout, depth, w, g)
		}
	}
}

// windowPair scores gallery shard sh of p as a worker holding only its
// rows does: every shard's positives stage on its window, merged, then the
// shard's pair partial on its window (and, for a modulo shard, the gallery
// rows of its reverse block read apart).
func windowPair(ctx context.Context, p rank.Problem, cfg retrieval.Config, depth int, sh rank.Shard) *PairPartial {
	ng, n := p.Gallery.Rows(), sh.Total
	window := func(k int) rank.Problem {
		s := rank.Shard{Index: k, Total: n, Layout: sh.Layout}
		w := p
		m, err := retrieval.SelectRows(p.Gallery, s.Rows(ng))
		if err != nil {
			panic(err)
		}
		w.Gallery, w.GalleryFirst, w.GalleryTotal = m, k*ng/n, ng
		if sh.Layout == rank.Modulo {
			w.GalleryFirst, w.GalleryStride = k, n
		}
		return w
	}
	var stages [][]float64
	for k := range n {
		wp, err := WindowPositives(ctx, window(k), cfg, 1)
		if err != nil {
			panic(err)
		}
		stages = append(stages, wp.Scores)
	}
	pos, err := rank.AssemblePositiveScores(p, ng, sh.Layout, stages)
	if err != nil {
		panic(err)
	}
	var rev *GalleryRows
	if lo, hi, err := ReverseGalleryRows(p, cfg, sh); err != nil {
		panic(err)
	} else if cfg.Bidirectional && lo < hi && sh.Layout == rank.Modulo {
		rev = &GalleryRows{First: lo, Rows: p.Gallery.(*matrix.Dense).RowSlice(lo, hi).Clone()}
	}
	pp, err := PairWindow(ctx, window(sh.Index), cfg, 2, depth, sh, pos, rev)
	if err != nil {
		panic(err)
	}
	return pp
}

func FuzzPairPartialUnmarshal(f *testing.F) {
	r := rand.New(rand.NewPCG(12, 11))
	p := pairProblem(r, 3, 5, 2, false)
	cfg := retrieval.DefaultConfig()
	cfg.Bidirectional = true
	pp, err := PairShard(context.Background(), p, cfg, 1, -1, rank.Shard{Index: 1, Total: 2})
	if err != nil {
		f.Fatal(err)
	}
	enc, _ := pp.MarshalBinary()
	f.Add(enc)
	f.Add(enc[:len(enc)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		var x PairPartial
		if err := x.UnmarshalBinary(data); err != nil {
			return
		}
		again, err := x.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted input does not re-encode to itself: %v", err)
		}
	})
}

// Label-derived relevance (implicit classes, many positives per query)
// shards too, in both directions.
func TestPairFromPartialsClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	ctx := context.Background()
	for it := range 6 {
		nq, ng := 9, 14
		p := pairProblem(r, nq, ng, 3, false)
		gc := make([]int32, ng)
		for i := range gc {
			gc[i] = int32(i % 3)
		}
		qc := make([]int32, nq)
		for i := range qc {
			qc[i] = int32(r.IntN(3))
			if i < 6 {
				qc[i] = int32(i % 3) // every class has queries (reverse coverage), some two
			}
		}
		p.Relevance, p.Classes = nil, retrieval.NewClasses(qc, gc)
		for q := range p.Exclusions {
			p.Exclusions[q] = nil
			if q >= 6 {
				p.Exclusions[q] = []int{q % ng}
			}
		}
		cfg := retrieval.DefaultConfig()
		cfg.Similarity = []string{retrieval.Cosine, retrieval.Dot, retrieval.SquaredL2}[it%3]
		cfg.Bidirectional = true
		cfg.Ks, cfg.PrimaryMetric = []int{1, 5}, "map"
		want, err := Pair(ctx, p, cfg, nil, 2, -1)
		if err != nil {
			t.Fatal(err)
		}
		var parts []*PairPartial
		for i := range 3 {
			pp, err := PairShard(ctx, p, cfg, 2, -1, rank.Shard{Index: i, Total: 3, Layout: rank.ShardLayout(it % 2)})
			if err != nil {
				t.Fatal(err)
			}
			{
				a, _ := pp.MarshalBinary()
				b, _ := windowPair(ctx, p, cfg, -1, rank.Shard{Index: i, Total: 3, Layout: rank.ShardLayout(it % 2)}).MarshalBinary()
				if !bytes.Equal(a, b) {
					t.Fatalf("classes %d shard %d: the windowed shard differs", it, i)
				}
			}
			parts = append(parts, pp)
		}
		fwd, rev, err := MergePairPartials(parts...)
		if err != nil {
			t.Fatal(err)
		}
		bare := rank.Problem{QueryIDs: p.QueryIDs, GalleryIDs: p.GalleryIDs, Classes: p.Classes, Exclusions: p.Exclusions}
		got, err := PairFromPartials(bare, cfg, nil, -1, []*rank.Partial{fwd}, rev)
		if err != nil {
			t.Fatal(err)
		}
		if w, g := resultJSON(t, want), resultJSON(t, got); !bytes.Equal(w, g) {
			t.Fatalf("classes %d:\nwant %s\ngot  %s", it, w, g)
		}
	}
}

// Query blocks × gallery shards, merged per block and passed in query order,
// give Direction's result (what the Beam pipeline does).
func TestDirectionFromQueryBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	ctx := context.Background()
	p := pairProblem(r, 9, 13, 3, false)
	cfg := retrieval.DefaultConfig()
	cfg.Ks, cfg.PrimaryMetric = []int{1, 4}, "ndcg@4"
	for _, depth := range []int{-1, 3} {
		want, err := Direction(ctx, p, cfg, 2, depth)
		if err != nil {
			t.Fatal(err)
		}
		o, err := DirectionOptions(cfg, 2, depth)
		if err != nil {
			t.Fatal(err)
		}
		pos, err := rank.ScorePositives(ctx, p, o)
		if err != nil {
			t.Fatal(err)
		}
		var blocks []*rank.Partial
		for _, b := range [][2]int{{0, 4}, {4, 5}, {5, 9}} {
			var parts []*rank.Partial
			for i := range 3 {
				pt, err := rank.ScoreShard(ctx, p, o, pos, rank.ShardTask{QueryLo: b[0], QueryHi: b[1], Gallery: rank.Shard{Index: i, Total: 3, Layout: rank.Modulo}})
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, pt)
			}
			m, err := rank.MergePartials(parts...)
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, m)
		}
		got, err := DirectionFromPartials(p, cfg, depth, blocks)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := json.Marshal([]any{want, want.Run, want.Margins})
		g, _ := json.Marshal([]any{got, got.Run, got.Margins})
		if !bytes.Equal(w, g) {
			t.Fatalf("depth %d:\nwant %s\ngot  %s", depth, w, g)
		}
		if _, err := DirectionFromPartials(p, cfg, depth, []*rank.Partial{blocks[0], blocks[2], blocks[1]}); err == nil {
			t.Fatal("blocks out of query order accepted")
		}
	}
}

// A contiguous shard's reverse block is the reverse queries among its own
// gallery rows; a modulo shard's the contiguous split of the reverse
// queries. Blocks tile the reverse queries in shard order.
func TestReverseBlock(t *testing.T) {
	t.Parallel()
	keep := []int{1, 2, 5, 8, 9} // reverse queries among 10 gallery rows
	for _, c := range []struct {
		layout rank.ShardLayout
		keep   []int
		want   [][2]int
	}{
		{rank.Contiguous, nil, [][2]int{{0, 3}, {3, 6}, {6, 10}}},
		{rank.Contiguous, keep, [][2]int{{0, 2}, {2, 3}, {3, 5}}}, // rows [0,3): 1, 2; [3,6): 5; [6,10): 8, 9
		{rank.Modulo, nil, [][2]int{{0, 3}, {3, 6}, {6, 10}}},
		{rank.Modulo, keep, [][2]int{{0, 1}, {1, 3}, {3, 5}}},
	} {
		for i, w := range c.want {
			if lo, hi := ReverseBlock(rank.Shard{Index: i, Total: 3, Layout: c.layout}, 10, c.keep); lo != w[0] || hi != w[1] {
				t.Errorf("%s shard %d keep %v: [%d, %d), want %v", c.layout, i, c.keep, lo, hi, w)
			}
		}
	}
	if lo, hi := ReverseBlock(rank.Shard{Index: 0, Total: 7}, 3, nil); lo != 0 || hi != 0 {
		t.Errorf("shard 0 of 7 over 3 rows holds none, got [%d, %d)", lo, hi)
	}
}
