package metrics

import (
	"math"
	"math/bits"
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
	out := Values{Keys: Keys(ks), Vals: make([]float64, 2+4*len(ks))}
	return computeUniformSorted(out, sorted, grade, len(sorted), ks, gain)
}

// SummariseChunks is SummariseInPlace of the concatenation of chunks, bit
// for bit, without concatenating them (pooled positive scores of label
// runs: tens of millions of values held per query) and without reordering
// them. The mean is the same ordered sum; the median's order statistics
// come from a radix selection over order-preserving keys, which finds the
// same values a quickselect does. Values are finite.
func SummariseChunks(chunks [][]float64) Summary {
	n := 0
	var sum float64
	var lo, hi float64
	for _, c := range chunks {
		for _, v := range c {
			if n == 0 {
				lo, hi = v, v
			}
			n++
			sum += v
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if n == 0 {
		return Summary{}
	}
	var med float64
	if n%2 == 0 {
		var below float64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			below = selectChunks(chunks, n/2-1, lo, hi)
		}()
		med = selectChunks(chunks, n/2, lo, hi)
		wg.Wait()
		med = (below + med) / 2
	} else {
		med = selectChunks(chunks, n/2, lo, hi)
	}
	mean := sum / float64(n)
	return Summary{Mean: &mean, Median: &med, Min: &lo, Max: &hi}
}

// orderKey maps a finite float64 to a uint64 whose unsigned order is the
// numeric order; −0 and +0 (equal numbers) share +0's key.
func orderKey(v float64) uint64 {
	b := math.Float64bits(v + 0)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

func keyValue(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// selectChunks returns the k-th smallest (0-based) of the pooled values,
// whose minimum and maximum are lo and hi. Each pass fixes the next 16 bits
// of the key (below the bits every value shares); once few values remain
// with the fixed prefix they are collected and sorted.
func selectChunks(chunks [][]float64, k int, lo, hi float64) float64 {
	klo, khi := orderKey(lo), orderKey(hi)
	if klo == khi {
		return keyValue(klo)
	}
	fixed := uint(bits.LeadingZeros64(klo ^ khi)) // bits shared by every key
	prefix := klo >> (64 - fixed)
	if fixed == 0 {
		prefix = 0
	}
	matches := func(key uint64) bool { return fixed == 0 || key>>(64-fixed) == prefix }
	remaining := -1 // values with the fixed prefix (unknown before the first pass)
	const digit = 16
	var count [1 << digit]int
	for fixed < 64 {
		if remaining >= 0 && remaining <= 1<<12 {
			break
		}
		w := min(uint(digit), 64-fixed)
		shift := 64 - fixed - w
		clear(count[:])
		for _, c := range chunks {
			for _, v := range c {
				key := orderKey(v)
				if matches(key) {
					count[(key>>shift)&(1<<w-1)]++
				}
			}
		}
		d := 0
		for ; k >= count[d]; d++ {
			k -= count[d]
		}
		remaining = count[d]
		prefix = prefix<<w | uint64(d)
		fixed += w
	}
	if fixed == 64 {
		return keyValue(prefix)
	}
	keys := make([]uint64, 0, remaining)
	for _, c := range chunks {
		for _, v := range c {
			if key := orderKey(v); matches(key) {
				keys = append(keys, key)
			}
		}
	}
	slices.Sort(keys)
	return keyValue(keys[k])
}
