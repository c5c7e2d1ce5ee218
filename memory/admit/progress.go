package admit

import "context"

// Progress receives an endpoint's progress: once with done = 0 before the
// first batch (so rates include it), then after every admitted batch, done
// of total rows encoded for owner.
type Progress func(owner string, done, total int)

type progressKey struct{}

// WithProgress returns a context whose Endpoint calls report to p.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

func progressOf(ctx context.Context) Progress {
	p, _ := ctx.Value(progressKey{}).(Progress)
	return p
}
