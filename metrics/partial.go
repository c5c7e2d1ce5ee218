package metrics

import (
	"math"
	"slices"
	"sort"
)

// QueryWithMissing computes one query's metrics when some of its positives
// were never retrieved, as for a TREC run that does not list every judged
// document (SPEC §6.7). ranks[i] and grades[i] belong to the same retrieved
// positive (any order; ranks distinct and ≥ 1, as for Query); missingGrades
// are the grades of the positives that have no rank.
//
// A missing positive adds nothing to any hit-based sum (mrr, the map
// numerator, precision, the recall numerator, hit rate, DCG) but counts in
// P = len(ranks) + len(missingGrades), the map and recall denominator, and
// in the ideal DCG, whose grade scale (g_max, SPEC §4.5) includes it.
//
// With nothing missing the result is Query's, bit for bit. With no retrieved
// positive (or no positive at all) every metric is 0.
func QueryWithMissing(ranks []int, grades, missingGrades []float64, ks []int, gain Gain) Values {
	if len(ranks) != len(grades) {
		panic("metrics: QueryWithMissing: ranks and grades differ in length")
	}
	if len(ranks) == 0 {
		return Values{Keys: sharedKeys(ks), Vals: make([]float64, 2+4*len(ks))} // nothing retrieved
	}
	return compute(ranks, grades, missingGrades, ks, gain)
}

// compute is the one implementation of the per-query metrics: Query is the
// case without missing positives, so both agree bit for bit.
func compute(ranks []int, grades, missingGrades []float64, ks []int, gain Gain) Values {
	out := Values{Keys: sharedKeys(ks), Vals: make([]float64, 2+4*len(ks))}
	n := len(ranks)
	p := n + len(missingGrades)
	if n > 0 && uniformGrades(grades, missingGrades) {
		return computeUniform(out, ranks, grades[0], p, ks, gain)
	}
	return computeGeneral(out, ranks, grades, missingGrades, ks, gain)
}

func computeGeneral(out Values, ranks []int, grades, missingGrades []float64, ks []int, gain Gain) Values {
	n := len(ranks)
	p := n + len(missingGrades)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ranks[idx[a]] < ranks[idx[b]] })
	sorted := make([]int, n)
	for i, k := range idx {
		sorted[i] = ranks[k]
	}
	out.Vals[0] = 1 / float64(sorted[0])
	var ap float64
	for i, r := range sorted {
		ap += float64(i+1) / float64(r)
	}
	out.Vals[1] = ap / float64(p)
	// Ratios over every positive: the first n belong to the retrieved ones.
	all := make([]float64, 0, p)
	all = append(append(all, grades...), missingGrades...)
	ratios := gainRatios(all, gain)
	ideal := append([]float64(nil), ratios...)
	sort.Sort(sort.Reverse(sort.Float64Slice(ideal)))
	for ki, k := range ks {
		found := sort.SearchInts(sorted, k+1) // #{r ≤ k}
		hit := 0.0
		if found > 0 {
			hit = 1
		}
		var dcg, idcg float64
		for _, i := range idx { // ascending rank order
			if ranks[i] > k {
				break
			}
			dcg += ratios[i] / math.Log2(float64(ranks[i])+1)
		}
		for j := 0; j < k && j < p; j++ {
			idcg += ideal[j] / math.Log2(float64(j+2))
		}
		ndcg := 0.0
		if idcg != 0 {
			ndcg = math.Min(1, math.Max(0, dcg/idcg))
		}
		v := out.Vals[2+4*ki : 6+4*ki]
		v[0], v[1], v[2], v[3] = float64(found)/float64(k), float64(found)/float64(p), hit, ndcg
	}
	return out
}

func uniformGrades(grades, missing []float64) bool {
	for _, g := range grades {
		if g != grades[0] {
			return false
		}
	}
	for _, g := range missing {
		if g != grades[0] {
			return false
		}
	}
	return true
}

// computeUniform is compute when every grade is the same (label-derived
// relevance: thousands of positives per query). Every gain ratio is then
// the one ratio of that grade, so the rank order of the positives needs no
// permutation: a plain sort of the ranks gives the same sums in the same
// order, bit for bit.
func computeUniform(out Values, ranks []int, grade float64, p int, ks []int, gain Gain) Values {
	return computeUniformSorted(out, sortRanks(ranks), grade, p, ks, gain)
}

// computeUniformSorted is computeUniform with the ranks already ascending.
func computeUniformSorted(out Values, sorted []int, grade float64, p int, ks []int, gain Gain) Values {
	out.Vals[0] = 1 / float64(sorted[0])
	var ap float64
	for i, r := range sorted {
		ap += float64(i+1) / float64(r)
	}
	out.Vals[1] = ap / float64(p)
	ratio := gainRatios([]float64{grade}, gain)[0]
	for ki, k := range ks {
		found := sort.SearchInts(sorted, k+1) // #{r ≤ k}
		hit := 0.0
		if found > 0 {
			hit = 1
		}
		var dcg, idcg float64
		for _, r := range sorted[:found] { // ascending rank order
			dcg += ratio / math.Log2(float64(r)+1)
		}
		for j := 0; j < k && j < p; j++ {
			idcg += ratio / math.Log2(float64(j+2))
		}
		ndcg := 0.0
		if idcg != 0 {
			ndcg = math.Min(1, math.Max(0, dcg/idcg))
		}
		v := out.Vals[2+4*ki : 6+4*ki]
		v[0], v[1], v[2], v[3] = float64(found)/float64(k), float64(found)/float64(p), hit, ndcg
	}
	return out
}

// sortRanks returns ranks in ascending order. Ranks are ≥ 1; when they are
// dense (the largest is at most a few times their count, as when thousands
// of positives rank at the top) a counting sort replaces the comparison
// sort.
func sortRanks(ranks []int) []int {
	hi := 0
	for _, r := range ranks {
		if r < 1 {
			hi = -1
			break
		}
		hi = max(hi, r)
	}
	if hi < 0 || hi > 8*len(ranks) {
		s := slices.Clone(ranks)
		slices.Sort(s)
		return s
	}
	count := make([]int32, hi+1)
	for _, r := range ranks {
		count[r]++
	}
	s := make([]int, 0, len(ranks))
	for r, c := range count {
		for ; c > 0; c-- {
			s = append(s, r)
		}
	}
	return s
}
