package metrics

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestQueryHandComputed(t *testing.T) {
	cases := []struct {
		name   string
		ranks  []int
		grades []float64
		ks     []int
		gain   Gain
		want   map[string]float64
	}{
		{
			// Positives at ranks 2 and 4 of the full ranking.
			name: "binary", ranks: []int{4, 2}, grades: []float64{1, 1}, ks: []int{1, 3, 10},
			want: map[string]float64{
				"mrr": 0.5, "map": (1.0/2 + 2.0/4) / 2,
				"precision@1": 0, "recall@1": 0, "hit_rate@1": 0, "ndcg@1": 0,
				"precision@3": 1.0 / 3, "recall@3": 0.5, "hit_rate@3": 1,
				"ndcg@3":       (1 / math.Log2(3)) / (1 + 1/math.Log2(3)),
				"precision@10": 0.2, "recall@10": 1, "hit_rate@10": 1,
				"ndcg@10": (1/math.Log2(3) + 1/math.Log2(5)) / (1 + 1/math.Log2(3)),
			},
		},
		{
			// Grades 3 (rank 2) and 1 (rank 1); exponential gains 7 and 1.
			name: "graded exponential", ranks: []int{2, 1}, grades: []float64{3, 1}, ks: []int{2},
			want: map[string]float64{"ndcg@2": (1 + 7/math.Log2(3)) / (7 + 1/math.Log2(3)), "map": 1, "mrr": 1},
		},
		{
			name: "graded linear", ranks: []int{2, 1}, grades: []float64{3, 1}, ks: []int{2}, gain: Linear,
			want: map[string]float64{"ndcg@2": (1 + 3/math.Log2(3)) / (3 + 1/math.Log2(3))},
		},
		{
			// Binary grades: both gains agree.
			name: "binary linear", ranks: []int{4, 2}, grades: []float64{1, 1}, ks: []int{3}, gain: Linear,
			want: map[string]float64{"ndcg@3": (1 / math.Log2(3)) / (1 + 1/math.Log2(3))},
		},
	}
	for _, c := range cases {
		got := Query(c.ranks, c.grades, c.ks, c.gain)
		for k, w := range c.want {
			v, ok := got.Get(k)
			if !ok || !approx(v, w) {
				t.Errorf("%s: %s = %v, want %v", c.name, k, v, w)
			}
		}
	}
}

func TestExtremeGradesStayFinite(t *testing.T) {
	for _, grades := range [][]float64{{1e-300, 2e-300}, {5e307, 1e308}, {1e308, 1e-300}, {1024, 1023}, {2000, 1}} {
		for _, gain := range []Gain{Exponential, Linear} {
			v := Query([]int{1, 2}, grades, []int{1, 2}, gain)
			for i, x := range v.Vals {
				if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > 1 {
					t.Errorf("grades %v gain %v: %s = %v", grades, gain, v.Keys[i], x)
				}
			}
		}
	}
	// The three branches of L(g) agree with the direct formula where it is exact.
	for _, g := range []float64{1e-5, 1e-4 / math.Ln2, 0.5, 1, 3, 10, 50 / math.Ln2, 80} {
		direct := math.Log(math.Pow(2, g) - 1)
		if math.Abs(logExpGain(g)-direct) > 1e-9*math.Max(1, math.Abs(direct)) {
			t.Errorf("L(%v) = %v, direct %v", g, logExpGain(g), direct)
		}
	}
}

func TestKeysOrder(t *testing.T) {
	got := Keys([]int{5, 1})
	want := []string{"mrr", "map", "precision@5", "recall@5", "hit_rate@5", "ndcg@5", "precision@1", "recall@1", "hit_rate@1", "ndcg@1"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v", got)
		}
	}
}

func TestSummarise(t *testing.T) {
	s := Summarise([]float64{3, 1, 2, 10})
	if *s.Mean != 4 || *s.Median != 2.5 || *s.Min != 1 || *s.Max != 10 {
		t.Errorf("%v %v %v %v", *s.Mean, *s.Median, *s.Min, *s.Max)
	}
	s = Summarise([]float64{5, -1, 2})
	if *s.Median != 2 {
		t.Errorf("odd median %v", *s.Median)
	}
	if e := Summarise(nil); e.Mean != nil || e.Median != nil || e.Min != nil || e.Max != nil {
		t.Error("empty summary must be all null")
	}
}

func TestMean(t *testing.T) {
	rows := []Values{{Keys: []string{"a"}, Vals: []float64{1}}, {Keys: []string{"a"}, Vals: []float64{0}}, {Keys: []string{"a"}, Vals: []float64{0.5}}}
	if m := Mean(rows); m.Vals[0] != 0.5 {
		t.Errorf("mean %v", m.Vals)
	}
}

// The selection-based median equals the sort-based definition (SPEC §4.7)
// bit for bit, for odd and even counts, duplicates and sorted inputs.
func TestSummariseMatchesSortedDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		n := 1 + r.IntN(200)
		v := make([]float64, n)
		for i := range v {
			switch trial % 3 {
			case 0:
				v[i] = r.NormFloat64()
			case 1:
				v[i] = float64(r.IntN(4)) // many duplicates
			default:
				v[i] = float64(i) // already sorted
			}
		}
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		med := s[n/2]
		if n%2 == 0 {
			med = (s[n/2-1] + s[n/2]) / 2
		}
		var sum float64
		for _, x := range v {
			sum += x
		}
		got := Summarise(v)
		if *got.Median != med || *got.Min != s[0] || *got.Max != s[n-1] || *got.Mean != sum/float64(n) {
			t.Fatalf("trial %d: got %v %v %v %v, want median %v min %v max %v", trial, *got.Mean, *got.Median, *got.Min, *got.Max, med, s[0], s[n-1])
		}
	}
}
