package admit

import (
	"context"
	"reflect"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// TestProgressStartsBeforeFirstBatch: the first report (done = 0) comes
// before the encoder is called, so a progress clock includes the first
// batch (a single-batch endpoint no longer reads "0 rows/s").
func TestProgressStartsBeforeFirstBatch(t *testing.T) {
	c := &counter{src: dense64(t, 5, 2)}
	var events []string
	calls := 0
	enc := func(ctx context.Context, lo, hi int) (m matrix.Matrix, err error) {
		calls++
		events = append(events, "encode")
		return c.fn(ctx, lo, hi)
	}
	ctx := WithProgress(context.Background(), func(owner string, done, total int) {
		events = append(events, "progress")
		if done == 0 && calls != 0 {
			t.Errorf("start signal after %d encoder calls", calls)
		}
	})
	_, closeFn, err := Endpoint(ctx, "q", 5, 2, enc, mustBudget(t, 1<<20, 0, false, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	want := []string{"progress", "encode", "progress", "encode", "progress", "encode", "progress"}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events = %v, want %v", events, want)
	}
}
