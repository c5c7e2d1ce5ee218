package rank

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// BenchmarkPooledRowStats: the streaming pooled pass's per-score fold
// (extremes, counts below and inside the median window) over 100 rows of
// 20,000 scores, in ns per score.
func BenchmarkPooledRowStats(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([][]float64, 100)
	for i := range rows {
		rows[i] = make([]float64, 20000)
		for j := range rows[i] {
			rows[i][j] = r.NormFloat64() * 0.05
		}
	}
	ps := &pooledScan{}
	maxPos := make([]float64, 100)
	win := pooledWindow{lo: -0.0006, hi: 0.0006}
	b.ResetTimer()
	for range b.N {
		p := &pooledPart{}
		var kept atomic.Int64
		var of atomic.Bool
		for q, v := range rows {
			ps.rowStats(p, q, v, win, &kept, &of, maxPos)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2e6, "ns/value")
}
