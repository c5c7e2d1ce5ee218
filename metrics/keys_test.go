package metrics

import (
	"slices"
	"testing"
)

// Every query of a run shares one read-only keys slice (not a copy per
// row); it equals Keys(ks), follows a change of ks, and an append to one
// row's keys leaves the others' alone.
func TestQueriesShareTheirKeys(t *testing.T) {
	ks := []int{1, 5}
	a := Query([]int{1, 3}, []float64{1, 1}, ks, Exponential)
	b := Query([]int{2}, []float64{2}, ks, Linear)
	if !slices.Equal(a.Keys, Keys(ks)) || &a.Keys[0] != &b.Keys[0] {
		t.Fatalf("keys %q and %q: equal to Keys %v, shared %v", a.Keys, b.Keys, slices.Equal(a.Keys, Keys(ks)), &a.Keys[0] == &b.Keys[0])
	}
	grown := append(a.Keys, "extra")
	if &grown[0] == &a.Keys[0] || len(b.Keys) != len(Keys(ks)) {
		t.Fatal("an append wrote into the shared keys")
	}
	c := Query([]int{1}, []float64{1}, []int{3}, Exponential)
	if !slices.Equal(c.Keys, Keys([]int{3})) {
		t.Fatalf("keys of ks [3]: %q", c.Keys)
	}
	if d := Query([]int{1}, []float64{1}, ks, Exponential); !slices.Equal(d.Keys, Keys(ks)) {
		t.Fatalf("keys after a change of ks and back: %q", d.Keys)
	}
}
