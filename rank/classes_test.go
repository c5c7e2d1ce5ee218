package rank

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// classProblem builds a label problem: nc classes drawn at random (or
// sorted into contiguous runs, so that whole tiles are single-class),
// optional leave-one-out style self exclusions and random extra exclusions
// (each query keeps at least one eligible positive).
func classProblem(r *rand.Rand, nq, ng, d, nc int, sorted, selfExcl, ties bool) Problem {
	p := randomProblem(r, nq, ng, d, ties)
	qc, gc := make([]int32, nq), make([]int32, ng)
	for i := range gc {
		gc[i] = int32(r.IntN(nc))
		if sorted {
			gc[i] = int32(i * nc / ng)
		}
	}
	for i := range qc {
		qc[i] = gc[r.IntN(ng)] // every query's class has a member
		if sorted {
			qc[i] = int32(i * nc / nq)
			if nc > ng {
				qc[i] = gc[i%ng]
			}
		}
	}
	c := retrieval.NewClasses(qc, gc)
	p.Relevance, p.Classes = nil, c
	p.Exclusions = make([][]int, nq)
	for q := range nq {
		m := c.Members(int(qc[q]))
		keep := int(m[r.IntN(len(m))]) // never excluded
		var ex []int
		for g := range ng {
			if g == keep {
				continue
			}
			if (selfExcl && g == q%ng) || r.IntN(10) == 0 {
				ex = append(ex, g)
			}
		}
		p.Exclusions[q] = ex
	}
	return p
}

func scoreMaterialised(t *testing.T, p Problem, o Options) []QueryResult {
	t.Helper()
	forceMaterialisedClasses = true
	defer func() { forceMaterialisedClasses = false }()
	got, err := Score(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The implicit class path gives exactly the results of the explicit pairs
// (which TestScoreMatchesSortEverything checks against sorting everything):
// every rank, positive score, nearest negative and kept candidate, for
// 1, few and many classes, contiguous and interleaved classes, exclusions
// of positives and of negatives, ties, every similarity and precision, and
// every block shape (single-class tiles are skipped), with per-worker and
// with shared counters.
func TestClassesEqualMaterialisedPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	defer func(b, c int) { maxLocalCounterBytes, maxChunkPairs = b, c }(maxLocalCounterBytes, maxChunkPairs)
	chunked := 0
	for trial := range 40 {
		// Per-worker counters, and (odd trials) the shared atomic ones;
		// all queries at once, one query per chunk, and chunks of a few
		// queries.
		maxLocalCounterBytes = []int{64 << 20, 0}[trial%2]
		maxChunkPairs = []int{1 << 22, 1, 1 + r.IntN(100)}[trial%3]
		nq, ng := 1+r.IntN(30), 6+r.IntN(60)
		nc := []int{1, 2, 10, 1000}[trial%4]
		p := classProblem(r, nq, ng, 1+r.IntN(7), nc, trial%3 == 0, trial%2 == 0, trial%5 == 1)
		for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
			if sim == Cosine && trial%5 == 1 {
				continue // tie data has zero rows
			}
			for _, prec := range []Precision{Float64, Float32} {
				for _, keep := range []int{-1, 0, 3} {
					o := Options{Similarity: sim, Precision: prec, QueryBatch: 1 + r.IntN(8), GalleryBatch: 1 + r.IntN(20),
						Threads: 1 + trial%3, TopN: max(keep, 0), FullRanking: keep == 0}
					want := scoreMaterialised(t, p, o)
					var st Stats
					o.Stats = &st
					got, err := Score(context.Background(), p, o)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("trial %d (%d classes, %d chunks) sim %d prec %d keep %d:\n got %+v\nwant %+v", trial, nc, st.Chunks, sim, prec, keep, got, want)
					}
					if maxChunkPairs == 1 && st.Chunks != nq {
						t.Fatalf("trial %d: %d chunks of one query for %d queries", trial, st.Chunks, nq)
					}
					if st.Chunks > 1 {
						chunked++
					}
				}
			}
		}
	}
	if chunked == 0 {
		t.Fatal("no problem was scored in chunks")
	}
}

// Chunks are only cut where no score can be non-finite: an overflowing
// pair fails the chunked problem exactly as the whole one, and the bound
// of scoresFinite holds for values up to it.
func TestClassChunksKeepErrors(t *testing.T) {
	defer func(c int) { maxChunkPairs = c }(maxChunkPairs)
	maxChunkPairs = 1
	r := rand.New(rand.NewPCG(5, 6))
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
			o := Options{Similarity: sim, Precision: prec, Threads: 2, QueryBatch: 3, GalleryBatch: 8}
			forceMaterialisedClasses = true
			_, want := Score(context.Background(), p, o)
			forceMaterialisedClasses = false
			var st Stats
			o.Stats = &st
			_, got := Score(context.Background(), p, o)
			if want == nil || got == nil || got.Error() != want.Error() || st.Chunks != 1 {
				t.Fatalf("sim %d prec %d: got %v (%d chunks), want %v", sim, prec, got, st.Chunks, want)
			}
		}
	}
	// Finite problems near the bound are chunked and match.
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
		o := Options{Similarity: c.sim, Precision: c.prec, Threads: 2, QueryBatch: 3, GalleryBatch: 8}
		want := scoreMaterialised(t, p, o)
		var st Stats
		o.Stats = &st
		got, err := Score(context.Background(), p, o)
		if err != nil || !reflect.DeepEqual(got, want) || st.Chunks != 12 {
			t.Fatalf("%v: %d chunks, err %v, equal %v", c, st.Chunks, err, reflect.DeepEqual(got, want))
		}
	}
}

// One class with leave-one-out: no query has a negative, every tile is
// skipped, and the ranks are 1..P in score order.
func TestOneClassLeaveOneOut(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n, d := 40, 5
	vals := make([]float64, n*d)
	for i := range vals {
		vals[i] = r.NormFloat64()
	}
	m, _ := matrix.NewDense64(n, d, vals)
	ids := make([]string, n)
	cls := make([]int32, n)
	ex := make([][]int, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
		ex[i] = []int{i}
	}
	p := Problem{Queries: m, Gallery: m, QueryIDs: ids, GalleryIDs: ids, Exclusions: ex, Classes: retrieval.NewClasses(cls, cls)}
	o := Options{Similarity: Cosine, QueryBatch: 7, GalleryBatch: 9}
	got, err := Score(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := scoreMaterialised(t, p, o); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got[0], want[0])
	}
	for q, res := range got {
		if res.HasNegative || len(res.Ranks) != n-1 {
			t.Fatalf("query %d: %d positives, has negative %v", q, len(res.Ranks), res.HasNegative)
		}
		seen := make([]bool, n)
		for _, rk := range res.Ranks {
			seen[rk] = true
		}
		for rk := 1; rk < n; rk++ {
			if !seen[rk] {
				t.Fatalf("query %d: rank %d missing from %v", q, rk, res.Ranks)
			}
		}
	}
}

// Failures match the explicit path: a non-finite positive score, a
// non-finite excluded score inside a tile that is skipped, and the §2.6
// error.
func TestClassesErrorsMatchMaterialised(t *testing.T) {
	big := 1e300
	// Rows 0 and 1 are huge: their dot product overflows.
	vals := []float64{big, big, 1, 0, 0, 1, 1, 1}
	m, _ := matrix.NewDense64(4, 2, vals)
	ids := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		name string
		cls  []int32
		ex   [][]int
	}{
		{"positive overflows", []int32{0, 0, 1, 1}, [][]int{{}, {}, {}, {}}},
		{"excluded pair overflows in a skipped tile", []int32{0, 0, 0, 0}, [][]int{{0, 1}, {0, 1}, {}, {}}},
		{"no eligible positive", []int32{0, 1, 2, 2}, [][]int{{0}, {}, {}, {}}},
	} {
		p := Problem{Queries: m, Gallery: m, QueryIDs: ids, GalleryIDs: ids, Exclusions: tc.ex, Classes: retrieval.NewClasses(tc.cls, tc.cls)}
		o := Options{Similarity: Dot, QueryBatch: 4, GalleryBatch: 4}
		_, err := Score(context.Background(), p, o)
		forceMaterialisedClasses = true
		_, werr := Score(context.Background(), p, o)
		forceMaterialisedClasses = false
		if err == nil || werr == nil || err.Error() != werr.Error() {
			t.Fatalf("%s: got %v, want %v", tc.name, err, werr)
		}
		if !strings.Contains(err.Error(), "non-finite") && !strings.Contains(err.Error(), "eligible positive") {
			t.Fatalf("%s: unexpected error %v", tc.name, err)
		}
	}
}

// The bucketed search finds the same slot as a linear scan of the tie rule,
// for thresholds with many exact ties, spread and clustered values, and
// candidates below, inside, between and above the thresholds.
func TestFirstPrecededEqualsLinearScan(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for trial := range 400 {
		n := 1 + r.IntN(300)
		type th struct {
			s float64
			g int32
		}
		ths := make([]th, n)
		for i := range ths {
			switch trial % 3 {
			case 0:
				ths[i].s = float64(r.IntN(7)) // ties
			case 1:
				ths[i].s = r.NormFloat64()
			default:
				ths[i].s = 0.5 + 1e-12*float64(r.IntN(50)) // clustered
			}
			ths[i].g = int32(r.IntN(1000))
		}
		slices.SortFunc(ths, func(a, b th) int {
			if a.s != b.s {
				if a.s > b.s {
					return -1
				}
				return 1
			}
			return int(a.g - b.g)
		})
		os, oi := make([]float64, n), make([]int32, n)
		for i, x := range ths {
			os[i], oi[i] = x.s, x.g
		}
		var b *slotBuckets
		if n >= 2 {
			b = newSlotBuckets(os)
		}
		for range 200 {
			v := os[r.IntN(n)] + []float64{0, 1e-13, -1e-13, 0.3, -0.3, 100}[r.IntN(6)]
			g := r.IntN(1000)
			if !precedes(v, g, os[n-1], int(oi[n-1])) {
				continue
			}
			want := 0
			for want < n && !precedes(v, g, os[want], int(oi[want])) {
				want++
			}
			for _, bb := range []*slotBuckets{nil, b} {
				if got := firstPreceded(os, oi, bb, v, g); got != want {
					t.Fatalf("trial %d: candidate (%v, %d): slot %d, want %d (buckets %v)", trial, v, g, got, want, bb != nil)
				}
			}
		}
	}
}

// Scoring reports its progress: done never decreases and ends at exactly
// n_q · n_g pairs, once, for dense, sparse and class problems, including
// class problems whose tiles are all skipped.
func TestProgressReportsEveryPair(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	dense := randomProblem(r, 13, 70, 4, false)
	cls := classProblem(r, 20, 50, 3, 1, true, true, false)
	sq, _ := randomSparseRows(r, 13, 30, 4)
	sg, _ := randomSparseRows(r, 70, 30, 4)
	sparse := dense
	sparse.Queries, sparse.Gallery = sq, sg
	for name, p := range map[string]Problem{"dense": dense, "classes": cls, "sparse": sparse, "classes-streamed": cls} {
		var calls []int64
		var total int64
		ctx := WithProgress(context.Background(), func(done, tot int64) {
			calls = append(calls, done)
			total = tot
		})
		o := Options{Similarity: Dot, QueryBatch: 4, GalleryBatch: 16, Threads: 2}
		if name == "classes-streamed" { // one class: the pooled streaming path
			o.SortedRanks, o.Pooled = true, &Pooled{}
		}
		if _, err := Score(ctx, p, o); err != nil {
			t.Fatal(err)
		}
		want := int64(p.Queries.Rows() * p.Gallery.Rows())
		if total != want || len(calls) == 0 || calls[len(calls)-1] != want {
			t.Fatalf("%s: reports %v of %d, want the last at %d", name, calls, total, want)
		}
		for i := 1; i < len(calls); i++ {
			if calls[i] <= calls[i-1] {
				t.Fatalf("%s: progress went from %d to %d", name, calls[i-1], calls[i])
			}
		}
	}
}

// Options.SortedRanks gives the materialised results with each query's
// ranks sorted ascending and no positive list, on the implicit path and on
// the materialised fallback alike; explicit problems are unaffected.
func TestClassesSortedRanks(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for trial := range 24 {
		nq, ng := 1+r.IntN(30), 6+r.IntN(60)
		nc := []int{1, 2, 10, 1000}[trial%4]
		p := classProblem(r, nq, ng, 1+r.IntN(7), nc, trial%3 == 0, trial%2 == 0, false)
		for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
			o := Options{Similarity: sim, QueryBatch: 1 + r.IntN(8), GalleryBatch: 1 + r.IntN(20), Threads: 1 + trial%2}
			want := scoreMaterialised(t, p, o)
			for q := range want {
				slices.Sort(want[q].Ranks)
				want[q].Positives = nil
			}
			o.SortedRanks = true
			got, err := Score(context.Background(), p, o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d (%d classes) sim %d:\n got %+v\nwant %+v", trial, nc, sim, got, want)
			}
			if fallback := scoreMaterialised(t, p, o); !reflect.DeepEqual(fallback, want) {
				t.Fatalf("trial %d: materialised fallback differs under SortedRanks", trial)
			}
			explicit := p
			explicit.Relevance, explicit.Classes = p.Classes.Materialise(), nil
			a, err := Score(context.Background(), explicit, o)
			if err != nil {
				t.Fatal(err)
			}
			o.SortedRanks = false
			b, _ := Score(context.Background(), explicit, o)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("trial %d: SortedRanks changed an explicit problem", trial)
			}
		}
	}
}

// Label problems with negatives stream their pooled summary chunk by
// chunk: results and summary equal the stored path's bit for bit, and the
// summary equals metrics.SummariseChunks over the materialised pairs'
// scores — with the median in the sampled window and (window cap shrunk)
// through the re-scoring passes; all queries at once and in chunks; few
// and many classes, exclusions, ties, every similarity and precision.
func TestClassPooledEqualsStored(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	defer func(c, w int) { maxChunkPairs, pooledWindowCap = c, w }(maxChunkPairs, pooledWindowCap)
	for trial := range 30 {
		maxChunkPairs = []int{1 << 22, 1, 1 + r.IntN(100)}[trial%3]
		pooledWindowCap = []int{1 << 21, 1, 5, 1 << 21, 40}[trial%5]
		nq, ng := 1+r.IntN(30), 6+r.IntN(60)
		nc := []int{2, 3, 10, 1000}[trial%4]
		ties := trial%7 == 3
		p := classProblem(r, nq, ng, 1+r.IntN(6), nc, trial%2 == 0, trial%3 == 0, ties)
		pooledCases(t, r, p, ties, trial, func(o Options, want []QueryResult, wsum metrics.Summary) {
			sim, prec := o.Similarity, o.Precision
			var st Stats
			o.Stats = &st
			got, gsum, err := scorePooled(t, p, o, false)
			if err != nil {
				t.Fatal(err)
			}
			if !st.PooledStreamed {
				t.Fatalf("trial %d: the pooled summary was not streamed", trial)
			}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gsum, wsum) {
				t.Fatalf("trial %d (%d classes, %d chunks) sim %d prec %d: streaming differs\n got %+v %v\nwant %+v %v",
					trial, nc, st.Chunks, sim, prec, got, gsum, want, wsum)
			}
			o.Stats, o.SortedRanks = nil, true
			var chunks [][]float64
			for _, res := range scoreMaterialised(t, p, o) {
				chunks = append(chunks, res.Scores)
			}
			if ms := metrics.SummariseChunks(chunks); !reflect.DeepEqual(ms, gsum) {
				t.Fatalf("trial %d: summary %v differs from the materialised pairs' %v", trial, gsum, ms)
			}
		})
	}
}
