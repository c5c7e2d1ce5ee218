package rank

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"testing"

	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// gatedScorer is a scorer whose workers take every processor (the gate of
// WithSharedProcessor applies) and the number of its workers.
func gatedScorer() (*scorer, int) {
	n := max(2, runtime.GOMAXPROCS(0))
	return &scorer{threads: n}, n
}

func newWorkspaces() func() *workspace {
	next := 0
	return func() *workspace { next++; return &workspace{id: next - 1} }
}

// While the shared processor is reserved the last worker takes no task and
// the others take every task once, in increasing order, even when the gate
// never closes; once it is closed every worker takes tasks as parallelWith
// does; a gate that closes during the run lets the last worker join.
func TestParallelBesideLeavesOneProcessor(t *testing.T) {
	s, workers := gatedScorer()
	for _, tc := range []struct {
		name   string
		closed bool // the gate is closed before the run
		closer int  // the task that closes it (-1: none)
	}{{"open", false, -1}, {"closed", true, -1}, {"closes during the run", false, 3}} {
		gate := make(chan struct{})
		if tc.closed {
			close(gate)
		}
		ctx := WithSharedProcessor(context.Background(), gate)
		const n = 200
		var mu sync.Mutex
		by := make([]int, n)
		count := make([]int, n)
		var once sync.Once
		err := s.parallelBeside(ctx, n, newWorkspaces(), func(i int, w *workspace) error {
			if i == tc.closer {
				once.Do(func() { close(gate) })
			}
			mu.Lock()
			by[i], count[i] = w.id, count[i]+1
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, c := range count {
			if c != 1 {
				t.Fatalf("%s: task %d taken %d times", tc.name, i, c)
			}
			if !tc.closed && tc.closer < 0 && by[i] == workers-1 {
				t.Fatalf("%s: the reserved processor's worker took task %d", tc.name, i)
			}
		}
	}
}

// A gated run stops on cancellation (the waiting worker too) and reports
// the first failing task's error, as parallelWith does.
func TestParallelBesideErrorsAndCancel(t *testing.T) {
	s, _ := gatedScorer()
	gate := make(chan struct{}) // never closed
	ctx, cancel := context.WithCancel(WithSharedProcessor(context.Background(), gate))
	err := s.parallelBeside(ctx, 1000, newWorkspaces(), func(i int, _ *workspace) error {
		if i == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: got %v", err)
	}
	bad := errors.New("task 7")
	err = s.parallelBeside(WithSharedProcessor(context.Background(), gate), 50, newWorkspaces(), func(i int, _ *workspace) error {
		if i >= 7 {
			return bad
		}
		return nil
	})
	if err != bad {
		t.Fatalf("failing task: got %v, want %v", err, bad)
	}
}

// Scoring with the shared processor reserved for the whole run (a gate
// that never closes) gives the results and the pooled summary of the
// ungated run bit for bit, streaming and through the re-scoring passes.
func TestPooledStreamingSharedProcessorSameResults(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	defer func(c int) { pooledWindowCap = c }(pooledWindowCap)
	nq, ng := 300, 4000
	p := randomProblem(r, nq, ng, 8, false)
	p.Relevance, p.Exclusions = nil, nil
	p.Classes = retrieval.NewClasses(make([]int32, nq), make([]int32, ng))
	threads := max(2, runtime.GOMAXPROCS(0))
	for _, wcap := range []int{1 << 21, 5} {
		pooledWindowCap = wcap
		run := func(ctx context.Context) ([]QueryResult, Pooled) {
			var pl Pooled
			got, err := Score(ctx, p, Options{Similarity: Cosine, QueryBatch: 64, GalleryBatch: 1000, Threads: threads, SortedRanks: true, Pooled: &pl})
			if err != nil {
				t.Fatal(err)
			}
			return got, pl
		}
		want, wpl := run(context.Background())
		got, gpl := run(WithSharedProcessor(context.Background(), make(chan struct{})))
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gpl, wpl) {
			t.Fatalf("window cap %d: gated run differs: %+v, want %+v", wcap, gpl.Summary, wpl.Summary)
		}
	}
}
