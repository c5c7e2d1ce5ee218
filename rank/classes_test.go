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
	defer func(b int) { maxLocalCounterBytes = b }(maxLocalCounterBytes)
	for trial := range 40 {
		// Per-worker counters, and (odd trials) the shared atomic ones.
		maxLocalCounterBytes = []int{64 << 20, 0}[trial%2]
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
					got, err := Score(context.Background(), p, o)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("trial %d (%d classes) sim %d prec %d keep %d:\n got %+v\nwant %+v", trial, nc, sim, prec, keep, got, want)
					}
				}
			}
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
