package kernel

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// placeCase is thresholds in rank order (score descending, index
// ascending) with their bucket table, built the way rank builds it.
type placeCase struct {
	b      Buckets32
	sc     []float32 // one entry past the last threshold
	ix     []int32
	nb, nt int
}

func newPlaceCase(sc []float32, ix []int32, perThreshold int) *placeCase {
	n := len(sc)
	ord := make([]int, n)
	for i := range ord {
		ord[i] = i
	}
	slices.SortFunc(ord, func(a, b int) int {
		if c := cmp.Compare(sc[b], sc[a]); c != 0 {
			return c
		}
		return cmp.Compare(ix[a], ix[b])
	})
	c := &placeCase{nt: n, sc: make([]float32, n+1), ix: make([]int32, n+1)}
	for r, i := range ord {
		c.sc[r], c.ix[r] = sc[i], ix[i]
	}
	lo, hi := c.sc[n-1], c.sc[0]
	c.nb = max(1, perThreshold*n)
	c.b.Lo, c.b.Top = lo, float32(c.nb-1)
	if w := float64(hi) - float64(lo); hi > lo && !math.IsInf(w, 0) {
		c.b.Scale = float32(float64(c.nb) / w)
	}
	c.b.Tab = make([]uint16, c.nb+1)
	c.b.Tab[0] = uint16(n)
	r := 0
	for k := c.nb - 1; k >= 0; k-- {
		for r < n && c.b.Bucket32(c.sc[r]) > k {
			r++
		}
		c.b.Tab[k+1] = uint16(r)
	}
	return c
}

// TestPlaceBuckets32 checks every implementation against the definition:
// the slot of a score is the number of thresholds it does not precede, and
// −1 is given only when its bucket holds more than PlaceWidth thresholds.
func TestPlaceBuckets32(t *testing.T) {
	defer Use("auto")
	r := rand.New(rand.NewPCG(3, 9))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32, 1e-44, 0}
	shapes := []struct {
		name  string
		nt    int
		score func() float32
	}{
		{"normal", 40, func() float32 { return float32(r.NormFloat64()) }},
		{"one", 1, func() float32 { return float32(r.NormFloat64()) }},
		{"ties", 300, func() float32 { return float32(r.IntN(7)) / 4 }},
		{"equal", 33, func() float32 { return 0.5 }},
		{"subnormal", 50, func() float32 { return float32(r.NormFloat64() * 1e-42) }},
		{"wide", 60, func() float32 { return float32(r.NormFloat64() * 3e38) }},
		{"infinite", 35, func() float32 { return special[1+r.IntN(2)] }},
	}
	for _, name := range Available() {
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		for _, sh := range shapes {
			for _, per := range []int{1, 4} {
				sc, ix := make([]float32, sh.nt), make([]int32, sh.nt)
				for i := range sc {
					sc[i], ix[i] = sh.score(), int32(r.IntN(1000))
				}
				c := newPlaceCase(sc, ix, per)
				for _, n := range []int{0, 1, 15, 16, 17, 100, 1000} {
					v, g := make([]float32, n), make([]int32, n)
					for j := range v {
						switch r.IntN(4) {
						case 0: // a threshold's own score
							k := r.IntN(c.nt)
							v[j] = c.sc[k]
						case 1:
							v[j] = special[r.IntN(len(special))]
						default:
							v[j] = sh.score()
						}
						g[j] = int32(r.IntN(1000))
					}
					slot := make([]int32, n)
					PlaceBuckets32(&c.b, v, g, c.sc, c.ix, slot)
					want := make([]int32, n)
					placeBuckets32Generic(&c.b, v, g, c.sc, c.ix, want)
					for j := range v {
						if slot[j] != want[j] {
							t.Fatalf("%s/%s/%d/n=%d: score %g (index %d): slot %d, generic %d", name, sh.name, per, n, v[j], g[j], slot[j], want[j])
						}
						k := c.b.Bucket32(v[j])
						several := int(c.b.Tab[k]-c.b.Tab[k+1]) > PlaceWidth
						if slot[j] == -1 {
							if !several {
								t.Fatalf("%s/%s: score %g: −1 for a bucket of at most PlaceWidth thresholds", name, sh.name, v[j])
							}
							continue
						}
						if several {
							t.Fatalf("%s/%s: score %g placed in a bucket of more than PlaceWidth thresholds", name, sh.name, v[j])
						}
						ref := 0
						for ; ref < c.nt; ref++ {
							if s := c.sc[ref]; v[j] > s || (v[j] == s && g[j] < c.ix[ref]) {
								break
							}
						}
						if int(slot[j]) != ref {
							t.Fatalf("%s/%s/%d: score %g (index %d): slot %d, want %d", name, sh.name, per, v[j], g[j], slot[j], ref)
						}
					}
				}
			}
		}
	}
}

func BenchmarkPlaceBuckets32(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	sc, ix := make([]float32, 1000), make([]int32, 1000)
	for i := range sc {
		sc[i], ix[i] = float32(r.NormFloat64()), int32(i)
	}
	c := newPlaceCase(sc, ix, 4)
	v, g, slot := make([]float32, 4096), make([]int32, 4096), make([]int32, 4096)
	for j := range v {
		v[j], g[j] = float32(r.NormFloat64()), int32(j)
	}
	for _, name := range Available() {
		b.Run(name, func(b *testing.B) {
			defer Use("auto")
			if err := Use(name); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(4 * len(v)))
			for b.Loop() {
				PlaceBuckets32(&c.b, v, g, c.sc, c.ix, slot)
			}
		})
	}
}
