package rank

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// progressLog records a run's progress reports and whether two were ever
// made at once.
type progressLog struct {
	mu         sync.Mutex
	busy       atomic.Bool
	overlapped bool
	done       []int64
	totals     []int64
}

func (l *progressLog) ctx() context.Context {
	return WithProgress(context.Background(), func(done, total int64) {
		if !l.busy.CompareAndSwap(false, true) {
			l.overlapped = true
		}
		l.mu.Lock()
		l.done, l.totals = append(l.done, done), append(l.totals, total)
		l.mu.Unlock()
		l.busy.Store(false)
	})
}

// check requires reports of total pairs that are serialised, never
// decrease, never pass the total and end at exactly the total.
func (l *progressLog) check(t *testing.T, what string, total int64) {
	t.Helper()
	if l.overlapped {
		t.Fatalf("%s: two progress reports at once", what)
	}
	if len(l.done) == 0 || l.done[len(l.done)-1] != total {
		t.Fatalf("%s: reports %v, want the last at %d", what, l.done, total)
	}
	for i, d := range l.done {
		if l.totals[i] != total || d > total || (i > 0 && d < l.done[i-1]) {
			t.Fatalf("%s: report %d of %v (totals %v), want a non-decreasing count of %d", what, i, l.done, l.totals, total)
		}
	}
}

// Scoring reports its progress (SPEC §6.1): serialised reports, done never
// decreasing and ending at exactly n_q·n_g pairs (a gallery shard: its
// queries times its rows), for explicit relevance, label relevance with
// and without negatives, the pooled summary (with rescans of the
// positives), chunked runs, every screen (with blocks scored exactly
// behind it), sparse endpoints and gallery shards of both layouts.
func TestProgressReportsEveryPair(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(31, 32))
	dense := randomProblem(r, 13, 70, 4, false)
	withNeg := classProblem(r, 20, 50, 3, 3, false, true, false)
	oneClass := classProblem(r, 20, 50, 3, 1, true, true, false)
	sq, _ := randomSparseRows(r, 13, 30, 4)
	sg, _ := randomSparseRows(r, 70, 30, 4)
	sparse := dense
	sparse.Queries, sparse.Gallery = sq, sg
	beyond := denseProblem(t, screenCase{"beyond float32",
		func() (q [][]float64) {
			for range 9 {
				q = append(q, gauss(r, 5, 1e-25))
			}
			return q
		}(),
		func() (g [][]float64) {
			for i := range 200 {
				g = append(g, gauss(r, 5, []float64{1, 1e40}[i/100]))
			}
			return g
		}()}, r)
	for _, c := range []struct {
		name  string
		p     Problem
		o     Options
		tune  *tuning
		check func(st Stats) bool
	}{
		{"explicit", dense, Options{Similarity: Dot}, &tuning{screen: "off"}, nil},
		{"explicit, chunk per query", dense, Options{Similarity: Cosine}, &tuning{chunkPairs: 1, screen: "off"}, func(st Stats) bool { return st.Chunks == 13 }},
		{"labels with negatives", withNeg, Options{Similarity: Dot}, nil, nil},
		{"labels without negatives", oneClass, Options{Similarity: Dot}, nil, nil},
		{"labels, pooled", withNeg, Options{Similarity: SquaredL2, SortedRanks: true, Pooled: &Pooled{}}, &tuning{windowCap: 1, chunkPairs: 20}, func(st Stats) bool { return st.PooledStreamed && st.Chunks > 1 }},
		{"one class, pooled", oneClass, Options{Similarity: Cosine, SortedRanks: true, Pooled: &Pooled{}}, &tuning{windowCap: 3}, func(st Stats) bool { return st.PooledStreamed }},
		{"float32 screen", dense, Options{Similarity: Dot}, &tuning{screen: "float32"}, func(st Stats) bool { return st.Screen.Kind == "float32" }},
		{"int16 screen", dense, Options{Similarity: Cosine, Precision: Float32}, &tuning{screen: "int16", subRows: 32}, func(st Stats) bool { return st.Screen.Kind == "int16" }},
		{"int8 screen", dense, Options{Similarity: Cosine, Precision: Float32}, &tuning{screen: "int8", subRows: 32}, func(st Stats) bool { return st.Screen.Kind == "int8" }},
		{"screen with exact blocks", beyond, Options{Similarity: Dot}, &tuning{screen: "float32"}, func(st Stats) bool { return st.Screen.ExactTiles > 0 && st.Screen.Pairs > 0 }},
		{"sparse", sparse, Options{Similarity: Dot}, nil, nil},
		{"top 3", dense, Options{Similarity: SquaredL2, TopN: 3}, nil, nil},
	} {
		var l progressLog
		o := c.o
		o.QueryBatch, o.GalleryBatch, o.Threads = 4, 16, 2
		_, st, err := scoreStats(l.ctx(), c.p, o, c.tune)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.check != nil && !c.check(st) {
			t.Fatalf("%s: not the path under test: %+v", c.name, st)
		}
		l.check(t, c.name, int64(c.p.Queries.Rows()*c.p.Gallery.Rows()))
	}
	// Gallery shards: each reports the pairs of its own task, also a task
	// whose queries have no eligible negative in its rows (no pass).
	for _, p := range []Problem{dense, withNeg, sparse, oneClass} {
		for _, layout := range []ShardLayout{Contiguous, Modulo} {
			for _, screen := range []string{"off", "float32"} {
				o := Options{Similarity: Dot, QueryBatch: 4, GalleryBatch: 16, Threads: 2, tune: &tuning{screen: screen}}
				pos, err := ScorePositives(context.Background(), p, o)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 3 {
					var l progressLog
					task := ShardTask{QueryLo: 3, QueryHi: 11, Gallery: Shard{Index: i, Total: 3, Layout: layout}}
					if _, err := ScoreShard(l.ctx(), p, o, pos, task); err != nil {
						t.Fatal(err)
					}
					l.check(t, fmt.Sprintf("shard %d of 3 %s screen %s", i, layout, screen), int64(8*len(task.Gallery.Rows(p.Gallery.Rows()))))
				}
			}
		}
	}
}
