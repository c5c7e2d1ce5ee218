package rank

import (
	"context"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// BenchmarkPooledOneClass: the streaming pooled pass of the one-class
// label run of issue #13 (2,000 × 20,000 float32 rows of width 384, cosine,
// float64 protocol, one class), on one worker; cpu-s/op is the process's
// user and system time per run (on a shared machine a steadier measure of
// the work than the wall time).
func BenchmarkPooledOneClass(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const nq, ng, d = 2000, 20000, 384
	mat := func(n int) *matrix.Dense {
		v := make([]float32, n*d)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		m, err := matrix.NewDense32(n, d, v)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strconv.Itoa(i)
		}
		return out
	}
	p := Problem{Queries: mat(nq), Gallery: mat(ng), QueryIDs: ids(nq), GalleryIDs: ids(ng),
		Classes: retrieval.NewClasses(make([]int32, nq), make([]int32, ng))}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ResetTimer()
	c0 := cpu()
	for range b.N {
		err := ScoreEach(context.Background(), p, Options{Similarity: Cosine, QueryBatch: 256, GalleryBatch: 4096, Threads: 1, SortedRanks: true, Pooled: &Pooled{}},
			func(int, QueryResult) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpu()-c0).Seconds()/float64(b.N), "cpu-s/op")
}
