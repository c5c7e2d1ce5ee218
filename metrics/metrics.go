// Package metrics turns the ranks of a query's positives into the per-query
// metrics of SPEC §4.4–§4.5 and aggregates them (SPEC §4.6–§4.7).
package metrics

import (
	"math"
	"sort"
	"strconv"
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
	if len(rows) == 0 {
		return Values{}
	}
	out := Values{Keys: rows[0].Keys, Vals: make([]float64, len(rows[0].Vals))}
	for _, r := range rows {
		for i, v := range r.Vals {
			out.Vals[i] += v
		}
	}
	for i := range out.Vals {
		out.Vals[i] /= float64(len(rows))
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
	if len(values) == 0 {
		return Summary{}
	}
	var sum float64
	for _, v := range values {
		sum += v
	}
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	mean := sum / float64(n)
	lo, hi := s[0], s[n-1]
	return Summary{Mean: &mean, Median: &med, Min: &lo, Max: &hi}
}
