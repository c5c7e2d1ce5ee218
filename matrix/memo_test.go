package matrix

import "testing"

type testKey struct{ n int }

func TestMemo(t *testing.T) {
	calls := 0
	compute := func() any { calls++; return calls }
	ro, _ := NewDense32(4, 2, make([]float32, 8))
	ro.ReadOnly()
	if a, b := ro.Memo(testKey{1}, compute), ro.Memo(testKey{1}, compute); a != 1 || b != 1 || calls != 1 {
		t.Fatalf("read-only: %v %v after %d computations, want one", a, b, calls)
	}
	if v := ro.Memo(testKey{2}, compute); v != 2 {
		t.Fatalf("another key: %v", v)
	}
	if v := ro.Clone().Memo(testKey{1}, compute); v != 1 { // a read-only clone is the same storage
		t.Fatalf("clone: %v", v)
	}
	if v := ro.RowSlice(1, 3).Memo(testKey{1}, compute); v != 3 {
		t.Fatalf("row slice reused its parent's value: %v", v)
	}
	mut, _ := NewDense32(4, 2, make([]float32, 8))
	calls = 0
	mut.Memo(testKey{1}, compute)
	mut.Memo(testKey{1}, compute)
	if calls != 2 {
		t.Fatalf("mutable storage remembered: %d computations", calls)
	}
}

func TestMarkFinite(t *testing.T) {
	nan, _ := NewDense64(2, 2, []float64{1, 2, 3, 0})
	nan.MarkFinite() // mutable: nothing recorded
	if nan.KnownFinite() {
		t.Fatal("mutable storage recorded as finite")
	}
	ro, _ := NewDense64(2, 2, []float64{1, 2, 3, 4})
	ro.ReadOnly().MarkFinite()
	if !ro.KnownFinite() {
		t.Fatal("read-only storage not recorded")
	}
}
