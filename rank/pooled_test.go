package rank

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// scorePooled scores p under Options.Pooled, streaming or (stored) through
// the stored-scores reference path.
func scorePooled(t *testing.T, p Problem, o Options, stored bool) ([]QueryResult, metrics.Summary, error) {
	t.Helper()
	forceStoredPooled = stored
	defer func() { forceStoredPooled = false }()
	var pl Pooled
	o.Pooled, o.SortedRanks = &pl, true
	got, err := Score(context.Background(), p, o)
	return got, pl.Summary, err
}

// Label problems without negatives (one class, or classes whose outsiders
// are all excluded) stream their positives: the results and the pooled
// summary equal the stored path's bit for bit, and the summary equals
// metrics.SummariseChunks over the materialised pairs' scores — with the
// median found in the sampled window, and (window cap shrunk) through the
// re-scoring radix passes; the gallery's working values cached or not,
// scored in blocks of any size; ties, exclusions, every similarity and
// precision, odd and even pair counts.
func TestPooledStreamingEqualsStored(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	defer func(c int) { pooledWindowCap = c }(pooledWindowCap)
	defer func(c int64) { pooledGalleryCap = c }(pooledGalleryCap)
	defer func(b int) { pooledGalleryBlock = b }(pooledGalleryBlock)
	for trial := range 36 {
		// The gallery converted once (cached) and converted per task.
		pooledGalleryCap = []int64{256 << 20, 0}[trial/3%2]
		// Gallery blocks of 1 to 7 members and one of all: excluded
		// members at block edges and inside blocks.
		pooledGalleryBlock = []int{1, 2, 3, 5, 7, 512}[trial%6]
		nq, ng := 1+r.IntN(40), 6+r.IntN(70)
		ties := trial%4 == 1
		var p Problem
		if trial%3 == 2 { // two classes, every outsider excluded
			p = classProblem(r, nq, ng, 1+r.IntN(6), 2, false, false, ties)
			for q := range nq {
				k := p.Classes.Query[q]
				var ex []int
				for g := range ng {
					if p.Classes.Gallery[g] != k || (r.IntN(8) == 0 && g != int(p.Classes.Members(int(k))[0])) {
						ex = append(ex, g)
					}
				}
				p.Exclusions[q] = ex
			}
		} else {
			p = classProblem(r, nq, ng, 1+r.IntN(6), 1, false, trial%2 == 0, ties)
		}
		pooledWindowCap = []int{1 << 21, 1, 5}[trial%3]
		pooledCases(t, r, p, ties, trial, func(o Options, want []QueryResult, wsum metrics.Summary) {
			sim, prec := o.Similarity, o.Precision
			s := &scorer{p: p, o: o, nq: nq, sortedRanks: true}
			s.o.Pooled = &Pooled{}
			if !s.pooledStreamable() {
				t.Fatalf("trial %d: the problem has no negatives but is not streamed", trial)
			}
			got, gsum, err := scorePooled(t, p, o, false)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gsum, wsum) {
				t.Fatalf("trial %d sim %d prec %d: streaming differs\n got %+v %v\nwant %+v %v", trial, sim, prec, got, gsum, want, wsum)
			}
			o.SortedRanks = true
			ref := scoreMaterialised(t, p, o)
			var chunks [][]float64
			for q, res := range ref {
				chunks = append(chunks, res.Scores)
				if m := maxOf(res.Scores); m != got[q].MaxPositive {
					t.Fatalf("trial %d: query %d max positive %v, want %v", trial, q, got[q].MaxPositive, m)
				}
			}
			if ms := metrics.SummariseChunks(chunks); !reflect.DeepEqual(ms, gsum) {
				t.Fatalf("trial %d: summary differs from the materialised pairs'", trial)
			}
		})
	}
}

// pooledCases runs check for every similarity and precision (cosine
// only without ties: tie data has zero rows) with random blocks and
// threads, handing it the stored path's results and summary.
func pooledCases(t *testing.T, r *rand.Rand, p Problem, ties bool, trial int, check func(o Options, want []QueryResult, wsum metrics.Summary)) {
	t.Helper()
	for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
		if sim == Cosine && ties {
			continue
		}
		for _, prec := range []Precision{Float64, Float32} {
			o := Options{Similarity: sim, Precision: prec, QueryBatch: 1 + r.IntN(8), GalleryBatch: 1 + r.IntN(20), Threads: 1 + trial%3}
			want, wsum, err := scorePooled(t, p, o, true)
			if err != nil {
				t.Fatal(err)
			}
			check(o, want, wsum)
		}
	}
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// A non-finite score fails the streaming path exactly as the stored one: a
// positive (the lowest gallery index, then query), or, with every positive
// finite, an excluded pair (gallery block, query, gallery index order).
func TestPooledStreamingErrorsMatchStored(t *testing.T) {
	big := 1e300
	q, _ := matrix.NewDense64(3, 1, []float64{1, big, big})
	g, _ := matrix.NewDense64(4, 1, []float64{1, 2, big, 1})
	ids := func(p string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, p+string(rune('0'+i)))
		}
		return out
	}
	c := retrieval.NewClasses([]int32{0, 0, 0}, []int32{0, 0, 0, 0})
	for _, ex := range [][][]int{nil, {{2}, {0}, {}}, {{}, {2, 3}, {2, 3}}} {
		p := Problem{Queries: q, Gallery: g, QueryIDs: ids("q", 3), GalleryIDs: ids("g", 4), Classes: c, Exclusions: ex}
		o := Options{Similarity: Dot, QueryBatch: 2, GalleryBatch: 2, Threads: 2}
		_, _, werr := scorePooled(t, p, o, true)
		_, _, gerr := scorePooled(t, p, o, false)
		if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
			t.Fatalf("exclusions %v: error %v, want %v", ex, gerr, werr)
		}
	}
}

// A cancelled streaming run returns the context's error and leaves no
// worker waiting for its turn in the ordered sum (several query blocks).
func TestPooledStreamingCancel(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	nq, ng := 1000, 20000 // 209 queries per block: 5 blocks
	p := randomProblem(r, nq, ng, 2, false)
	p.Relevance, p.Exclusions = nil, nil
	p.Classes = retrieval.NewClasses(make([]int32, nq), make([]int32, ng))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = WithProgress(ctx, func(done, total int64) { cancel() })
	_, err := Score(ctx, p, Options{Similarity: Dot, QueryBatch: 64, GalleryBatch: 1000, Threads: 2, SortedRanks: true, Pooled: &Pooled{}})
	if err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
