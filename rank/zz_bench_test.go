package rank

import (
	"context"
	"math/rand/v2"
	"testing"
)

func BenchmarkZZScreen(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	p := randomProblem(r, 500, 20000, 384, false)
	for b.Loop() {
		if _, err := Score(context.Background(), p, Options{Similarity: Cosine, QueryBatch: 256, GalleryBatch: 4096, Threads: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
