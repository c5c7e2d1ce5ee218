package rank

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// sharded scores p through the sharded path: positives once, every
// (query block × gallery shard) task, each partial through its binary
// form, merged in a random grouping and order, then finished.
func sharded(t *testing.T, r *rand.Rand, p Problem, o Options, total int, layout ShardLayout) ([]QueryResult, error) {
	t.Helper()
	ctx := context.Background()
	pos, err := ScorePositives(ctx, p, o)
	if err != nil {
		return nil, err
	}
	nq := p.Queries.Rows()
	// Random query blocks.
	cuts := []int{0}
	for q := 1; q < nq; q++ {
		if r.IntN(3) == 0 {
			cuts = append(cuts, q)
		}
	}
	cuts = append(cuts, nq)
	var blocks []*Partial
	for b := 0; b+1 < len(cuts); b++ {
		var parts []*Partial
		for i := range total {
			use := pos
			if r.IntN(2) == 0 { // as received by another process: no prepared problem to reuse
				cp := *pos
				cp.prep = nil
				use = &cp
			}
			pt, err := ScoreShard(ctx, p, o, use, ShardTask{QueryLo: cuts[b], QueryHi: cuts[b+1], Gallery: Shard{Index: i, Total: total, Layout: layout}})
			if err != nil {
				return nil, err
			}
			enc, err := pt.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var dec Partial
			if err := dec.UnmarshalBinary(enc); err != nil {
				t.Fatal(err)
			}
			again, _ := dec.MarshalBinary()
			if !bytes.Equal(enc, again) {
				t.Fatal("binary form does not round-trip")
			}
			parts = append(parts, &dec)
		}
		r.Shuffle(len(parts), func(a, b int) { parts[a], parts[b] = parts[b], parts[a] })
		// Merge in two random groups first: merging is associative.
		k := r.IntN(len(parts)) + 1
		left, err := MergePartials(parts[:k]...)
		if err != nil {
			t.Fatal(err)
		}
		all := []*Partial{left}
		if k < len(parts) {
			right, err := MergePartials(parts[k:]...)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, right)
		}
		m, err := MergePartials(all...)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, m)
	}
	out := make([]QueryResult, nq)
	err = Results(Problem{QueryIDs: p.QueryIDs, GalleryIDs: p.GalleryIDs, Relevance: p.Relevance, Classes: p.Classes, Exclusions: p.Exclusions},
		blocks, func(q int, res QueryResult) error { out[q] = res; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out, nil
}

// sameResults compares two result lists bit for bit.
func sameResults(a, b []QueryResult) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d vs %d queries", len(a), len(b))
	}
	bits := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	for q := range a {
		x, y := a[q], b[q]
		if !slices.Equal(x.Positives, y.Positives) || !slices.Equal(x.Ranks, y.Ranks) || len(x.Scores) != len(y.Scores) {
			return fmt.Sprintf("query %d: positives/ranks %v %v vs %v %v", q, x.Positives, x.Ranks, y.Positives, y.Ranks)
		}
		for k := range x.Scores {
			if !bits(x.Scores[k], y.Scores[k]) {
				return fmt.Sprintf("query %d: positive score %d", q, k)
			}
		}
		if x.HasNegative != y.HasNegative || !bits(x.NearestNegative, y.NearestNegative) {
			return fmt.Sprintf("query %d: nearest negative %v %v vs %v %v", q, x.HasNegative, x.NearestNegative, y.HasNegative, y.NearestNegative)
		}
		if len(x.Top) != len(y.Top) {
			return fmt.Sprintf("query %d: top %d vs %d", q, len(x.Top), len(y.Top))
		}
		for k := range x.Top {
			if x.Top[k].Index != y.Top[k].Index || !bits(x.Top[k].Score, y.Top[k].Score) {
				return fmt.Sprintf("query %d: top[%d] %v vs %v", q, k, x.Top[k], y.Top[k])
			}
		}
	}
	return ""
}

// Random shard splits, layouts, query blocks and merge orders give the
// unsharded result bit for bit, for every similarity, both precisions,
// screened and exhaustive scoring, kept rankings, ties and exclusions.
func TestShardedEqualsUnsharded(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 1))
	iters := 60
	if n := os.Getenv("VERTEBRAE_SHARD_ITERS"); n != "" {
		iters, _ = strconv.Atoi(n)
	}
	if testing.Short() {
		iters = 20
	}
	for it := range iters {
		nq, ng, d := 1+r.IntN(9), 6+r.IntN(30), 1+r.IntN(6)
		sim := Similarity(r.IntN(3))
		ties := sim != Cosine && r.IntN(2) == 0 // zero rows only where allowed
		p := randomProblem(r, nq, ng, d, ties)
		if r.IntN(3) == 0 { // duplicated gallery rows: exact ties across shards
			gd := p.Gallery.(*matrix.Dense).Float64Data()
			for j := 1; j < ng; j += 2 {
				copy(gd[j*d:(j+1)*d], gd[(j-1)*d:j*d])
			}
		}
		o := Options{Similarity: sim, Precision: Precision(r.IntN(2)), QueryBatch: 1 + r.IntN(4), GalleryBatch: 1 + r.IntN(7),
			Threads: 1 + r.IntN(3), Exhaustive: r.IntN(2) == 0}
		switch r.IntN(4) {
		case 0:
			o.TopN = 1 + r.IntN(5)
		case 1:
			o.FullRanking = true
		}
		want, err := Score(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		total := []int{1, 2, 3, 7, 1 + r.IntN(ng+3)}[r.IntN(5)]
		layout := ShardLayout(r.IntN(2))
		got, err := sharded(t, r, p, o, total, layout)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameResults(want, got); diff != "" {
			t.Fatalf("iteration %d (%v N=%d %s, %+v): %s", it, sim, total, layout, o, diff)
		}
	}
}

// The screened float64 path (dot/cosine, no kept ranking) decides most
// pairs from float32 scores; the sharded path keeps it and stays exact on
// near-ties, duplicated rows and extreme magnitudes.
func TestShardedScreenedCases(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 2))
	for _, c := range append(screenCases(r, 9, 7, 40), screenCases(r, 33, 5, 70)...) {
		p := denseProblem(t, c, r)
		for _, sim := range []Similarity{Dot, Cosine} {
			o := Options{Similarity: sim, QueryBatch: 3, GalleryBatch: 8, Threads: 2}
			want, err := Score(context.Background(), p, o)
			if err != nil {
				continue // e.g. non-finite scores: the error cases are covered elsewhere
			}
			for _, total := range []int{2, 3, 7} {
				var st Stats
				o.Stats = &st
				got, err := sharded(t, r, p, o, total, Modulo)
				o.Stats = nil
				if err != nil {
					t.Fatal(err)
				}
				if diff := sameResults(want, got); diff != "" {
					t.Fatalf("%s %v N=%d: %s", c.name, sim, total, diff)
				}
				if !st.Screened {
					t.Fatalf("%s: shard was not screened", c.name)
				}
			}
		}
	}
}

// Label-class relevance (many positives) and sparse endpoints shard too.
func TestShardedClassesAndSparse(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 3))
	for it := range 12 {
		p := classProblem(r, 6+r.IntN(6), 10+r.IntN(30), 4, 1+r.IntN(3), it%2 == 0, true, it%3 == 0)
		o := Options{Similarity: Similarity(r.IntN(2) + 1), QueryBatch: 4, GalleryBatch: 5, Threads: 2}
		want, err := Score(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sharded(t, r, p, o, 1+r.IntN(7), ShardLayout(it%2))
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameResults(want, got); diff != "" {
			t.Fatalf("classes %d: %s", it, diff)
		}
	}
	for it := range 8 {
		nq, ng, d := 5, 17, 12
		p := randomProblem(r, nq, ng, d, false)
		qs, _ := randomSparse(r, nq, d, 0.3, it%2 == 0, false)
		gs, _ := randomSparse(r, ng, d, 0.3, it%2 == 0, it%4 == 1)
		p.Gallery = gs
		if it%3 != 0 {
			p.Queries = qs
		}
		o := Options{Similarity: Similarity(it % 3), Precision: Precision(it / 4), QueryBatch: 2, GalleryBatch: 4, Threads: 2}
		want, err := Score(context.Background(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sharded(t, r, p, o, 3, ShardLayout(it%2))
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameResults(want, got); diff != "" {
			t.Fatalf("sparse %d: %s", it, diff)
		}
	}
}

// Errors name global rows and IDs, as the unsharded scorer does.
func TestShardedErrorsAreGlobal(t *testing.T) {
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	g, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}, {0, 0}})
	p := Problem{Queries: q, Gallery: g, QueryIDs: []string{"a", "b"}, GalleryIDs: []string{"x", "y", "gallery-zero"},
		Relevance: [][]retrieval.Positive{{{Index: 0, Grade: 1}}, {{Index: 1, Grade: 1}}}}
	o := Options{Similarity: Cosine, QueryBatch: 1, GalleryBatch: 1}
	_, want := Score(context.Background(), p, o)
	_, err := ScorePositives(context.Background(), p, o)
	if want == nil || err == nil || err.Error() != want.Error() {
		t.Fatalf("got %v, want %v", err, want)
	}
}

// Merging refuses partials that do not belong together.
func TestMergePartialsRejects(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 4))
	p := randomProblem(r, 3, 9, 2, false)
	o := Options{Similarity: Dot, QueryBatch: 2, GalleryBatch: 2}
	ctx := context.Background()
	pos, err := ScorePositives(ctx, p, o)
	if err != nil {
		t.Fatal(err)
	}
	shard := func(i, n int, l ShardLayout) *Partial {
		pt, err := ScoreShard(ctx, p, o, pos, ShardTask{QueryLo: 0, QueryHi: 3, Gallery: Shard{Index: i, Total: n, Layout: l}})
		if err != nil {
			t.Fatal(err)
		}
		return pt
	}
	a, b := shard(0, 2, Contiguous), shard(1, 2, Contiguous)
	for name, parts := range map[string][]*Partial{
		"twice":        {a, a},
		"other total":  {a, shard(1, 3, Contiguous)},
		"other layout": {a, shard(1, 2, Modulo)},
	} {
		if _, err := MergePartials(parts...); !errors.Is(err, ErrPartialMismatch) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	bad := *b
	bad.Scores = slices.Clone(b.Scores)
	bad.Scores[0] = math.Nextafter(bad.Scores[0], 2)
	if _, err := MergePartials(a, &bad); !errors.Is(err, ErrPartialMismatch) {
		t.Errorf("foreign positive scores: got %v", err)
	}
	if err := Results(p, []*Partial{a}, func(int, QueryResult) error { return nil }); !errors.Is(err, ErrPartialMismatch) {
		t.Errorf("incomplete: got %v", err)
	}
}

func FuzzPartialUnmarshal(f *testing.F) {
	r := rand.New(rand.NewPCG(12, 5))
	p := randomProblem(r, 3, 9, 2, false)
	o := Options{Similarity: Dot, QueryBatch: 2, GalleryBatch: 2, TopN: 2}
	pos, _ := ScorePositives(context.Background(), p, o)
	pt, _ := ScoreShard(context.Background(), p, o, pos, ShardTask{QueryLo: 1, QueryHi: 3, Gallery: Shard{Index: 1, Total: 2}})
	enc, _ := pt.MarshalBinary()
	f.Add(enc)
	f.Add(enc[:len(enc)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		var x Partial
		if err := x.UnmarshalBinary(data); err != nil {
			return
		}
		again, err := x.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted input does not re-encode to itself: %v", err)
		}
	})
}
