package kernel

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkKernels times every available implementation on a realistic
// block (rank's default query batch against a gallery batch, d = 768) and
// reports GFLOP/s, counting 2·qn·gn·d flops per call.
func BenchmarkKernels(b *testing.B) {
	const qn, gn, d = 128, 4096, 768
	r := rand.New(rand.NewPCG(1, 2))
	q, g := make([]float64, qn*d), make([]float64, gn*d)
	for i := range q {
		q[i] = r.NormFloat64()
	}
	for i := range g {
		g[i] = r.NormFloat64()
	}
	q32, g32 := to32(q, func(x float64) float64 { return x }), to32(g, func(x float64) float64 { return x })
	out, out32 := make([]float64, qn*gn), make([]float32, qn*gn)
	for _, m := range usable {
		for _, f := range []struct {
			name string
			run  func()
		}{
			{"Dot64", func() { m.dot64(q, qn, g, gn, d, out) }},
			{"SqDist64", func() { m.sqDist64(q, qn, g, gn, d, out) }},
			{"Dot32", func() { m.dot32(q32, qn, g32, gn, d, out32) }},
			{"DotBlocked32", func() { m.dotBlk32(q32, qn, g32, gn, d, out32) }},
			{"SqDist32", func() { m.sqDist32(q32, qn, g32, gn, d, out32) }},
		} {
			b.Run(m.name+"/"+f.name, func(b *testing.B) {
				for b.Loop() {
					f.run()
				}
				b.ReportMetric(2*qn*gn*d*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
