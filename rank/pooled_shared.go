package rank

import (
	"context"
	"runtime"
	"sync"
)

type sharedKey struct{}

// WithSharedProcessor returns a context under which the streaming pooled
// pass (label-derived relevance without negatives, see Pooled) leaves one
// processor to other work of the same run until done closes, when its
// workers would otherwise take every processor.
//
// That work is the chain of the run's fingerprint hashes: the content
// identity (SPEC §2.9) and then the relevance fingerprint (§10.3), which
// both hash every label pair and cannot overlap (the second starts with
// the first's result). With one class of 20,000 members and 2,000 queries
// the chain is the run's critical path, longer than the scores on the
// other processors; a processor shared with the scoring workers would
// slow it by about a tenth. The scores are the same either way.
func WithSharedProcessor(ctx context.Context, done <-chan struct{}) context.Context {
	return context.WithValue(ctx, sharedKey{}, done)
}

// SharedProcessor is the done channel ctx carries from WithSharedProcessor
// (nil when none).
func SharedProcessor(ctx context.Context) <-chan struct{} {
	done, _ := ctx.Value(sharedKey{}).(<-chan struct{})
	return done
}

// sharedGate is the done channel of WithSharedProcessor when one of s's
// workers must wait for it: it is still open, s has at least two workers
// and they would take every processor. Otherwise nil.
func (s *scorer) sharedGate(ctx context.Context) <-chan struct{} {
	done := SharedProcessor(ctx)
	if done == nil || s.threads < 2 || s.threads < runtime.GOMAXPROCS(0) {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
		return done
	}
}

// workersBeside is the number of workers of a short parallel phase: one
// fewer while the shared processor is reserved.
func (s *scorer) workersBeside(ctx context.Context) int {
	if s.sharedGate(ctx) != nil {
		return s.threads - 1
	}
	return s.threads
}

// parallelBeside is parallelWith whose last worker, while the shared
// processor is reserved (sharedGate), starts only once the gate closes: it
// never waits holding a task, so the ordered sum of the others' tasks goes
// on, and it gives up when the others have taken every task. Tasks are
// taken in increasing order, as parallelWith takes them.
func (s *scorer) parallelBeside(ctx context.Context, n int, newWS func() *workspace, task func(i int, w *workspace) error) error {
	gate := s.sharedGate(ctx)
	workers := min(s.threads, n)
	if gate == nil || workers < 2 {
		return s.parallelWith(ctx, n, newWS, task)
	}
	tq := newTaskQueue(n)
	var wg, others sync.WaitGroup
	othersDone := make(chan struct{})
	run := func(ws *workspace) { tq.work(ctx, task, ws) }
	for w := range workers {
		wg.Add(1)
		ws := newWS()
		if w < workers-1 {
			others.Add(1)
			go func() {
				defer wg.Done()
				defer others.Done()
				run(ws)
			}()
			continue
		}
		go func() {
			defer wg.Done()
			select {
			case <-gate:
				run(ws)
			case <-othersDone: // every task is taken
			case <-ctx.Done():
			}
		}()
	}
	go func() { others.Wait(); close(othersDone) }()
	wg.Wait()
	return tq.err(ctx)
}
