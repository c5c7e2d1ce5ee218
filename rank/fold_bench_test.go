package rank

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// BenchmarkCountRunManyPositives places 10,000 rows of Gaussian scores
// against 10,000 Gaussian thresholds (the 10-class label shape): ns per
// negative.
var pBench = 10000

func BenchmarkCountRunManyPositives(b *testing.B) {
	for _, pb := range []int{100, 1000, 10000, 50000} {
		pBench = pb
		b.Run(strconv.Itoa(pb), benchCountRun)
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
	b.ResetTimer()
	for range b.N {
		countBucketed(&th, cnt, seg, runs, allRows(n).block(0, n), &fs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/negative")
}
