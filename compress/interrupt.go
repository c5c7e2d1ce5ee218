package compress

import "context"

// interruptible runs f and returns as soon as either f finishes or ctx is
// done, so the single long calls of the fits (the LAPACK decompositions, the
// dense matrix products, drawing a Gaussian projection), which cannot poll,
// still honour cancellation promptly (SPEC §6.1: at least every second).
// On cancellation f keeps running in the background until it finishes and
// its results are dropped; f must only write memory the caller abandons.
func interruptible(ctx context.Context, f func() error) error {
	if ctx.Done() == nil {
		return f()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
