package extract

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

var _ StatefulFitter = (*Centered)(nil)

func TestCenteredFitEncodeAndState(t *testing.T) {
	ctx := context.Background()
	g, _ := matrix.NewDense64(3, 2, []float64{1, 2, 3, 4, 5, 9})
	q, _ := matrix.NewDense32(2, 2, []float32{0, 0, 3, 5})
	c := &Centered{ExtractorName: "c"}
	if _, err := c.Encode(ctx, Batch{Side: "query", Items: retrieval.Embeddings(q)}); err == nil {
		t.Fatal("Encode before Fit succeeded")
	}
	if err := c.Fit(ctx, retrieval.Embeddings(g)); err != nil {
		t.Fatal(err)
	}
	out, err := c.Encode(ctx, Batch{Side: "query", Items: retrieval.Embeddings(q)})
	if err != nil {
		t.Fatal(err)
	}
	// Gallery means (3, 5): hand-computed.
	if got := out.(*matrix.Dense).Float64Data(); !equalBits(got, []float64{-3, -5, 0, 0}) {
		t.Fatalf("encoded %v", got)
	}
	state, err := c.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	// A worker that never fitted loads the state and encodes the same bits.
	w := &Centered{ExtractorName: "c"}
	if err := w.UnmarshalState(state); err != nil {
		t.Fatal(err)
	}
	again, _ := w.Encode(ctx, Batch{Side: "query", Items: retrieval.Embeddings(q)})
	if !equalBits(again.(*matrix.Dense).Float64Data(), out.(*matrix.Dense).Float64Data()) {
		t.Fatal("state round trip changed the encoding")
	}
	if s2, _ := w.MarshalState(); !bytes.Equal(s2, state) {
		t.Fatal("state does not re-encode to itself")
	}
	if eligible, _ := CacheEligibility(c.Recipe(), true); !eligible {
		t.Fatal("centered recipe is not cache-eligible")
	}
	if err := w.UnmarshalState(state[:len(state)-1]); err == nil {
		t.Fatal("truncated state accepted")
	}
}

func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

func FuzzCenteredUnmarshalState(f *testing.F) {
	c := &Centered{ExtractorName: "c", mean: []float64{1.5, -2}}
	s, _ := c.MarshalState()
	f.Add(s)
	f.Add(s[:9])
	f.Fuzz(func(t *testing.T, data []byte) {
		var x Centered
		if err := x.UnmarshalState(data); err != nil {
			return
		}
		again, err := x.MarshalState()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted state does not re-encode to itself: %v", err)
		}
	})
}
