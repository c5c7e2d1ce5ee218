package rank

import (
	"math"
	"math/rand/v2"
	"testing"
)

// up and down are math.Nextafter toward ±Inf for every non-NaN value.
func TestUpDownAreNextafter(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	vals := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64, 0x1p-1074, -0x1p-1074, 1, -1}
	for range 1000 {
		vals = append(vals, math.Float64frombits(r.Uint64()))
	}
	for _, x := range vals {
		if math.IsNaN(x) {
			continue
		}
		if u, want := up(x), math.Nextafter(x, math.Inf(1)); math.Float64bits(u) != math.Float64bits(want) && !(u == 0 && want == 0) {
			t.Fatalf("up(%v) = %v, want %v", x, u, want)
		}
		if d, want := down(x), math.Nextafter(x, math.Inf(-1)); math.Float64bits(d) != math.Float64bits(want) && !(d == 0 && want == 0) {
			t.Fatalf("down(%v) = %v, want %v", x, d, want)
		}
	}
}
