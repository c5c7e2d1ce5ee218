package rank

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

func randomProblem(r *rand.Rand, nq, ng, d int, ties bool) Problem {
	q := make([]float64, nq*d)
	g := make([]float64, ng*d)
	for i := range q {
		q[i] = r.NormFloat64()
	}
	for i := range g {
		g[i] = r.NormFloat64()
		if ties {
			g[i] = float64(r.IntN(3) - 1) // many exact ties and zero rows
		}
	}
	if ties {
		for i := range q {
			q[i] = float64(r.IntN(3) - 1)
		}
	}
	qm, _ := matrix.NewDense64(nq, d, q)
	gm, _ := matrix.NewDense64(ng, d, g)
	p := Problem{Queries: qm, Gallery: gm, Relevance: make([][]retrieval.Positive, nq), Exclusions: make([][]int, nq)}
	for i := 0; i < nq; i++ {
		p.QueryIDs = append(p.QueryIDs, "q"+strconv.Itoa(i))
		perm := r.Perm(ng)
		npos := 1 + r.IntN(4)
		chosen := append([]int(nil), perm[:npos]...)
		sort.Ints(chosen)
		for _, j := range chosen {
			p.Relevance[i] = append(p.Relevance[i], retrieval.Positive{Index: j, Grade: float64(1 + r.IntN(3))})
		}
		if r.IntN(2) == 0 {
			ex := []int{perm[npos]}
			if r.IntN(3) == 0 { // sometimes exclude a positive too, keeping one
				ex = append(ex, chosen[0])
				if npos == 1 {
					ex = ex[:1]
				}
			}
			sort.Ints(ex)
			p.Exclusions[i] = ex
		}
	}
	for j := 0; j < ng; j++ {
		p.GalleryIDs = append(p.GalleryIDs, "g"+strconv.Itoa(j))
	}
	return p
}

// naive ranks by scoring every pair with the reference formula, sorting all
// eligible candidates with the tie rule, and reading ranks off positions.
func naive(p Problem, sim Similarity) []QueryResult {
	nq, ng, d := p.Queries.Rows(), p.Gallery.Rows(), p.Queries.Cols()
	qrow, grow := make([]float64, d), make([]float64, d)
	out := make([]QueryResult, nq)
	for i := 0; i < nq; i++ {
		p.Queries.RowFloat64(i, qrow)
		excluded := map[int]bool{}
		for _, g := range p.Exclusions[i] {
			excluded[g] = true
		}
		type cand struct {
			g int
			s float64
		}
		var cs []cand
		for j := 0; j < ng; j++ {
			if excluded[j] {
				continue
			}
			p.Gallery.RowFloat64(j, grow)
			var acc float64
			for k := 0; k < d; k++ {
				switch sim {
				case SquaredL2:
					t := qrow[k] - grow[k]
					acc = math.FMA(t, t, acc)
				default:
					acc = math.FMA(qrow[k], grow[k], acc)
				}
			}
			if sim == SquaredL2 {
				acc = -acc
			}
			cs = append(cs, cand{j, acc + 0})
		}
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].s > cs[b].s }) // stable: lower index first on ties
		pos := map[int]int{}
		for r, c := range cs {
			pos[c.g] = r + 1
		}
		res := &out[i]
		isPos := map[int]bool{}
		for _, x := range retrieval.EligiblePositives(p.Relevance[i], p.Exclusions[i]) {
			res.Positives = append(res.Positives, x)
			res.Ranks = append(res.Ranks, pos[x.Index])
			isPos[x.Index] = true
		}
		for _, c := range cs {
			if isPos[c.g] {
				res.Scores = append(res.Scores, 0) // filled below
				continue
			}
			if !res.HasNegative {
				res.NearestNegative, res.HasNegative = c.s, true
			}
		}
		res.Scores = res.Scores[:0]
		for _, x := range res.Positives {
			for _, c := range cs {
				if c.g == x.Index {
					res.Scores = append(res.Scores, c.s)
				}
			}
		}
		for _, c := range cs {
			res.Top = append(res.Top, Candidate{Index: c.g, Score: c.s})
		}
	}
	return out
}

func TestScoreMatchesSortEverything(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 30; trial++ {
		ties := trial%2 == 1
		p := randomProblem(r, 1+r.IntN(9), 5+r.IntN(40), 1+r.IntN(6), ties)
		for _, sim := range []Similarity{Dot, SquaredL2} {
			want := naive(p, sim)
			for _, blocks := range [][2]int{{1, 1}, {3, 7}, {128, 10000}} {
				got, err := Score(context.Background(), p, Options{Similarity: sim, QueryBatch: blocks[0], GalleryBatch: blocks[1], Threads: 1 + trial%3, FullRanking: true})
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if !reflect.DeepEqual(got[i].Ranks, want[i].Ranks) || !reflect.DeepEqual(got[i].Scores, want[i].Scores) ||
						got[i].HasNegative != want[i].HasNegative || got[i].NearestNegative != want[i].NearestNegative ||
						!reflect.DeepEqual(got[i].Top, want[i].Top) {
						t.Fatalf("trial %d sim %d blocks %v query %d:\n got %+v\nwant %+v", trial, sim, blocks, i, got[i], want[i])
					}
				}
				// Top-N is a prefix of the full ranking.
				top, err := Score(context.Background(), p, Options{Similarity: sim, QueryBatch: blocks[0], GalleryBatch: blocks[1], TopN: 3})
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					n := min(3, len(want[i].Top))
					if !reflect.DeepEqual(top[i].Top, want[i].Top[:n]) {
						t.Fatalf("top-3 of query %d: %v, want %v", i, top[i].Top, want[i].Top[:n])
					}
				}
			}
		}
	}
}

func TestPreconditionOrder(t *testing.T) {
	m := func(rows, cols int) *matrix.Dense {
		d, _ := matrix.NewDense64(rows, cols, make([]float64, rows*cols))
		return d
	}
	one := func(rows, cols int) *matrix.Dense {
		data := make([]float64, rows*cols)
		for i := range data {
			data[i] = 1
		}
		d, _ := matrix.NewDense64(rows, cols, data)
		return d
	}
	pos := [][]retrieval.Positive{{{Index: 0, Grade: 1}}}
	guard := int64(1)
	cases := []struct {
		name string
		p    Problem
		o    Options
		want string
	}{
		{"width", Problem{Queries: m(1, 2), Gallery: m(1, 3), QueryIDs: []string{"q"}, GalleryIDs: []string{"g"}, Relevance: pos}, Options{}, "Query and gallery embedding dimensions must match; got 2 and 3"},
		{"relevance entries", Problem{Queries: m(1, 2), Gallery: m(1, 2), QueryIDs: []string{"q"}, GalleryIDs: []string{"g"}}, Options{}, "Relevance must contain one entry for each query"},
		{"bad index", Problem{Queries: m(1, 2), Gallery: m(1, 2), QueryIDs: []string{"q"}, GalleryIDs: []string{"g"}, Relevance: [][]retrieval.Positive{{{Index: 5, Grade: 1}}}}, Options{}, "Relevance contains an invalid positive gallery index or grade"},
		{"bad grade", Problem{Queries: m(1, 2), Gallery: m(1, 2), QueryIDs: []string{"q"}, GalleryIDs: []string{"g"}, Relevance: [][]retrieval.Positive{{{Index: 0, Grade: math.Inf(1)}}}}, Options{}, "Relevance contains an invalid positive gallery index or grade"},
		{"bad exclusion", Problem{Queries: m(1, 2), Gallery: m(1, 2), QueryIDs: []string{"q"}, GalleryIDs: []string{"g"}, Relevance: pos, Exclusions: [][]int{{3}}}, Options{}, "Exclusions contain an invalid query or gallery index"},
		{"no eligible", Problem{Queries: m(1, 2), Gallery: m(1, 2), QueryIDs: []string{"q"}, GalleryIDs: []string{"g"}, Relevance: pos, Exclusions: [][]int{{0}}}, Options{}, `missing for ["q"]`},
		{"guard", Problem{Queries: one(1, 2), Gallery: one(2, 2), QueryIDs: []string{"q"}, GalleryIDs: []string{"g", "h"}, Relevance: pos}, Options{MaxPairwise: &guard}, "Exact retrieval would exceed max_pairwise_comparisons: 1 queries × 2 gallery = 2 > 1"},
		{"zero norm", Problem{Queries: m(1, 2), Gallery: m(1, 2), QueryIDs: []string{"q"}, GalleryIDs: []string{"g"}, Relevance: pos}, Options{Similarity: Cosine}, `Query embeddings contain 1 zero-norm row(s): index 0 (ID "q")`},
	}
	for _, c := range cases {
		c.o.QueryBatch, c.o.GalleryBatch = 4, 4
		_, err := Score(context.Background(), c.p, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestNonFiniteScoreAndFloat32Overflow(t *testing.T) {
	big, _ := matrix.NewDense64(1, 2, []float64{1e200, 1e200})
	p := Problem{Queries: big, Gallery: big, QueryIDs: []string{"q"}, GalleryIDs: []string{"g"}, Relevance: [][]retrieval.Positive{{{Index: 0, Grade: 1}}}}
	_, err := Score(context.Background(), p, Options{Similarity: Dot, QueryBatch: 1, GalleryBatch: 1})
	if err == nil || !strings.Contains(err.Error(), `non-finite similarity score for query "q" and gallery "g"`) {
		t.Errorf("got %v", err)
	}
	_, err = Score(context.Background(), p, Options{Similarity: Dot, Precision: Float32, QueryBatch: 1, GalleryBatch: 1})
	if err == nil || !strings.Contains(err.Error(), "cannot be represented in float32") || !strings.Contains(err.Error(), `row 0 (ID "q")`) {
		t.Errorf("got %v", err)
	}
	// Cosine normalises first, so huge rows are fine.
	if _, err := Score(context.Background(), p, Options{Similarity: Cosine, QueryBatch: 1, GalleryBatch: 1}); err != nil {
		t.Errorf("cosine on huge rows: %v", err)
	}
}

func TestCosineNormalisationFormula(t *testing.T) {
	// Hand-computed: [3, 4] → m = 4, y = [0.75, 1], acc = 1.5625, norm = 4·1.25 = 5.
	norm := func(x, y float64) []float64 {
		m, _ := matrix.NewDense64(1, 2, []float64{x, y})
		src, err := newSource(m, sliceNames([]string{"q"}), "Query", Cosine, Float64, 2, nil, allRows(m.Rows()))
		if err != nil {
			t.Fatal(err)
		}
		return src.block64(0, 1, make([]float64, 2))
	}
	if got := norm(3, 4); got[0] != 0.6 || got[1] != 0.8 {
		t.Errorf("normalised %v", got)
	}
	// Tiny and huge rows normalise without underflow or overflow.
	for _, s := range []float64{1e-320, 1e300} {
		got := norm(3*s, 4*s)
		if math.Abs(got[0]-0.6) > 1e-3 || math.Abs(got[1]-0.8) > 1e-3 {
			t.Errorf("scale %g: %v", s, got)
		}
	}
}

func BenchmarkScore(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	p := randomProblem(r, 256, 8192, 256, false)
	for b.Loop() {
		if _, err := Score(context.Background(), p, Options{Similarity: Cosine, QueryBatch: 128, GalleryBatch: 4096}); err != nil {
			b.Fatal(err)
		}
	}
}
