package compress

import (
	"context"
	"errors"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// TestInterruptibleReturnsOnCancel: a call that cannot poll (here one that
// blocks until released) no longer holds up cancellation.
func TestInterruptibleReturnsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	started := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- interruptible(ctx, func() error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("interruptible = %v, want context.Canceled while the call still runs", err)
	}
	close(release)
	if err := interruptible(context.Background(), func() error { return errors.New("x") }); err == nil || err.Error() != "x" {
		t.Fatalf("without cancellation the call's error is returned: %v", err)
	}
}

// TestFitsHonourCancelledContext: PCA, truncated SVD and the Gaussian
// random projection stop with context.Canceled (which the CLI reports as
// "interrupted").
func TestFitsHonourCancelledContext(t *testing.T) {
	rows := make([][]float64, 40)
	for i := range rows {
		rows[i] = []float64{float64(i), float64(i % 7), float64(i % 3), 1}
	}
	g, err := matrix.FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, spec := range []string{"pca:2", "truncated-svd:2", "gaussian-rp:2"} {
		cfg, err := ParseSpec(spec, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(ctx, cfg, g, g); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", spec, err)
		}
	}
}
