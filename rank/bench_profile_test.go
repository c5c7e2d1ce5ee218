package rank

import (
	"context"
	"math/rand/v2"
	"testing"
)

func BenchmarkScoreDot64Large(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	p := randomProblem(r, 1024, 32768, 768, false)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Score(context.Background(), p, Options{Similarity: Dot, QueryBatch: 128, GalleryBatch: 10000, Threads: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*1024*32768*768*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkScoreDot32Large(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	p := randomProblem(r, 1024, 32768, 768, false)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Score(context.Background(), p, Options{Similarity: Dot, Precision: Float32, QueryBatch: 128, GalleryBatch: 10000, Threads: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*1024*32768*768*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
