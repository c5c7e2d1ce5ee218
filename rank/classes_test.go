package rank

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// plansAgainstOracle runs p under each plan point (block sizes, threads
// and the given tuning drawn at random) and requires the oracle's results,
// or its error, bit for bit.
func plansAgainstOracle(t *testing.T, r *rand.Rand, p Problem, sim Similarity, prec Precision, pps []planPoint, tune func() *tuning, what string) {
	t.Helper()
	want, werr := oracle(p, sim, prec)
	for _, pp := range pps {
		got, sum, err := runPlan(r, p, sim, prec, pp, tune())
		if werr != nil || err != nil {
			if werr == nil || err == nil || err.Error() != werr.Error() {
				t.Fatalf("%s %v: error %v, want %v", what, pp, err, werr)
			}
			continue
		}
		if d := diffPlan(want, got, sum, pp); d != "" {
			t.Fatalf("%s %v: %s", what, pp, d)
		}
	}
}

// One class with leave-one-out (every query excludes its own row): no
// query has a negative, every tile of the pass holds positives and
// excluded pairs only, and the ranks are 1…n−1 in score order. The
// oracle's results, pooled summary on and off, sorted ranks or per
// positive, one query per chunk or all at once, gallery shards
// (TestOneClassLeaveOneOut).
func TestOneClassLeaveOneOut(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	n, d := 40, 5
	vals := make([]float64, n*d)
	for i := range vals {
		vals[i] = r.NormFloat64()
	}
	m, _ := matrix.NewDense64(n, d, vals)
	ids := make([]string, n)
	ex := make([][]int, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
		ex[i] = []int{i}
	}
	cls := make([]int32, n)
	p := Problem{Queries: m, Gallery: m, QueryIDs: ids, GalleryIDs: ids, Exclusions: ex, Classes: retrieval.NewClasses(cls, cls)}
	var pps []planPoint
	for _, screen := range []string{"off", ""} {
		pps = append(pps, planPoint{screen: screen}, planPoint{screen: screen, sorted: true}, planPoint{screen: screen, pooled: true, sorted: true},
			planPoint{screen: screen, export: 3}, planPoint{screen: screen, shards: 3}, planPoint{screen: screen, shards: 2, layout: Modulo})
	}
	for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
		for _, prec := range []Precision{Float64, Float32} {
			for _, chunk := range []int{1, 0} {
				plansAgainstOracle(t, r, p, sim, prec, pps, func() *tuning { return &tuning{chunkPairs: chunk} }, fmt.Sprintf("sim %d %s chunk %d", sim, precName(prec), chunk))
			}
			res, err := Score(context.Background(), p, Options{Similarity: sim, Precision: prec, QueryBatch: 7, GalleryBatch: 9})
			if err != nil {
				t.Fatal(err)
			}
			oneTo := make([]int, n-1)
			for k := range oneTo {
				oneTo[k] = k + 1
			}
			for q, x := range res {
				if x.HasNegative || !slices.Equal(slices.Sorted(slices.Values(x.Ranks)), oneTo) {
					t.Fatalf("query %d: ranks %v, has negative %v", q, x.Ranks, x.HasNegative)
				}
			}
		}
	}
}

// Failures of label problems are the oracle's: a non-finite positive
// score, a non-finite excluded score inside a tile that holds no negative
// (nothing in it needs a score, but every pair is checked), and the
// missing-positives error (TestClassesErrorsMatchMaterialised), for whole
// runs, chunks, the pooled summary and gallery shards.
func TestClassesErrorsEqualOracle(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	big := 1e300
	// Rows 0 and 1 are huge: their dot product overflows.
	m, _ := matrix.NewDense64(4, 2, []float64{big, big, 1, 0, 0, 1, 1, 1})
	ids := []string{"a", "b", "c", "d"}
	pps := []planPoint{{screen: "off"}, {screen: ""}, {screen: "", pooled: true, sorted: true}, {screen: "off", shards: 2}, {screen: "", shards: 3, layout: Modulo}}
	for _, tc := range []struct {
		name string
		cls  []int32
		ex   [][]int
	}{
		{"positive overflows", []int32{0, 0, 1, 1}, [][]int{{}, {}, {}, {}}},
		{"excluded pair overflows in a tile without negatives", []int32{0, 0, 0, 0}, [][]int{{0, 1}, {0, 1}, {}, {}}},
	} {
		p := Problem{Queries: m, Gallery: m, QueryIDs: ids, GalleryIDs: ids, Exclusions: tc.ex, Classes: retrieval.NewClasses(tc.cls, tc.cls)}
		if _, err := oracle(p, Dot, Float64); err == nil || !strings.Contains(err.Error(), "non-finite") {
			t.Fatalf("%s: the oracle gives %v", tc.name, err)
		}
		for _, chunk := range []int{0, 1} {
			plansAgainstOracle(t, r, p, Dot, Float64, pps, func() *tuning { return &tuning{chunkPairs: chunk} }, tc.name)
		}
	}
	p := Problem{Queries: m, Gallery: m, QueryIDs: ids, GalleryIDs: ids, Exclusions: [][]int{{0}, {}, {}, {}},
		Classes: retrieval.NewClasses([]int32{0, 1, 2, 2}, []int32{0, 1, 2, 2})}
	for _, pooled := range []bool{false, true} {
		o := Options{Similarity: Dot, QueryBatch: 4, GalleryBatch: 4, SortedRanks: true}
		if pooled {
			o.Pooled = &Pooled{}
		}
		_, err := Score(context.Background(), p, o)
		if want := retrieval.MissingPositivesMessage([]string{"a"}); err == nil || err.Error() != want {
			t.Fatalf("no eligible positive: %v, want %q", err, want)
		}
		if _, err := ScorePositives(context.Background(), p, o); err == nil || err.Error() != retrieval.MissingPositivesMessage([]string{"a"}) {
			t.Fatalf("no eligible positive, ScorePositives: %v", err)
		}
	}
}

// Query chunks change nothing: a pair that overflows fails a run of one
// query per chunk exactly as the oracle (whichever chunk meets it), and
// finite problems with values near the overflow of each protocol are
// scored one query per chunk with the oracle's results
// (TestClassChunksKeepErrors).
func TestClassChunksKeepErrors(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	one := func() *tuning { return &tuning{chunkPairs: 1} }
	pps := []planPoint{{screen: "off"}, {screen: ""}, {screen: "", sorted: true, pooled: true}}
	for _, sim := range []Similarity{Dot, SquaredL2} {
		for _, prec := range []Precision{Float64, Float32} {
			p := classProblem(r, 12, 40, 3, 3, false, false, false)
			p.Exclusions = nil
			q := make([]float64, 12*3)
			for i := range q {
				q[i] = r.NormFloat64()
			}
			big := 1e200
			if prec == Float32 {
				big = 1e25
			}
			q[11*3+1] = big // the last query overflows against row 20 only
			g := make([]float64, 40*3)
			for i := range g {
				g[i] = r.NormFloat64()
			}
			g[20*3+1] = big
			p.Queries, _ = matrix.NewDense64(12, 3, q)
			p.Gallery, _ = matrix.NewDense64(40, 3, g)
			if _, err := oracle(p, sim, prec); err == nil {
				t.Fatalf("sim %d %s: the oracle does not fail", sim, precName(prec))
			}
			plansAgainstOracle(t, r, p, sim, prec, pps, one, fmt.Sprintf("overflow sim %d %s", sim, precName(prec)))
		}
	}
	for _, c := range []struct {
		sim  Similarity
		prec Precision
		v    float64
	}{{Dot, Float64, 1e149}, {SquaredL2, Float64, 1e149}, {Dot, Float32, 1e17}, {SquaredL2, Float32, 1e17}} {
		p := classProblem(r, 12, 40, 3, 3, false, false, false)
		for _, m := range []*matrix.Dense{p.Queries.(*matrix.Dense), p.Gallery.(*matrix.Dense)} {
			x := m.Float64Data()
			for i := range x {
				x[i] *= c.v / 4
			}
		}
		plansAgainstOracle(t, r, p, c.sim, c.prec, pps, one, fmt.Sprintf("near the bound %v", c))
		_, st, err := scoreStats(context.Background(), p, Options{Similarity: c.sim, Precision: c.prec, QueryBatch: 3, GalleryBatch: 8, Threads: 2}, one())
		if err != nil || st.Chunks != 12 {
			t.Fatalf("%v: %d chunks (%v), want one per query", c, st.Chunks, err)
		}
	}
}

// Label problems large enough for bucket tables (many positives per
// query) give the oracle's results with the bucketed counting and with
// plain searches: classes without exclusions, with a few and with
// leave-one-out, ties, every similarity and precision, random blocks
// (TestBucketedClassesEqualMaterialised).
func TestBucketedClassesEqualOracle(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(31, 32))
	for trial := range 8 {
		nq, ng := 20+r.IntN(20), 400+r.IntN(500)
		nc := []int{2, 3, 6, 8}[trial%4]
		ties := trial%3 == 1
		p := classProblem(r, nq, ng, 1+r.IntN(9), nc, false, trial%2 == 0, ties)
		switch trial % 3 {
		case 0:
			p.Exclusions = nil
		case 1: // at most one extra exclusion per query, besides leave-one-out
			for q := range p.Exclusions {
				ex := p.Exclusions[q][:0]
				for _, g := range p.Exclusions[q] {
					if g == q%ng || len(ex) == 0 && r.IntN(2) == 0 {
						ex = append(ex, g)
					}
				}
				p.Exclusions[q] = ex
			}
		}
		for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
			if sim == Cosine && ties {
				continue // tie data has zero rows
			}
			for _, prec := range []Precision{Float64, Float32} {
				pps := []planPoint{{screen: "off", sorted: trial%4 == 3}, {screen: "", sorted: trial%4 != 3}}
				for _, noBuckets := range []bool{false, true} {
					plansAgainstOracle(t, r, p, sim, prec, pps, func() *tuning { return &tuning{noBuckets: noBuckets} },
						fmt.Sprintf("trial %d (%d classes, ties %v) sim %d %s buckets %v", trial, nc, ties, sim, precName(prec), !noBuckets))
				}
			}
		}
	}
}

// A non-finite negative met by the bucketed counting fails the run as the
// oracle (TestBucketedClassesNonFinite).
func TestBucketedClassesNonFinite(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(33, 34))
	p := classProblem(r, 30, 900, 4, 3, false, false, false)
	p.Exclusions = nil
	g := make([]float64, 900*4)
	for i := range g {
		g[i] = r.NormFloat64()
	}
	g[700*4+1] = 1e308
	g[700*4+2] = 1e308
	g[650*4] = 1e308
	g[650*4+3] = -1e308
	p.Gallery, _ = matrix.NewDense64(900, 4, g)
	q := make([]float64, 30*4)
	for i := range q {
		q[i] = 1e10
	}
	p.Queries, _ = matrix.NewDense64(30, 4, q)
	// The overflowing rows are negatives of every query (a class of their
	// own), so the gallery pass meets them.
	gc := slices.Clone(p.Classes.Gallery)
	gc[650], gc[700] = 3, 3
	p.Classes = retrieval.NewClasses(p.Classes.Query, gc)
	if _, err := oracle(p, Dot, Float64); err == nil {
		t.Fatal("the oracle does not fail")
	}
	pps := []planPoint{{screen: "off"}, {screen: "off", sorted: true}, {screen: ""}, {screen: "off", shards: 2}}
	for _, noBuckets := range []bool{false, true} {
		plansAgainstOracle(t, r, p, Dot, Float64, pps, func() *tuning { return &tuning{noBuckets: noBuckets} }, fmt.Sprintf("buckets %v", !noBuckets))
	}
}

// The gallery's working rows are held for a label run when the memory
// budget has room (cacheGallery) and produced block by block when it has
// not; both give the oracle's results, pooled or not, in one chunk or
// several (the old pooledGalleryCap cases of TestPooledStreamingEqualsStored).
func TestGalleryCacheDoesNotChangeResults(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(41, 42))
	for trial := range 6 {
		nq, ng, d := 5+r.IntN(20), 40+r.IntN(60), 1+r.IntN(6)
		p := classProblem(r, nq, ng, d, []int{1, 3}[trial%2], trial%3 == 0, trial%2 == 0, false)
		for _, prec := range []Precision{Float64, Float32} {
			for _, limit := range []int64{0, 64} {
				ctx := context.Background()
				if limit > 0 {
					ctx = memory.WithLimit(ctx, limit)
				}
				// The cache is (not) made.
				pr, err := prepare(ctx, p, Options{Similarity: Cosine, Precision: prec, QueryBatch: 4, GalleryBatch: 8, Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				cached := false
				if prec == Float64 {
					s := newScorer[float64](ctx, pr, allRows(pr.ng), 0, pr.nq)
					s.cacheGallery(ctx, 2)
					cached = s.g != pr.g
				} else {
					s := newScorer[float32](ctx, pr, allRows(pr.ng), 0, pr.nq)
					s.cacheGallery(ctx, 2)
					cached = s.g != pr.g
				}
				if cached != (limit == 0) {
					t.Fatalf("trial %d %s limit %d: gallery cached %v", trial, precName(prec), limit, cached)
				}
				want, werr := oracle(p, Cosine, prec)
				if werr != nil {
					t.Fatal(werr)
				}
				for _, pp := range []planPoint{{screen: "off", sorted: true}, {screen: "off", pooled: true, sorted: true}, {screen: "off"}} {
					for _, chunk := range []int{0, 1} {
						o := Options{Similarity: Cosine, Precision: prec, QueryBatch: 1 + r.IntN(8), GalleryBatch: 1 + r.IntN(20), Threads: 2,
							SortedRanks: pp.sorted, tune: &tuning{chunkPairs: chunk, windowCap: []int{0, 5}[r.IntN(2)]}}
						if pp.pooled {
							o.Pooled = &Pooled{}
						}
						got, err := Score(ctx, p, o)
						if err != nil {
							t.Fatal(err)
						}
						var sum *metrics.Summary
						if o.Pooled != nil {
							sum = &o.Pooled.Summary
						}
						if d := diffPlan(want, got, sum, pp); d != "" {
							t.Fatalf("trial %d %s limit %d %v chunk %d: %s", trial, precName(prec), limit, pp, chunk, d)
						}
					}
				}
			}
		}
	}
}

// Label problems whose queries have no eligible negative because every
// row outside their class is excluded (the positives stage alone ranks
// them) give the oracle's results, pooled or not, sorted or by positive,
// whole or in gallery shards (the "every outsider excluded" cases of
// TestPooledStreamingEqualsStored).
func TestClassesWithoutNegatives(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(43, 44))
	pps := []planPoint{{screen: "off"}, {screen: ""}, {screen: "", sorted: true}, {screen: "", pooled: true, sorted: true},
		{screen: "off", export: 4}, {screen: "", shards: 2}, {screen: "", shards: 3, layout: Modulo}}
	for trial := range 6 {
		nq, ng := 1+r.IntN(30), 6+r.IntN(60)
		p := classProblem(r, nq, ng, 1+r.IntN(6), 2, false, false, trial%3 == 1)
		for q := range nq {
			k := p.Classes.Query[q]
			keep := p.Classes.Members(int(k))[0]
			var ex []int
			for g := range ng {
				if p.Classes.Gallery[g] != k || (r.IntN(8) == 0 && g != int(keep)) {
					ex = append(ex, g)
				}
			}
			p.Exclusions[q] = ex
		}
		for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
			if sim == Cosine && trial%3 == 1 {
				continue // tie data has zero rows
			}
			for _, prec := range []Precision{Float64, Float32} {
				tune := func() *tuning {
					return &tuning{windowCap: []int{0, 1, 5}[r.IntN(3)], chunkPairs: []int{0, 1}[r.IntN(2)]}
				}
				plansAgainstOracle(t, r, p, sim, prec, pps, tune, fmt.Sprintf("trial %d sim %d %s", trial, sim, precName(prec)))
			}
		}
		res, err := Score(context.Background(), p, Options{Similarity: Dot, QueryBatch: 3, GalleryBatch: 5})
		if err != nil {
			t.Fatal(err)
		}
		for q, x := range res {
			if x.HasNegative {
				t.Fatalf("trial %d query %d: a negative", trial, q)
			}
		}
	}
}

// Options.SortedRanks changes nothing for explicit relevance, even when it
// lists exactly the pairs of label classes.
func TestSortedRanksLeavesExplicitProblems(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(21, 22))
	for trial := range 8 {
		nq, ng := 1+r.IntN(30), 6+r.IntN(60)
		p := classProblem(r, nq, ng, 1+r.IntN(7), []int{1, 2, 10}[trial%3], trial%3 == 0, trial%2 == 0, false)
		p.Relevance, p.Classes = p.Classes.Materialise(), nil
		for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
			o := Options{Similarity: sim, QueryBatch: 1 + r.IntN(8), GalleryBatch: 1 + r.IntN(20), Threads: 1 + trial%2}
			want, err := Score(context.Background(), p, o)
			if err != nil {
				t.Fatal(err)
			}
			o.SortedRanks = true
			got, err := Score(context.Background(), p, o)
			if err != nil {
				t.Fatal(err)
			}
			if d := sameResults(got, want); d != "" {
				t.Fatalf("trial %d sim %d: SortedRanks changed an explicit problem: %s", trial, sim, d)
			}
		}
	}
}
