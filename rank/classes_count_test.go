package rank

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// The bucketed counting of consumeClassesBucketed gives exactly the results
// of the explicit pairs and of the general consumeClasses path: classes
// large enough for bucket tables (P ≥ 32), without exclusions, with a few
// (rows holding one take the general path) and with leave-one-out, with
// ties, for every similarity and precision and several block shapes.
func TestBucketedClassesEqualMaterialised(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for trial := range 12 {
		nq, ng := 20+r.IntN(30), 800+r.IntN(1500)
		nc := []int{2, 3, 10, 20}[trial%4]
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
				o := Options{Similarity: sim, Precision: prec, QueryBatch: 1 + r.IntN(64), GalleryBatch: 16 + r.IntN(700),
					Threads: 1 + trial%2, SortedRanks: trial%4 == 3}
				want := scoreMaterialised(t, p, o)
				noBucketedRows = true
				general, err := Score(context.Background(), p, o)
				noBucketedRows = false
				if err != nil {
					t.Fatal(err)
				}
				got, err := Score(context.Background(), p, o)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(general, want) {
					t.Fatalf("trial %d (%d classes, ties %v) sim %d prec %d: bucketed %v, general %v equal to the materialised pairs",
						trial, nc, ties, sim, prec, reflect.DeepEqual(got, want), reflect.DeepEqual(general, want))
				}
			}
		}
	}
}

// A non-finite negative fails the bucketed path exactly as the general one.
func TestBucketedClassesNonFinite(t *testing.T) {
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
	gm, _ := matrix.NewDense64(900, 4, g)
	p.Gallery = gm
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
	o := Options{Similarity: Dot, Precision: Float64, Threads: 1, QueryBatch: 7, GalleryBatch: 100}
	forceMaterialisedClasses = true
	_, want := Score(context.Background(), p, o)
	forceMaterialisedClasses = false
	_, got := Score(context.Background(), p, o)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// BenchmarkClassesDemoShape is the demo's label run shape: 1,000 queries ×
// 5,000 gallery rows in 10 interleaved classes, narrow rows (the counting
// dominates), float64 cosine.
func BenchmarkClassesDemoShape(b *testing.B) {
	for _, bucketed := range []bool{false, true} {
		b.Run(fmt.Sprintf("bucketed=%v", bucketed), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			const nq, ng, d = 1000, 5000, 16
			p := classProblem(r, nq, ng, d, 10, false, false, false)
			p.Exclusions = nil
			// Class-clustered rows, as real embeddings: a query's
			// positives score mostly above its negatives.
			centers := make([]float64, 10*d)
			for i := range centers {
				centers[i] = r.NormFloat64()
			}
			rows := func(n int, cls []int32) matrix.Matrix {
				x := make([]float64, n*d)
				for i := range x {
					x[i] = centers[int(cls[i/d])*d+i%d] + 1.2*r.NormFloat64()
				}
				m, _ := matrix.NewDense64(n, d, x)
				return m
			}
			p.Queries, p.Gallery = rows(nq, p.Classes.Query), rows(ng, p.Classes.Gallery)
			noBucketedRows = !bucketed
			defer func() { noBucketedRows = false }()
			b.ResetTimer()
			for range b.N {
				if _, err := Score(context.Background(), p, Options{Similarity: Cosine, Precision: Float64, Threads: 1, QueryBatch: 128, GalleryBatch: 10000}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// rankOrder equals sorting by (score descending, position ascending), for
// exact ties, scores closer than a float32 rounding (long runs of equal
// coarse keys), both signs, zeros and exclusions.
func TestRankOrderEqualsSort(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	rs := new(radixSorter)
	for trial := range 300 {
		n := 1 + r.IntN(400)
		sc := make([]float64, n)
		for i := range sc {
			switch trial % 4 {
			case 0:
				sc[i] = r.NormFloat64()
			case 1:
				sc[i] = float64(r.IntN(5)-2) / 4 // exact ties, zeros
			case 2:
				sc[i] = 0.5 + 1e-12*float64(r.IntN(1000)) // one float32 rounding
			default:
				sc[i] = (r.Float64() - 0.5) * 1e-39 // float32 subnormals and ±0 roundings
			}
			sc[i] += 0
		}
		var ex []bool
		if trial%3 == 0 {
			ex = make([]bool, n)
			for i := range ex {
				ex[i] = r.IntN(4) == 0
			}
		}
		var want []int32
		for i := range sc {
			if ex == nil || !ex[i] {
				want = append(want, int32(i))
			}
		}
		slices.SortStableFunc(want, func(a, b int32) int {
			switch {
			case sc[a] > sc[b]:
				return -1
			case sc[a] < sc[b]:
				return 1
			}
			return 0
		})
		got := rs.rankOrder(sc, ex)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("trial %d: order %v, want %v", trial, got, want)
		}
	}
}
