package memory

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestCheckAndSaturation(t *testing.T) {
	ctx := WithLimit(context.Background(), 1000)
	if err := Check(ctx, "x", 1000); err != nil {
		t.Fatalf("exact fit: %v", err)
	}
	err := Check(ctx, "Scoring scratch", 1001)
	var be *BudgetError
	if !errors.As(err, &be) || be.Required != 1001 || be.Budget != 1000 ||
		err.Error() != "Scoring scratch is estimated to require 1001 bytes, exceeding the memory budget of 1000 bytes; increase max_memory_bytes or reduce the input" {
		t.Fatalf("err = %v", err)
	}
	if err := Check(context.Background(), "x", math.MaxInt64); err != nil {
		t.Fatalf("no budget in the context: %v", err)
	}
	if got := Bytes(3_000_000_000, 8, 2); got != 48_000_000_000 {
		t.Errorf("Bytes = %d", got)
	}
	if got := Bytes(1<<40, 1<<40); got != math.MaxInt64 {
		t.Errorf("overflow not saturated: %d", got)
	}
	if got := Sum(math.MaxInt64-1, 5); got != math.MaxInt64 {
		t.Errorf("Sum overflow: %d", got)
	}
	if err := Check(ctx, "y", Bytes(1<<40, 1<<40)); err == nil || !strings.Contains(err.Error(), "more than 9.2e18 bytes") {
		t.Errorf("saturated message: %v", err)
	}
}
