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

// BenchmarkScoreSparse scores 1,000 sparse queries against 20,000 sparse
// gallery rows of width 30,000 with 100 non-zeros each (dense: 4.7 GiB).
func BenchmarkScoreSparse(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	p := randomProblem(r, 1000, 20000, 1, false)
	p.Queries, _ = randomSparseRows(r, 1000, 30000, 100)
	p.Gallery, _ = randomSparseRows(r, 20000, 30000, 100)
	for b.Loop() {
		if _, err := Score(context.Background(), p, Options{Similarity: Cosine, QueryBatch: 128, GalleryBatch: 10000}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScoreDot64LargeExhaustive is BenchmarkScoreDot64Large without the
// float32 screen (VERTEBRAE_SCREEN=off): the ratio of the two is the
// screen's speed-up.
func BenchmarkScoreDot64LargeExhaustive(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	p := randomProblem(r, 1024, 32768, 768, false)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Score(context.Background(), p, Options{Similarity: Dot, QueryBatch: 128, GalleryBatch: 10000, Threads: 1, Exhaustive: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*1024*32768*768*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
