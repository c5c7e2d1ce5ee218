package metrics

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
)

// Gain selects the NDCG gain function.
type Gain int

// Gains of SPEC §3.1.
const (
	Exponential Gain = iota // 2^g − 1
	Linear                  // g
)

// Values is an ordered list of metric values (canonical key order).
type Values struct {
	Keys []string
	Vals []float64
}

// Get returns the value of key (ok=false when absent).
func (v Values) Get(key string) (float64, bool) {
	for i, k := range v.Keys {
		if k == key {
			return v.Vals[i], true
		}
	}
	return 0, false
}

// Keys returns the canonical metric keys for ks (SPEC §4.4).
func Keys(ks []int) []string {
	keys := []string{"mrr", "map"}
	for _, k := range ks {
		s := strconv.Itoa(k)
		keys = append(keys, "precision@"+s, "recall@"+s, "hit_rate@"+s, "ndcg@"+s)
	}
	return keys
}

// sharedKeys is Keys(ks) as one read-only slice shared by every query of a
// run (capacity = length, so an append copies): a run's rows would
// otherwise each hold their own copy of the same keys, hundreds of bytes
// per query.
func sharedKeys(ks []int) []string {
	if c := lastKeys.Load(); c != nil && slices.Equal(c.ks, ks) {
		return c.keys
	}
	k := Keys(ks)
	k = k[:len(k):len(k)]
	lastKeys.Store(&keysOf{ks: slices.Clone(ks), keys: k})
	return k
}

// lastKeys caches the keys of the last ks seen (runs use one ks).
var lastKeys atomic.Pointer[keysOf]

type keysOf struct {
	ks   []int
	keys []string
}

// Query computes one query's metrics. ranks[i] and grades[i] belong to the
// same eligible positive (any order); len(ranks) = P ≥ 1.
func Query(ranks []int, grades []float64, ks []int, gain Gain) Values {
	return compute(ranks, grades, nil, ks, gain)
}

// gainRatios returns gain(g)/gain(g_max) for every grade, evaluated so that
// grades from 1e-300 to 1e308 stay finite (SPEC §4.5).
func gainRatios(grades []float64, gain Gain) []float64 {
	gmax := 0.0
	for _, g := range grades {
		gmax = math.Max(gmax, g)
	}
	out := make([]float64, len(grades))
	if gmax == 0 {
		return out
	}
	if gain == Linear {
		for i, g := range grades {
			out[i] = g / gmax
		}
		return out
	}
	lmax := logExpGain(gmax)
	for i, g := range grades {
		out[i] = math.Exp(logExpGain(g) - lmax)
	}
	return out
}

// logExpGain is L(g) = ln(2^g − 1), evaluated as SPEC §4.5 prescribes.
func logExpGain(g float64) float64 {
	x := g * math.Ln2
	switch {
	case x < 1e-4:
		return math.Log(g) + math.Log(math.Ln2) + math.Log1p(x/2+x*x/6)
	case x > 50:
		return x + math.Log1p(-math.Exp(-x))
	default:
		return math.Log(math.Expm1(x))
	}
}

// Mean averages per-query values key by key, summing in query order.
func Mean(rows []Values) Values {
	return MeanOf(len(rows), func(i int) Values { return rows[i] })
}

// MeanOf is Mean of the n rows row(0), …, row(n−1), summed in that order
// (rows held in another form need not be copied into a []Values).
func MeanOf(n int, row func(i int) Values) Values {
	if n == 0 {
		return Values{}
	}
	first := row(0)
	out := Values{Keys: first.Keys, Vals: make([]float64, len(first.Vals))}
	for r := range n {
		for i, v := range row(r).Vals {
			out.Vals[i] += v
		}
	}
	for i := range out.Vals {
		out.Vals[i] /= float64(n)
	}
	return out
}

// Summary is {mean, median, min, max}; nil fields mean "no values".
type Summary struct {
	Mean   *float64 `json:"mean"`
	Median *float64 `json:"median"`
	Min    *float64 `json:"min"`
	Max    *float64 `json:"max"`
}

// Summarise computes a Summary (mean as ordered sum / count; median the
// middle value or the mean of the two middle values).
func Summarise(values []float64) Summary {
	return SummariseInPlace(append([]float64(nil), values...))
}

// SummariseInPlace is Summarise reordering values instead of copying them
// (millions of pooled positive scores under label-derived relevance). The
// median comes from a selection, O(n) instead of a sort; it selects the
// same order statistics, so the result is Summarise's bit for bit.
func SummariseInPlace(values []float64) Summary {
	if len(values) == 0 {
		return Summary{}
	}
	var sum float64
	lo, hi := values[0], values[0]
	for _, v := range values {
		sum += v
		lo, hi = min(lo, v), max(hi, v)
	}
	n := len(values)
	med := SelectKth(values, n/2)
	if n%2 == 0 {
		below := values[0]
		for _, v := range values[:n/2] { // after selection: the n/2 smallest
			below = max(below, v)
		}
		med = (below + med) / 2
	}
	mean := sum / float64(n)
	return Summary{Mean: &mean, Median: &med, Min: &lo, Max: &hi}
}

// SelectKth reorders s so that s[k] is its k-th smallest value (0-based)
// and s[:k] ≤ s[k] ≤ s[k+1:]: a Hoare quickselect with median-of-three
// pivots that sorts what is left after 64 rounds, so inputs that defeat the
// pivots cost O(n log n). Values are totally ordered (no NaN).
func SelectKth[T cmp.Ordered](s []T, k int) T {
	lo, hi := 0, len(s)-1
	for round := 0; lo < hi; round++ {
		if round == 64 {
			slices.Sort(s[lo : hi+1])
			break
		}
		mid := int(uint(lo+hi) >> 1)
		a, b, c := s[lo], s[mid], s[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		i, j := lo, hi
		for i <= j {
			for s[i] < pivot {
				i++
			}
			for s[j] > pivot {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		// s[lo..j] ≤ pivot, s[i..hi] ≥ pivot, s(j..i) = pivot.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return s[k]
		}
	}
	return s[k]
}
