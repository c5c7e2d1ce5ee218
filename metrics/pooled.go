package metrics

import (
	"math"
	"slices"
	"sync"
)

// QueryUniformSorted is Query for a query whose positives all have the same
// grade, given their ranks already in ascending order (label-derived
// relevance, SPEC §2.7: the scorer produces the ranks in rank order, so
// thousands of positives per query need neither a grade list nor a sort).
// The result is Query's bit for bit: Query takes the same uniform-grade
// path and sorts the ranks first.
func QueryUniformSorted(sorted []int, grade float64, ks []int, gain Gain) Values {
	out := Values{Keys: sharedKeys(ks), Vals: make([]float64, 2+4*len(ks))}
	return computeUniformSorted(out, sorted, grade, len(sorted), ks, gain)
}

// SummariseChunks is SummariseInPlace of the concatenation of chunks, bit
// for bit, without concatenating them (pooled positive scores of label
// runs: tens of millions of values held per query) and without reordering
// them. The mean is the same ordered sum; the median's order statistics
// come from a radix selection over order-preserving keys, which finds the
// same values a quickselect does. Values are finite.
func SummariseChunks(chunks [][]float64) Summary {
	// The ordered sum is one dependency chain; the extremes and the count
	// of the keys' top 16 bits (the selection's first pass) are taken on
	// two other goroutines meanwhile.
	n := 0
	var sum float64
	const workers = 2
	type part struct {
		lo, hi float64
		n      int
		top    []int
	}
	parts := make([]part, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := part{top: make([]int, 1<<digitBits)}
			for ci := w; ci < len(chunks); ci += workers {
				for _, v := range chunks[ci] {
					if p.n == 0 {
						p.lo, p.hi = v, v
					}
					p.n++
					p.lo, p.hi = min(p.lo, v), max(p.hi, v)
					p.top[OrderKey(v)>>(64-digitBits)]++
				}
			}
			parts[w] = p
		}()
	}
	for _, c := range chunks {
		for _, v := range c {
			sum += v
		}
		n += len(c)
	}
	wg.Wait()
	if n == 0 {
		return Summary{}
	}
	// min and max do not depend on the order they are taken in (Go's min
	// and max put −0 below +0).
	var lo, hi float64
	top := parts[0].top
	first := true
	for _, p := range parts {
		if p.n == 0 {
			continue
		}
		if first {
			lo, hi, first = p.lo, p.hi, false
		}
		lo, hi = min(lo, p.lo), max(hi, p.hi)
	}
	for _, p := range parts[1:] {
		for d, c := range p.top {
			top[d] += c
		}
	}
	var med float64
	if n%2 == 0 {
		v := selectChunks(chunks, []int{n/2 - 1, n / 2}, top)
		med = (v[0] + v[1]) / 2
	} else {
		med = selectChunks(chunks, []int{n / 2}, top)[0]
	}
	mean := sum / float64(n)
	return Summary{Mean: &mean, Median: &med, Min: &lo, Max: &hi}
}

const digitBits = 16

// OrderKey maps a finite float64 to a uint64 whose unsigned order is the
// numeric order; −0 and +0 (equal numbers) share +0's key. Radix
// selections over scores (here and in package rank) work on these keys.
func OrderKey(v float64) uint64 {
	b := math.Float64bits(v + 0)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// KeyValue inverts OrderKey.
func KeyValue(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// selectTarget is one order statistic being selected: the values whose key
// starts with prefix (fixed bits long) hold it as their rank-th smallest.
type selectTarget struct {
	rank   int
	prefix uint64
	fixed  uint
	count  int // values with the prefix
}

// selectChunks returns the ks-th smallest (0-based) pooled values, given
// the histogram of the keys' top 16 bits. Each further pass fixes the next
// 16 bits of every target's key (one scan serves targets that share a
// prefix, as the two middle values nearly always do; scans are split over
// two goroutines); once few values remain with a target's prefix they are
// collected and sorted.
func selectChunks(chunks [][]float64, ks []int, top []int) []float64 {
	ts := make([]selectTarget, len(ks))
	for i, k := range ks {
		d := 0
		for ; k >= top[d]; d++ {
			k -= top[d]
		}
		ts[i] = selectTarget{rank: k, prefix: uint64(d), fixed: digitBits, count: top[d]}
	}
	const few = 1 << 12
	for {
		// Distinct prefixes still too crowded.
		var open []int
		for i, t := range ts {
			if t.fixed < 64 && t.count > few && (len(open) == 0 || ts[open[0]].prefix != t.prefix || ts[open[0]].fixed != t.fixed) {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			break
		}
		hists := scanChunks(chunks, func(h [][]int, key uint64) {
			for j, i := range open {
				t := &ts[i]
				if key>>(64-t.fixed) == t.prefix {
					w := min(digitBits, 64-t.fixed)
					h[j][(key>>(64-t.fixed-w))&(1<<w-1)]++
				}
			}
		}, len(open))
		for i := range ts {
			t := &ts[i]
			j := -1
			for jj, o := range open {
				if ts[o].prefix == t.prefix && ts[o].fixed == t.fixed {
					j = jj
				}
			}
			if j < 0 {
				continue
			}
			h := hists[j]
			d := 0
			for ; t.rank >= h[d]; d++ {
				t.rank -= h[d]
			}
			w := min(digitBits, 64-t.fixed)
			t.prefix, t.fixed, t.count = t.prefix<<w|uint64(d), t.fixed+w, h[d]
		}
	}
	out := make([]float64, len(ts))
	for i, t := range ts {
		if t.fixed == 64 {
			out[i] = KeyValue(t.prefix)
			continue
		}
		keys := make([]uint64, 0, t.count)
		for _, c := range chunks {
			for _, v := range c {
				if key := OrderKey(v); key>>(64-t.fixed) == t.prefix {
					keys = append(keys, key)
				}
			}
		}
		slices.Sort(keys)
		out[i] = KeyValue(keys[t.rank])
	}
	return out
}

// scanChunks calls count for every value's key, on two goroutines with
// their own nh histograms of 2^16 counters, and returns the summed
// histograms.
func scanChunks(chunks [][]float64, count func(h [][]int, key uint64), nh int) [][]int {
	const workers = 2
	hs := make([][][]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		hs[w] = make([][]int, nh)
		for j := range hs[w] {
			hs[w][j] = make([]int, 1<<digitBits)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ci := w; ci < len(chunks); ci += workers {
				for _, v := range chunks[ci] {
					count(hs[w], OrderKey(v))
				}
			}
		}()
	}
	wg.Wait()
	for w := 1; w < workers; w++ {
		for j := range hs[0] {
			for d, c := range hs[w][j] {
				hs[0][j][d] += c
			}
		}
	}
	return hs[0]
}
