package rank

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
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

// BenchmarkScoreDot64LargeExhaustive is BenchmarkScoreDot64Large without
// any screen (Options.Exhaustive): the ratio of the two is the screen's
// speed-up.
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

// shardedRun scores p as nShards gallery shards one after the other
// (positives once, every shard, merge, results).
func shardedRun(b *testing.B, p Problem, o Options, nShards int, layout ShardLayout) {
	ctx := context.Background()
	pos, err := ScorePositives(ctx, p, o)
	if err != nil {
		b.Fatal(err)
	}
	nq := p.Queries.Rows()
	parts := make([]*Partial, nShards)
	for i := range nShards {
		if parts[i], err = ScoreShard(ctx, p, o, pos, ShardTask{QueryLo: 0, QueryHi: nq, Gallery: Shard{Index: i, Total: nShards, Layout: layout}}); err != nil {
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

// BenchmarkShardedScore compares the unsharded scorer with the same
// problem scored as N gallery shards one after the other, as one machine
// running a whole job array would: the difference is the sharding
// overhead (per-shard plans and passes, merging).
func BenchmarkShardedScore(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	p := randomProblem(r, 256, 16384, 128, false)
	for _, sim := range []Similarity{Cosine, SquaredL2} {
		o := Options{Similarity: sim, QueryBatch: 128, GalleryBatch: 4096, Threads: 1}
		b.Run(fmt.Sprintf("sim=%d/unsharded", sim), func(b *testing.B) {
			for b.Loop() {
				if _, err := Score(context.Background(), p, o); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, n := range []int{4, 16} {
			for _, layout := range []ShardLayout{Contiguous, Modulo} {
				b.Run(fmt.Sprintf("sim=%d/N=%d/%s", sim, n, layout), func(b *testing.B) {
					for b.Loop() {
						shardedRun(b, p, o, n, layout)
					}
				})
			}
		}
	}
}

// BenchmarkShardedClasses: label-class relevance with about 2,000
// positives per query, unsharded (implicit classes), unsharded with the
// same relevance as explicit pairs, and as 4 gallery shards (implicit
// classes too).
func BenchmarkShardedClasses(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 3))
	p := classProblem(r, 256, 16384, 64, 8, false, false, false)
	p.Exclusions = nil
	explicit := p
	explicit.Relevance, explicit.Classes = p.Classes.Materialise(), nil
	o := Options{Similarity: Dot, QueryBatch: 128, GalleryBatch: 4096, Threads: 1}
	for _, c := range []struct {
		name string
		p    Problem
	}{{"unsharded", p}, {"unsharded-explicit", explicit}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Score(context.Background(), c.p, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("N=4", func(b *testing.B) {
		for b.Loop() {
			shardedRun(b, p, o, 4, Contiguous)
		}
	})
}

// BenchmarkPooledOneClass: the pooled summary of a one-class label run
// (2,000 × 20,000 float32 rows of width 384, cosine, float64 protocol: 40
// million positives, no negatives) on one worker; cpu-s/op is the
// process's user and system time per run (on a shared machine a steadier
// measure of the work than the wall time).
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

// BenchmarkPooledRowStats: the pooled summary's per-score fold (extremes,
// counts below and inside the median window) over 100 rows of 20,000
// scores, in ns per score.
func BenchmarkPooledRowStats(b *testing.B) {
	for _, prec := range []Precision{Float64, Float32} {
		b.Run(precName(prec), func(b *testing.B) {
			if prec == Float32 {
				benchRowStats[float32](b)
			} else {
				benchRowStats[float64](b)
			}
		})
	}
}

func benchRowStats[T working](b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	rows := make([][]T, 100)
	for i := range rows {
		rows[i] = make([]T, 20000)
		for j := range rows[i] {
			rows[i][j] = T(r.NormFloat64() * 0.05)
		}
	}
	sk := &sink[T]{s: &scorer[T]{pl: plan{window: 1 << 21}}, win: [2]float64{-0.0006, 0.0006}, kept: make([]T, 1<<21)}
	b.ResetTimer()
	for range b.N {
		p := &sinkPart[T]{sk: sk}
		sk.nKept.Store(0)
		for _, v := range rows {
			p.rowStats(v)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2e6, "ns/value")
}

// prepareBenchGallery is a 20,000 × 384 float32 read-only gallery (a mapped
// .npy file as a retrieval run sees it).
func prepareBenchGallery(b *testing.B) *matrix.Dense {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	rows, d := 20000, 384
	f := make([]float32, rows*d)
	for i := range f {
		f[i] = float32(r.NormFloat64())
	}
	m, err := matrix.NewDense32(rows, d, f)
	if err != nil {
		b.Fatal(err)
	}
	return m.ReadOnly()
}

// BenchmarkPrepareCosine32 is the fused endpoint pass of a cosine run
// (finiteness, row maxima, SPEC §4.1 norms) on one thread.
func BenchmarkPrepareCosine32(b *testing.B) {
	m := prepareBenchGallery(b)
	b.SetBytes(int64(m.Rows() * m.Cols() * 4))
	for b.Loop() {
		scanEndpoint(m, true, 1)
	}
}

// BenchmarkScreen32Block prepares the float32 screen's blocks of the whole
// gallery (cosine, float64 protocol: the float32 roundings of the working
// rows and their norm bounds, produced a row at a time from the stored
// float32 values), and BenchmarkScreenRows32Block the same through a
// float64 copy of each 1,000-row block, for comparison.
func BenchmarkScreen32Block(b *testing.B) {
	m := prepareBenchGallery(b)
	ctx := context.Background()
	ids := make([]string, m.Rows())
	p := Problem{Queries: m.RowSlice(0, 16), Gallery: m, QueryIDs: ids[:16], GalleryIDs: ids, Relevance: make([][]retrieval.Positive, 16)}
	for q := range p.Relevance {
		p.Relevance[q] = []retrieval.Positive{{Index: q, Grade: 1}}
	}
	pr, err := prepare(ctx, p, Options{Similarity: Cosine, QueryBatch: 16, GalleryBatch: 1000, Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	s := newScorer[float64](ctx, pr, allRows(pr.ng), 0, pr.nq)
	st := newScreen32(s)
	w := &worker[float64]{tmp: make([]float64, pr.d)}
	b.SetBytes(int64(m.Rows() * m.Cols() * 4))
	for b.Loop() {
		for g0 := 0; g0 < pr.ng; g0 += 1000 {
			st.block(s, w, s.pl.rows.block(g0, g0+1000))
		}
	}
}

func BenchmarkScreenRows32Block(b *testing.B) {
	m := prepareBenchGallery(b)
	sc := scanEndpoint(m, true, 1)
	src := &source{m: m, stride: 1, rows: m.Rows(), cols: m.Cols(), prec: Float64, cosine: true, norms: sc.norms}
	d, blk := m.Cols(), 1000
	buf, y32 := make([]float64, blk*d), make([]float32, blk*d)
	b.SetBytes(int64(m.Rows() * d * 4))
	for b.Loop() {
		for g0 := 0; g0 < m.Rows(); g0 += blk {
			g := src.block64(g0, g0+blk, buf)
			for j := range blk {
				convertNormBound(g[j*d:(j+1)*d], y32[j*d:(j+1)*d])
			}
		}
	}
}

// BenchmarkClassesDemoShape is the demo's label run shape: 1,000 queries ×
// 5,000 gallery rows in 10 interleaved classes, narrow rows (the counting
// dominates), float64 cosine, with the bucketed counting and with plain
// searches.
func BenchmarkClassesDemoShape(b *testing.B) {
	for _, bucketed := range []bool{false, true} {
		b.Run(fmt.Sprintf("bucketed=%v", bucketed), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			const nq, ng, d = 1000, 5000, 16
			p := classProblem(r, nq, ng, d, 10, false, false, false)
			p.Exclusions = nil
			// Class-clustered rows, as real embeddings: a query's
			// positives score mostly above its negatives.
			centers := make([]float64, 10*d)
			for i := range centers {
				centers[i] = r.NormFloat64()
			}
			rows := func(n int, cls []int32) matrix.Matrix {
				x := make([]float64, n*d)
				for i := range x {
					x[i] = centers[int(cls[i/d])*d+i%d] + 1.2*r.NormFloat64()
				}
				m, _ := matrix.NewDense64(n, d, x)
				return m
			}
			p.Queries, p.Gallery = rows(nq, p.Classes.Query), rows(ng, p.Classes.Gallery)
			o := Options{Similarity: Cosine, Precision: Float64, Threads: 1, QueryBatch: 128, GalleryBatch: 10000, tune: &tuning{noBuckets: !bucketed}}
			b.ResetTimer()
			for range b.N {
				if _, err := Score(context.Background(), p, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLabelClasses is bench/labels.sh's shape on one thread: 2,000
// queries × 100,000 Gaussian gallery rows × 64, float32 cosine, K = 1, 10
// or 1,000 classes interleaved (query i in class i mod K, gallery row j in
// j mod K), so a query's positives lie in the bulk of its scores.
func BenchmarkLabelClasses(b *testing.B) {
	for _, k := range []int{1, 10, 1000} {
		b.Run(fmt.Sprintf("classes=%d", k), func(b *testing.B) {
			r := rand.New(rand.NewPCG(7, 8))
			const nq, ng, d = 2000, 100000, 64
			gauss32 := func(n int) matrix.Matrix {
				x := make([]float32, n*d)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				m, _ := matrix.NewDense32(n, d, x)
				return m
			}
			qc, gc := make([]int32, nq), make([]int32, ng)
			for i := range qc {
				qc[i] = int32(i % k)
			}
			for j := range gc {
				gc[j] = int32(j % k)
			}
			p := Problem{Queries: gauss32(nq), Gallery: gauss32(ng), Classes: retrieval.NewClasses(qc, gc),
				QueryIDs: make([]string, nq), GalleryIDs: make([]string, ng)}
			for i := range p.QueryIDs {
				p.QueryIDs[i] = fmt.Sprint("q", i)
			}
			for j := range p.GalleryIDs {
				p.GalleryIDs[j] = fmt.Sprint("g", j)
			}
			// As evaluate.Direction runs label relevance: ascending ranks,
			// the pooled summary, results streamed.
			o := Options{Similarity: Cosine, Precision: Float32, Threads: 1, QueryBatch: 128, GalleryBatch: 10000, SortedRanks: true}
			b.ResetTimer()
			for range b.N {
				o.Pooled = &Pooled{}
				if err := ScoreEach(context.Background(), p, o, func(int, QueryResult) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
