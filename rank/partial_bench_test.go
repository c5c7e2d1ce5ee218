package rank

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkShardedScore compares the unsharded scorer with the same
// problem scored as N gallery shards one after the other (positives once,
// every shard, merge, results), as one machine running a whole job array
// would: the difference is the sharding overhead (per-shard checks and
// preparation, gathering modulo rows, merging).
func BenchmarkShardedScore(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	p := randomProblem(r, 256, 16384, 128, false)
	ctx := context.Background()
	for _, sim := range []Similarity{Cosine, SquaredL2} {
		o := Options{Similarity: sim, QueryBatch: 128, GalleryBatch: 4096, Threads: 1}
		b.Run(fmt.Sprintf("sim=%d/unsharded", sim), func(b *testing.B) {
			for b.Loop() {
				if _, err := Score(ctx, p, o); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, n := range []int{4, 16} {
			for _, layout := range []ShardLayout{Contiguous, Modulo} {
				b.Run(fmt.Sprintf("sim=%d/N=%d/%s", sim, n, layout), func(b *testing.B) {
					for b.Loop() {
						pos, err := ScorePositives(ctx, p, o)
						if err != nil {
							b.Fatal(err)
						}
						parts := make([]*Partial, n)
						for i := range n {
							if parts[i], err = ScoreShard(ctx, p, o, pos, ShardTask{QueryLo: 0, QueryHi: 256, Gallery: Shard{Index: i, Total: n, Layout: layout}}); err != nil {
								b.Fatal(err)
							}
						}
						m, err := MergePartials(parts...)
						if err != nil {
							b.Fatal(err)
						}
						if err := Results(p, []*Partial{m}, func(int, QueryResult) error { return nil }); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkShardedClasses: label-class relevance with about 2,000
// positives per query. Shards count on the explicit-pairs path (the
// classes are materialised), unsharded scoring on the implicit one.
func BenchmarkShardedClasses(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 3))
	p := classProblem(r, 256, 16384, 64, 8, false, false, false)
	p.Exclusions = nil
	ctx := context.Background()
	o := Options{Similarity: Dot, QueryBatch: 128, GalleryBatch: 4096, Threads: 1}
	b.Run("unsharded", func(b *testing.B) {
		for b.Loop() {
			if _, err := Score(ctx, p, o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unsharded-explicit", func(b *testing.B) {
		forceMaterialisedClasses = true
		defer func() { forceMaterialisedClasses = false }()
		for b.Loop() {
			if _, err := Score(ctx, p, o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("N=4", func(b *testing.B) {
		for b.Loop() {
			pos, err := ScorePositives(ctx, p, o)
			if err != nil {
				b.Fatal(err)
			}
			var parts []*Partial
			for i := range 4 {
				pt, err := ScoreShard(ctx, p, o, pos, ShardTask{QueryLo: 0, QueryHi: 256, Gallery: Shard{Index: i, Total: 4}})
				if err != nil {
					b.Fatal(err)
				}
				parts = append(parts, pt)
			}
			if _, err := MergePartials(parts...); err != nil {
				b.Fatal(err)
			}
		}
	})
}
