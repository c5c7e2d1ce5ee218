package memory

import (
	"context"
	"fmt"
	"math"
	"math/bits"
)

// Guarding allocations (SPEC §6.1, memory safety): an allocation whose size
// follows from input data or declared shapes — the dense scratch of a sparse
// width, run exports, compression fits — is checked against the budget
// before it is made, so a declared width of 3·10⁹ fails with a message
// instead of a Go runtime out-of-memory dump. The budget travels in the
// context so the scoring and compression code need no new parameters.

type limitKey struct{}

// WithLimit returns a context whose guarded allocations may not exceed
// limit bytes (the resolved budget, §7.2).
func WithLimit(ctx context.Context, limit int64) context.Context {
	return context.WithValue(ctx, limitKey{}, limit)
}

// LimitOf returns the budget carried by ctx, if any.
func LimitOf(ctx context.Context) (int64, bool) {
	v, ok := ctx.Value(limitKey{}).(int64)
	return v, ok
}

// BudgetError is a guarded allocation that does not fit the budget.
type BudgetError struct {
	What     string // what would be allocated
	Required int64  // estimated bytes (math.MaxInt64 when it overflows)
	Budget   int64
}

func (e *BudgetError) Error() string {
	req := fmt.Sprintf("%d bytes", e.Required)
	if e.Required == math.MaxInt64 {
		req = "more than 9.2e18 bytes"
	}
	return fmt.Sprintf("%s is estimated to require %s, exceeding the memory budget of %d bytes; increase max_memory_bytes or reduce the input", e.What, req, e.Budget)
}

// Check fails with a *BudgetError when the budget carried by ctx is smaller
// than bytes. Without a budget in ctx nothing is checked.
func Check(ctx context.Context, what string, bytes int64) error {
	limit, ok := LimitOf(ctx)
	if !ok || bytes <= limit {
		return nil
	}
	return &BudgetError{What: what, Required: bytes, Budget: limit}
}

// Bytes multiplies non-negative factors, saturating at math.MaxInt64, for
// size estimates that must not wrap around.
func Bytes(factors ...int64) int64 {
	out := int64(1)
	for _, f := range factors {
		if f <= 0 {
			return 0
		}
		hi, lo := bits.Mul64(uint64(out), uint64(f))
		if hi != 0 || lo > math.MaxInt64 {
			return math.MaxInt64
		}
		out = int64(lo)
	}
	return out
}

// Sum adds non-negative sizes, saturating at math.MaxInt64.
func Sum(sizes ...int64) int64 {
	var out int64
	for _, s := range sizes {
		if s > math.MaxInt64-out {
			return math.MaxInt64
		}
		out += s
	}
	return out
}
