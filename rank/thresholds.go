package rank

import (
	"math"
	"slices"
	"sync"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
)

// thresholds are one query's eligible positives in rank order (score
// descending, lower gallery index first): rank(p_r) = 1 + r + (negatives
// preceding p_r), so a gallery pass only places each negative in the slot
// of the first positive it precedes (SPEC §4.3 term by term).
type thresholds[T working] struct {
	score []T     // rank order
	index []int32 // gallery index of each
	pos   []int32 // position of each in the query's positive list
	b     *slotBuckets
}

// precedes reports whether candidate (sa, ia) ranks before (sb, ib).
func precedes[T working](sa T, ia int, sb T, ib int) bool {
	return sa > sb || (sa == sb && ia < ib)
}

// firstPreceded is the first slot that candidate (v, g) precedes (len: none).
// The bucket window holds it; a branch-free lower bound finds it there.
func (t *thresholds[T]) firstPreceded(v T, g int) int {
	lo, hi := 0, len(t.score)
	if t.b != nil {
		lo, hi = t.b.window(float64(v), hi)
	}
	sc, ix := t.score, t.index
	for n := hi - lo + 1; n > 1; {
		half := n >> 1
		mid := lo + half
		if !(v > sc[mid-1] || (v == sc[mid-1] && int32(g) < ix[mid-1])) {
			lo = mid
		}
		n -= half
	}
	return lo
}

// firstBelow is the first slot whose score is below x (len: none).
func (t *thresholds[T]) firstBelow(x float64) int {
	lo, hi := 0, len(t.score)
	if t.b != nil {
		lo, hi = t.b.window(x, hi)
	}
	sc := t.score
	for n := hi - lo + 1; n > 1; {
		half := n >> 1
		mid := lo + half
		if !(float64(sc[mid-1]) < x) {
			lo = mid
		}
		n -= half
	}
	return lo
}

// decideSlot places a candidate whose exact score lies in [a, b] (a cheap
// score and its bound, rounded outward): the slot it certainly precedes
// first, or ok false when a positive's score lies in [a, b] (screen.md §5).
func (t *thresholds[T]) decideSlot(a, b float64) (slot int, ok bool) {
	r := t.firstBelow(a) // every slot from r on scores below a ≤ s: preceded
	// Slots before r score at least a; none may lie in [a, b].
	return r, r == 0 || float64(t.score[r-1]) > b
}

var sorterPool = sync.Pool{New: func() any { return new(sorter) }}

// sorter holds the scratch of rankOrder.
type sorter struct {
	keys, cnt []int32
	pos       []int32
}

// rankOrder returns the positions of vals (list order; the positions in ex
// left out) in rank order — score descending, then lower position (lower
// gallery index) first — as scratch of rs. It is a counting sort over the
// buckets of a bucket table of their scores (uniform in score, about
// slotBucketsPerThreshold per value), then each bucket in exact order: one
// pass over the scores and only the buckets' counts accessed at random.
// With table set it also returns that table (in tab when it has
// tableLen room), which the counts give for free.
func rankOrder[T working](rs *sorter, vals []T, ex []int32, table bool, tab []uint16) ([]int32, *slotBuckets) {
	n := len(vals) - len(ex)
	lo, hi := T(math.Inf(1)), T(math.Inf(-1))
	x := ex
	for i, v := range vals {
		if len(x) > 0 && int(x[0]) == i {
			x = x[1:]
			continue
		}
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	nb := max(1, min(maxSlotBuckets, slotBucketsPerThreshold*n))
	b := newBuckets(lo, hi, nb)
	// Counts by bucket, then each bucket's first slot, from the top: the
	// number of values in the buckets above it.
	rs.keys, rs.cnt, rs.pos = growTo(rs.keys, len(vals)), growTo(rs.cnt, nb), growTo(rs.pos, n)
	keys, cnt := rs.keys, rs.cnt
	clear(cnt)
	x = ex
	for i, v := range vals {
		if len(x) > 0 && int(x[0]) == i {
			x = x[1:]
			continue
		}
		k := int32(b.bucket(float64(v)))
		keys[i] = k
		cnt[k]++
	}
	// With a 16-bit table, it is written in the same pass: first[k+1],
	// the first slot whose bucket is ≤ k, is the start of bucket k;
	// first[0] = n.
	var t16 []uint16
	if table && n < math.MaxUint16 {
		if len(tab) != nb+1 {
			tab = make([]uint16, nb+1)
		}
		t16 = tab[:nb+1]
	}
	sum := int32(0)
	if t16 != nil {
		for k := nb - 1; k >= 0; k-- {
			t16[k+1] = uint16(sum)
			cnt[k], sum = sum, sum+cnt[k]
		}
		t16[0] = uint16(n)
	} else {
		for k := nb - 1; k >= 0; k-- {
			cnt[k], sum = sum, sum+cnt[k]
		}
	}
	// The positions in list order (ascending gallery index), so that
	// equal scores keep the tie rule's order within a bucket.
	x = ex
	for i := range vals {
		if len(x) > 0 && int(x[0]) == i {
			x = x[1:]
			continue
		}
		k := keys[i]
		rs.pos[cnt[k]] = int32(i)
		cnt[k]++
	}
	// cnt[k] is now the end of bucket k, and the start of bucket k − 1
	// (bucket nb − 1 starts at 0). Each bucket in exact rank order: a walk
	// over the slots finds the buckets holding several values (most hold
	// one: about slotBucketsPerThreshold buckets per value).
	pos := rs.pos[:n]
	before := func(a, b int32) bool { return precedes(vals[a], int(a), vals[b], int(b)) }
	for s := 0; s < n; {
		k, e := keys[pos[s]], s+1
		for e < n && keys[pos[e]] == k {
			e++
		}
		switch {
		case e-s > 16:
			slices.SortStableFunc(pos[s:e], func(a, b int32) int {
				if before(a, b) {
					return -1
				}
				if before(b, a) {
					return 1
				}
				return 0
			})
		case e-s > 1:
			for i := s + 1; i < e; i++ {
				p, m := pos[i], i
				for m > s && before(p, pos[m-1]) {
					pos[m] = pos[m-1]
					m--
				}
				pos[m] = p
			}
		}
		s = e
	}
	if !table {
		return pos, nil
	}
	if t16 != nil {
		b.first16 = t16
		if b.k32 != nil {
			b.k32.Tab = t16
		}
		return pos, b
	}
	// cnt[k] is the start of bucket k − 1: first[k] (0 for the top).
	t32 := make([]int32, nb+1)
	copy(t32, cnt[:nb])
	b.first = t32
	return pos, b
}

// slotBuckets narrows the searches over one query's thresholds: the score
// range is cut into equal-width buckets, and a value is compared only with
// the thresholds of its own bucket. bucket() is monotone non-decreasing
// (subtraction, positive scaling and truncation preserve order), so a
// threshold in a lower bucket is strictly below the value and one in a
// higher bucket strictly above: only equal buckets need exact comparisons.
type slotBuckets struct {
	lo, scale float64
	nb        int
	// k32 is the geometry of float32 thresholds, bucketed in float32
	// arithmetic (kernel.PlaceBuckets32 computes the same buckets 16 at a
	// time); Tab is first16. Nil for float64 thresholds.
	k32 *kernel.Buckets32
	// first[k+1]: the first rank slot whose bucket is ≤ k (len(desc) when
	// none); first[0] = len(desc), so that bucket k's slots lie in
	// [first[k+1], first[k]]. first16 when every slot fits 16 bits.
	first   []int32
	first16 []uint16
}

// Bucket tables: about slotBucketsPerThreshold buckets per positive, so that
// most buckets hold no threshold and most values are placed without a
// search, up to maxSlotBuckets per query.
const (
	slotBucketsPerThreshold = 4
	maxSlotBuckets          = 1 << 20
	minBucketedThresholds   = 32 // fewer: a plain binary search
)

// tableLen is the uint16 table of p thresholds (0: none, or wider slots).
func tableLen(p int) int {
	if p < minBucketedThresholds || p >= math.MaxUint16 {
		return 0
	}
	return min(maxSlotBuckets, slotBucketsPerThreshold*p) + 1
}

// at is the first slot whose bucket is ≤ k (k = −1: len).
func (b *slotBuckets) at(k int) int {
	if b.first16 != nil {
		return int(b.first16[k+1])
	}
	return int(b.first[k+1])
}

// newBuckets is the geometry of nb buckets over [lo, hi].
func newBuckets[T working](lo, hi T, nb int) *slotBuckets {
	b := &slotBuckets{lo: float64(lo), nb: nb}
	if hi > lo && !math.IsInf(float64(hi)-float64(lo), 0) {
		b.scale = float64(nb) / (float64(hi) - float64(lo))
	}
	if _, ok := any(lo).(float32); ok {
		// A scale beyond float32 becomes +Inf: still monotone (the lowest
		// threshold in bucket 0, everything above it in the top bucket).
		b.k32 = &kernel.Buckets32{Lo: float32(lo), Scale: float32(b.scale), Top: float32(nb - 1)}
	}
	return b
}

// bucket is the bucket of v. For float32 thresholds v is rounded to float32
// first: rounding is monotone and no float32 threshold lies strictly
// between v and its rounding, so a threshold in a higher bucket still
// scores at least v and one in a lower bucket below v (firstBelow's
// bounds are float64).
func (b *slotBuckets) bucket(v float64) int {
	if b.k32 != nil {
		return b.k32.Bucket32(float32(v))
	}
	x := (v - b.lo) * b.scale
	switch {
	case !(x >= 0): // below every threshold (or a zero range)
		return 0
	case x >= float64(b.nb-1):
		return b.nb - 1
	}
	return int(x)
}

// window returns the slots [lo, hi] that hold the first slot a value v
// stands before: slots before lo are in higher buckets (above v), slots
// from hi on in lower ones (below v; hi = n when there are none).
func (b *slotBuckets) window(v float64, n int) (lo, hi int) {
	k := b.bucket(v)
	return b.at(k), b.at(k - 1)
}
