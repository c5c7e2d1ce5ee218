package metrics

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// SummariseChunks equals SummariseInPlace of the concatenation bit for bit:
// odd and even counts, heavy ties, both signs, zeros, one value, values
// sharing long key prefixes, and chunk splits with empty chunks.
func TestSummariseChunksEqualsInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	gens := []func() float64{
		func() float64 { return r.NormFloat64() },
		func() float64 { return float64(r.IntN(7)-3) / 4 },             // ties, zeros
		func() float64 { return 0.5 + float64(r.IntN(1<<20))*0x1p-60 }, // one 2^-40 wide cluster
		func() float64 { return math.Ldexp(r.Float64()-0.5, r.IntN(200)-100) },
		func() float64 { return 0.25 },
	}
	for trial := range 300 {
		gen := gens[trial%len(gens)]
		n := 1 + r.IntN(20000)
		if trial%7 == 0 {
			n = 1 + r.IntN(4)
		}
		all := make([]float64, n)
		for i := range all {
			all[i] = gen()
		}
		var chunks [][]float64
		for i := 0; i < n; {
			j := min(n, i+r.IntN(3000))
			chunks = append(chunks, all[i:j])
			i = j
		}
		want := SummariseInPlace(slices.Clone(all))
		got := SummariseChunks(chunks)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d n=%d: got %v %v %v %v, want %v %v %v %v", trial, n,
				*got.Mean, *got.Median, *got.Min, *got.Max, *want.Mean, *want.Median, *want.Min, *want.Max)
		}
	}
	if s := SummariseChunks([][]float64{nil, {}}); s.Mean != nil || s.Median != nil {
		t.Fatal("no values: want an empty summary")
	}
}

// Hand-computed: the median of {3, 1, 2, 10} is (2+3)/2.
func TestSummariseChunksHandValues(t *testing.T) {
	s := SummariseChunks([][]float64{{3, 1}, {}, {2, 10}})
	if *s.Mean != 4 || *s.Median != 2.5 || *s.Min != 1 || *s.Max != 10 {
		t.Fatalf("got %v %v %v %v", *s.Mean, *s.Median, *s.Min, *s.Max)
	}
}

// QueryUniformSorted equals Query with every grade equal.
func TestQueryUniformSortedEqualsQuery(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		p := 1 + r.IntN(50)
		ranks := r.Perm(p + r.IntN(100))[:p]
		for i := range ranks {
			ranks[i]++
		}
		grade := []float64{1, 2, 0.5, 1e300}[trial%4]
		grades := make([]float64, p)
		for i := range grades {
			grades[i] = grade
		}
		ks := []int{1, 3, 10, 1000}
		for _, gain := range []Gain{Exponential, Linear} {
			want := Query(ranks, grades, ks, gain)
			sorted := slices.Clone(ranks)
			slices.Sort(sorted)
			if got := QueryUniformSorted(sorted, grade, ks, gain); !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d: got %v want %v", trial, got, want)
			}
		}
	}
}
