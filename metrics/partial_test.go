package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestQueryWithMissingHandComputed(t *testing.T) {
	l3 := math.Log2(3)
	cases := []struct {
		name    string
		ranks   []int
		grades  []float64
		missing []float64
		ks      []int
		gain    Gain
		want    map[string]float64
	}{
		{
			// One positive at rank 2, one never retrieved: P = 2.
			name: "binary, one missing", ranks: []int{2}, grades: []float64{1}, missing: []float64{1}, ks: []int{1, 2, 5},
			want: map[string]float64{
				"mrr": 0.5, "map": (1.0 / 2) / 2,
				"precision@1": 0, "recall@1": 0, "hit_rate@1": 0, "ndcg@1": 0,
				"precision@2": 0.5, "recall@2": 0.5, "hit_rate@2": 1, "ndcg@2": (1 / l3) / (1 + 1/l3),
				"precision@5": 0.2, "recall@5": 0.5, "hit_rate@5": 1, "ndcg@5": (1 / l3) / (1 + 1/l3),
			},
		},
		{
			// Ranks 3 and 1 retrieved, two missing: P = 4.
			name: "two missing", ranks: []int{3, 1}, grades: []float64{1, 1}, missing: []float64{1, 1}, ks: []int{2, 10},
			want: map[string]float64{
				"mrr": 1, "map": (1.0/1 + 2.0/3) / 4,
				"precision@2": 0.5, "recall@2": 0.25, "hit_rate@2": 1, "ndcg@2": 1 / (1 + 1/l3),
				"precision@10": 0.2, "recall@10": 0.5, "hit_rate@10": 1,
				"ndcg@10": (1 + 1/math.Log2(4)) / (1 + 1/l3 + 1/math.Log2(4) + 1/math.Log2(5)),
			},
		},
		{
			// The missing positive has the highest grade: it sets the ideal.
			// Exponential gains 2^1−1 = 1 (retrieved) and 2^3−1 = 7 (missing).
			name: "graded exponential", ranks: []int{1}, grades: []float64{1}, missing: []float64{3}, ks: []int{1, 2},
			want: map[string]float64{
				"mrr": 1, "map": 0.5, "precision@1": 1, "recall@1": 0.5, "hit_rate@1": 1, "ndcg@1": 1.0 / 7,
				"precision@2": 0.5, "recall@2": 0.5, "hit_rate@2": 1, "ndcg@2": 1 / (7 + 1/l3),
			},
		},
		{
			name: "graded linear", ranks: []int{1}, grades: []float64{1}, missing: []float64{3}, ks: []int{1, 2}, gain: Linear,
			want: map[string]float64{"ndcg@1": 1.0 / 3, "ndcg@2": 1 / (3 + 1/l3)},
		},
		{
			name: "nothing retrieved", missing: []float64{2, 1}, ks: []int{1, 3},
			want: map[string]float64{
				"mrr": 0, "map": 0, "precision@1": 0, "recall@1": 0, "hit_rate@1": 0, "ndcg@1": 0,
				"precision@3": 0, "recall@3": 0, "hit_rate@3": 0, "ndcg@3": 0,
			},
		},
		{
			name: "no positive at all", ks: []int{1},
			want: map[string]float64{"mrr": 0, "map": 0, "precision@1": 0, "recall@1": 0, "hit_rate@1": 0, "ndcg@1": 0},
		},
		{
			// Huge grades stay finite: the missing 1024 dwarfs the retrieved 1.
			name: "huge missing grade", ranks: []int{1}, grades: []float64{1}, missing: []float64{1024}, ks: []int{1},
			want: map[string]float64{"ndcg@1": 0, "recall@1": 0.5},
		},
	}
	for _, c := range cases {
		got := QueryWithMissing(c.ranks, c.grades, c.missing, c.ks, c.gain)
		if len(got.Keys) != len(got.Vals) || len(got.Keys) != 2+4*len(c.ks) {
			t.Fatalf("%s: %d keys, %d values", c.name, len(got.Keys), len(got.Vals))
		}
		for k, w := range c.want {
			v, ok := got.Get(k)
			if !ok || !approx(v, w) {
				t.Errorf("%s: %s = %v, want %v", c.name, k, v, w)
			}
		}
		for i, v := range got.Vals {
			if math.IsNaN(v) || v < 0 || v > 1 {
				t.Errorf("%s: %s = %v out of [0, 1]", c.name, got.Keys[i], v)
			}
		}
	}
}

// randomQuery draws n positives with distinct ranks in [1, 40] and grades
// that are binary, small integers or extreme.
func randomQuery(r *rand.Rand, n int) ([]int, []float64) {
	perm := r.Perm(40)
	ranks := make([]int, n)
	grades := make([]float64, n)
	for i := range ranks {
		ranks[i] = perm[i] + 1
		switch r.IntN(3) {
		case 0:
			grades[i] = 1
		case 1:
			grades[i] = float64(1 + r.IntN(4))
		default:
			grades[i] = math.Ldexp(1+r.Float64(), r.IntN(2000)-1000)
		}
	}
	return ranks, grades
}

func TestQueryWithMissingNothingMissingIsQuery(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ks := []int{1, 3, 7, 50}
	for it := 0; it < 2000; it++ {
		ranks, grades := randomQuery(r, 1+r.IntN(10))
		gain := Gain(r.IntN(2))
		want := Query(ranks, grades, ks, gain)
		for _, missing := range [][]float64{nil, {}} {
			got := QueryWithMissing(ranks, grades, missing, ks, gain)
			for i := range want.Vals {
				if got.Keys[i] != want.Keys[i] || math.Float64bits(got.Vals[i]) != math.Float64bits(want.Vals[i]) {
					t.Fatalf("ranks %v grades %v: %s = %v, Query gives %v", ranks, grades, got.Keys[i], got.Vals[i], want.Vals[i])
				}
			}
		}
	}
}

// A missing positive behaves like one ranked below every cut-off, except in
// map, where a finite rank would still add a (tiny) term, and in mrr when
// nothing is retrieved.
func TestQueryWithMissingMatchesFarRanks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ks := []int{1, 2, 5, 40}
	const far = 1 << 40
	for it := 0; it < 2000; it++ {
		n := 1 + r.IntN(8)
		ranks, grades := randomQuery(r, n)
		cut := 1 + r.IntN(n) // the first cut positives are retrieved
		gain := Gain(r.IntN(2))
		got := QueryWithMissing(ranks[:cut], grades[:cut], grades[cut:], ks, gain)
		farRanks := append([]int(nil), ranks[:cut]...)
		for i := cut; i < n; i++ {
			farRanks = append(farRanks, far+i)
		}
		ref := Query(farRanks, grades, ks, gain)
		for i, k := range ref.Keys {
			if k == "map" {
				if math.Abs(got.Vals[i]-ref.Vals[i]) > 1e-9 || got.Vals[i] > ref.Vals[i] {
					t.Fatalf("map %v vs far-rank map %v", got.Vals[i], ref.Vals[i])
				}
				continue
			}
			if math.Float64bits(got.Vals[i]) != math.Float64bits(ref.Vals[i]) {
				t.Fatalf("ranks %v grades %v cut %d: %s = %v, far-rank Query gives %v", ranks, grades, cut, k, got.Vals[i], ref.Vals[i])
			}
		}
	}
}

// The uniform-grade fast path equals the general computation bit for bit.
func TestUniformGradesFastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for trial := range 200 {
		n := 1 + r.IntN(50)
		ranks := r.Perm(3 * n)[:n]
		for i := range ranks {
			ranks[i]++
			if trial%3 == 2 {
				ranks[i] *= 100 // sparse ranks: comparison sort
			}
		}
		grade := []float64{1, 2, 1e-300, 1e308, 0.5}[trial%5]
		grades := make([]float64, n)
		for i := range grades {
			grades[i] = grade
		}
		var missing []float64
		if trial%2 == 1 {
			missing = []float64{grade, grade}
		}
		ks := []int{1, 3, 10, 1000}
		for _, gain := range []Gain{Exponential, Linear} {
			p := n + len(missing)
			fast := computeUniform(Values{Keys: Keys(ks), Vals: make([]float64, 2+4*len(ks))}, ranks, grade, p, ks, gain)
			slow := computeGeneral(Values{Keys: Keys(ks), Vals: make([]float64, 2+4*len(ks))}, ranks, grades, missing, ks, gain)
			for i := range fast.Vals {
				if math.Float64bits(fast.Vals[i]) != math.Float64bits(slow.Vals[i]) {
					t.Fatalf("trial %d gain %d %s: fast %v, general %v", trial, gain, fast.Keys[i], fast.Vals[i], slow.Vals[i])
				}
			}
		}
	}
}
