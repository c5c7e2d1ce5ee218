package kernel

// Buckets32 is the bucket table PlaceBuckets32 places scores through: a
// score v falls in bucket k = trunc(min(max((v − Lo)·Scale, 0), Top)), all
// in float32 arithmetic (a NaN product is bucket 0), and Tab[k+1] ≤ slot ≤
// Tab[k] bounds the slots of the thresholds in bucket k (so Tab is
// non-increasing, Tab[0] at most the number of thresholds). The caller
// builds Tab with Bucket32 so that table and placement agree to the last
// bit.
type Buckets32 struct {
	Lo, Scale, Top float32
	Tab            []uint16
}

// Bucket32 is the bucket of v (the arithmetic of PlaceBuckets32).
func (b *Buckets32) Bucket32(v float32) int {
	x := (v - b.Lo) * b.Scale
	if !(x >= 0) {
		x = 0
	}
	if x > b.Top {
		x = b.Top
	}
	return int(x)
}

// PlaceWidth is the most thresholds a bucket may hold for PlaceBuckets32
// to place a score in it.
const PlaceWidth = 3

// PlaceBuckets32 places scores v (gallery indices g) among thresholds
// sorted in rank order (scores sc, indices ix; a score precedes threshold t
// when v > sc[t], or v = sc[t] and g < ix[t]). slot[j] is the first
// threshold v[j] precedes, found without a search when v[j]'s bucket holds
// at most PlaceWidth thresholds, and −1 when it holds more (the caller
// searches).
func PlaceBuckets32(b *Buckets32, v []float32, g []int32, sc []float32, ix []int32, slot []int32) {
	n := len(v)
	_, _ = g[:n], slot[:n]
	if n == 0 {
		return
	}
	j := 0
	if placeSIMD() && n >= 16 {
		j = n &^ 15
		placeBuckets32SIMD(b, v[:j], g[:j], sc, ix, slot[:j])
	}
	placeBuckets32Generic(b, v[j:], g[j:n], sc, ix, slot[j:n])
}

func placeBuckets32Generic(b *Buckets32, v []float32, g []int32, sc []float32, ix []int32, slot []int32) {
	tab := b.Tab
	for j, x := range v {
		k := b.Bucket32(x)
		r, h := int(tab[k+1]), int(tab[k])
		if h-r > PlaceWidth {
			slot[j] = -1
			continue
		}
		// The thresholds the score does not precede are a prefix of the
		// bucket's: count them without a branch on the data, so that
		// consecutive placements overlap.
		s := r
		for t := r; t < h; t++ {
			y, i := sc[t], ix[t]
			s += 1 - (b2i(x > y) | (b2i(x == y) & b2i(g[j] < i)))
		}
		slot[j] = int32(s)
	}
}
