package rank

import (
	"context"
	"sync"
	"sync/atomic"
)

// parallel runs task(0..n-1) on up to threads workers, each with its own
// state from newWorker (called on the caller's goroutine, one after the
// other). Tasks are handed out in increasing order; after a failure no
// later task starts but earlier ones finish, so the error returned is
// always that of the lowest failing task, whatever the thread count.
func parallel[W any](ctx context.Context, threads, n int, newWorker func() W, task func(i int, w W) error) error {
	return parallelIn(ctx, threads, n, false, newWorker, task)
}

// parallelIn is parallel, with tasks dealt round-robin (worker k takes
// tasks k, k+threads, …) when static is set: tests use it to spread the
// work of a tiny pass over every worker.
func parallelIn[W any](ctx context.Context, threads, n int, static bool, newWorker func() W, task func(i int, w W) error) error {
	tq := &taskQueue{n: n, errs: make([]error, n), static: static, workers: min(threads, n)}
	tq.failed.Store(int64(n))
	var wg sync.WaitGroup
	for k := range min(threads, n) {
		w := newWorker()
		wg.Go(func() { tq.work(ctx, k, func(i int) error { return task(i, w) }) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if f := tq.failed.Load(); f < int64(n) {
		return tq.errs[f]
	}
	return nil
}

// taskQueue hands tasks 0..n-1 to workers in increasing order and keeps
// the error of the lowest failing task.
type taskQueue struct {
	n            int
	next, failed atomic.Int64
	errs         []error
	static       bool
	workers      int
}

func (tq *taskQueue) work(ctx context.Context, k int, task func(i int) error) {
	for j := int64(k); ; j += int64(tq.workers) {
		i := tq.next.Add(1) - 1
		if tq.static {
			i = j
		}
		if i >= tq.failed.Load() || ctx.Err() != nil {
			return
		}
		if err := task(int(i)); err != nil {
			tq.errs[i] = err
			for f := tq.failed.Load(); i < f && !tq.failed.CompareAndSwap(f, i); f = tq.failed.Load() {
			}
			return
		}
	}
}
