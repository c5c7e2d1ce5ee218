package demo

import "sync"

// atanRatio is atanUnit(float64(p) / float64(q)) for 0 ≤ p ≤ q ≤ 255,
// q > 0: pixel differences give only these ratios, so the values are
// computed once into a table (the same operations, so the same bits) and
// the per-pixel gradient costs a lookup instead of an 18-term series.
func atanRatio(p, q int) float64 {
	return atanTable()[p<<8|q]
}

var atanTable = sync.OnceValue(func() *[1 << 16]float64 {
	var t [1 << 16]float64
	for q := 1; q <= 255; q++ {
		for p := 0; p <= q; p++ {
			t[p<<8|q] = atanUnit(float64(p) / float64(q))
		}
	}
	return &t
})
