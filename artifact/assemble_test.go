package artifact

import (
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// Rows given in modulo-shard order land at their indices; bad index sets
// are refused (SPEC §10.5 batched writes).
func TestRowAssembler(t *testing.T) {
	want := dense32(t, 7, 3, 0)
	a, err := NewRowAssembler(t.TempDir(), 7, 3, matrix.Float32)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := 0; i < 3; i++ { // shard i of 3 holds rows i, i+3, …
		var idx []int
		var vals []float32
		for r := i; r < 7; r += 3 {
			idx = append(idx, r)
			vals = append(vals, want.Float32Data()[r*3:(r+1)*3]...)
		}
		b, _ := matrix.NewDense32(len(idx), 3, vals)
		if _, err := a.Source(); err == nil && i < 2 {
			t.Fatal("incomplete assembly accepted")
		}
		if err := a.Put(idx, b); err != nil {
			t.Fatal(err)
		}
	}
	src, err := a.Source()
	if err != nil {
		t.Fatal(err)
	}
	s := New(mem.New())
	if err := s.WriteArray(ctx, "m", src, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.LoadArray(ctx, "m")
	if err != nil || !sameMatrix(got, want) {
		t.Fatalf("assembled array differs: %v", err)
	}
	one, _ := matrix.NewDense32(1, 3, []float32{1, 2, 3})
	for _, c := range []struct {
		idx  []int
		frag string
	}{{[]int{7}, "outside [0, 7)"}, {[]int{-1}, "outside"}, {[]int{2}, "given twice"}} {
		if err := a.Put(c.idx, one); err == nil || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("%v: %v", c.idx, err)
		}
	}
	if err := a.Put([]int{0, 1}, one); err == nil {
		t.Error("batch/index count mismatch accepted")
	}
}
