package rank

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// readCounter is an endpoint whose row reads are counted; the at-th read
// cancels the run (at ≤ 0: never). Wrapping hides the dense storage, so
// every row the run needs is read through RowFloat64, which lets a test
// cancel a run in the middle of a stage and measure how much it read after.
type readCounter struct {
	matrix.Matrix
	reads  atomic.Int64
	at     int64
	cancel context.CancelFunc
}

func (m *readCounter) RowFloat64(i int, dst []float64) {
	if n := m.reads.Add(1); n == m.at {
		m.cancel()
	}
	m.Matrix.RowFloat64(i, dst)
}

// bounded runs f and fails the test when it does not return within a
// generous deadline (a cancelled run must not hang).
func bounded(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not return within 60 s")
		return nil
	}
}

// cancelMidway scores p (its gallery wrapped in a readCounter) once to
// count the reads of a whole run, then again, cancelled at read total−tail,
// and returns the run's error, its stats and the reads after the cancel.
func cancelMidway(t *testing.T, ctx context.Context, p Problem, o Options, tune *tuning, tail int64) (error, Stats, int64) {
	t.Helper()
	g := &readCounter{Matrix: p.Gallery}
	p.Gallery = g
	if _, _, err := scoreStats(ctx, p, o, tune); err != nil {
		t.Fatal(err)
	}
	total := g.reads.Load()
	if total <= tail {
		t.Fatalf("a whole run reads %d rows, not more than %d", total, tail)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g.reads.Store(0)
	g.at, g.cancel = total-tail, cancel
	var st Stats
	err := bounded(t, func() error {
		var err error
		_, st, err = scoreStats(cctx, p, o, tune)
		return err
	})
	return err, st, g.reads.Load() - g.at
}

// A run cancelled in the middle of its gallery pass returns
// context.Canceled promptly, through every tile scorer: each worker
// finishes at most the gallery block it is in (its rows, and the rows it
// verifies), so after the cancel the run reads at most 2·threads blocks of
// the half gallery still ahead (TestScreen16x64Cancel).
func TestScreenedPassCancel(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(93, 94))
	const nq, ng, gb, threads = 24, 20000, 256, 2
	p := sampleProblem(r, nq, ng, 16, Float64)
	for _, c := range []struct {
		screen string
		prec   Precision
	}{{"float32", Float64}, {"int16", Float64}, {"int16", Float32}, {"int8", Float64}, {"int8", Float32}, {"off", Float64}, {"off", Float32}} {
		o := Options{Similarity: Dot, Precision: c.prec, QueryBatch: nq, GalleryBatch: gb, Threads: threads}
		err, st, after := cancelMidway(t, context.Background(), p, o, &tuning{screen: c.screen}, ng/2)
		what := fmt.Sprintf("screen %s %s", c.screen, precName(c.prec))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: got %v, want context.Canceled", what, err)
		}
		if want := c.screen; want != "off" && st.Screen.Kind != want {
			t.Fatalf("%s: the %q screen ran", what, st.Screen.Kind)
		}
		t.Logf("%s: %d rows read after the cancel", what, after)
		if after > 2*threads*gb {
			t.Fatalf("%s: %d rows read after the cancel (of %d ahead)", what, after, ng/2)
		}
	}
}

// A pooled label run (one class: every pair a positive, no gallery pass)
// cancelled in the middle of its positives stage returns context.Canceled
// promptly: running tasks (512 gallery rows each) finish, no other starts
// (TestPooledStreamingCancel). The memory budget keeps the gallery's
// working rows uncached, so that the stage reads them.
func TestPooledPositivesCancel(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(51, 52))
	const nq, ng, threads = 400, 5000, 2
	p := sampleProblem(r, nq, ng, 8, Float64)
	p.Relevance = nil
	p.Classes = retrieval.NewClasses(make([]int32, nq), make([]int32, ng))
	for _, prec := range []Precision{Float64, Float32} {
		o := Options{Similarity: Dot, Precision: prec, QueryBatch: 64, GalleryBatch: 1000, Threads: threads, SortedRanks: true, Pooled: &Pooled{}}
		ctx := memory.WithLimit(context.Background(), 1<<16)
		err, st, after := cancelMidway(t, ctx, p, o, nil, ng)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: got %v, want context.Canceled", precName(prec), err)
		}
		if !st.PooledStreamed {
			t.Fatalf("%s: not the pooled path", precName(prec))
		}
		t.Logf("%s: %d rows read after the cancel", precName(prec), after)
		if after > threads*512 {
			t.Fatalf("%s: %d rows read after the cancel (of %d ahead)", precName(prec), after, ng)
		}
	}
}

// A pooled label run of many query chunks cancelled after its first chunk
// (the ordered sums of later chunks pending behind it) returns
// context.Canceled, leaves no goroutine waiting for its turn in the
// ordered sum, and hands out no more queries; a pooled run whose median
// window is placed from a sample stops there when its context is already
// cancelled.
func TestPooledChunksCancel(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(53, 54))
	const nq, ng = 400, 3000
	p := sampleProblem(r, nq, ng, 4, Float64)
	p.Relevance = nil
	cls := make([]int32, ng)
	for j := range cls {
		cls[j] = int32(j % 2)
	}
	qcls := make([]int32, nq)
	for i := range qcls {
		qcls[i] = int32(i % 2)
	}
	p.Classes = retrieval.NewClasses(qcls, cls)
	for _, prec := range []Precision{Float64, Float32} {
		ctx, cancel := context.WithCancel(context.Background())
		var emitted atomic.Int64
		var st Stats
		o := Options{Similarity: Dot, Precision: prec, QueryBatch: 64, GalleryBatch: 500, Threads: 2, SortedRanks: true, Pooled: &Pooled{}, Stats: &st,
			tune: &tuning{chunkPairs: ng}} // two queries per chunk
		err := bounded(t, func() error {
			return ScoreEach(ctx, p, o, func(int, QueryResult) error {
				emitted.Add(1)
				cancel()
				return nil
			})
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: got %v, want context.Canceled", precName(prec), err)
		}
		if st.Chunks != nq/2 || emitted.Load() == 0 || emitted.Load() > 2 {
			t.Fatalf("%s: %d chunks, %d queries handed out after the cancel in the first", precName(prec), st.Chunks, emitted.Load())
		}
		// Cancelled before the run: the sample of the median window stops.
		done, cancel2 := context.WithCancel(context.Background())
		cancel2()
		o.Stats, o.tune = nil, &tuning{windowCap: 10}
		err = bounded(t, func() error {
			return ScoreEach(done, p, o, func(int, QueryResult) error { return errors.New("a query was handed out") })
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: cancelled before the run: %v", precName(prec), err)
		}
	}
}
