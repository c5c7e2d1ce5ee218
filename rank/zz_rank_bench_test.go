package rank

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkRankOrderZZ(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]float64, 10000)
	for i := range v {
		v[i] = r.NormFloat64() * 0.05
	}
	rs := &radixSorter{}
	for range b.N {
		rankOrder(rs, v, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(v)), "ns/elem")
}
