package rank

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// BenchmarkCountRunManyPositives places a row of 10,000 Gaussian scores
// against p Gaussian thresholds, as one run of negatives and as runs of 9
// between positives (10 interleaved classes): ns per negative.
var pBench, runBench = 10000, 0

func BenchmarkCountRunManyPositives(b *testing.B) {
	for _, pb := range []int{100, 1000, 10000, 50000} {
		for _, rl := range []int{0, 9} {
			pBench, runBench = pb, rl
			name := strconv.Itoa(pb)
			if rl > 0 {
				name += "/runs-of-" + strconv.Itoa(rl)
			}
			b.Run(name, benchCountRun)
		}
	}
}

func benchCountRun(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 10000
	p := pBench
	sc := make([]float32, p, p+1)
	for i := range sc {
		sc[i] = float32(r.NormFloat64() * 0.125)
	}
	slices.Sort(sc)
	slices.Reverse(sc)
	idx := make([]int32, p, p+1)
	for i := range idx {
		idx[i] = int32(r.IntN(100000))
	}
	th := thresholds[float32]{score: sc, index: idx, b: newSlotBuckets(sc, nil)}
	seg := make([]float32, n)
	for i := range seg {
		seg[i] = float32(r.NormFloat64() * 0.125)
	}
	cnt := make([]int32, p+1)
	var fs foldScratch[float32]
	runs := []negRun{{0, n}}
	negatives := n
	if runBench > 0 {
		runs, negatives = runs[:0], 0
		for j := 0; j < n; j += runBench + 1 {
			runs = append(runs, negRun{int32(j), int32(min(n, j+runBench))})
			negatives += min(n, j+runBench) - j
		}
	}
	b.ResetTimer()
	for range b.N {
		countBucketed(&th, cnt, seg, runs, allRows(n).block(0, n), &fs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*negatives), "ns/negative")
}

// BenchmarkRankOrder orders 10,000 Gaussian positive scores of a query and
// builds their bucket table: ns per positive.
func BenchmarkRankOrder(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const p = 10000
	vals := make([]float32, p)
	for i := range vals {
		vals[i] = float32(r.NormFloat64() * 0.125)
	}
	rs := new(sorter)
	tab := make([]uint16, tableLen(p))
	b.ResetTimer()
	for range b.N {
		rankOrder(rs, vals, nil, true, tab)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*p), "ns/positive")
}
