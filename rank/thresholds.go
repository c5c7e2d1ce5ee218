package rank

import (
	"math"
	"slices"
	"sync"
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

var sorterPool = sync.Pool{New: func() any { return new(radixSorter) }}

// radixSorter puts list positions into rank order: score descending, then
// lower gallery index (= lower position) first. An LSD radix sort is stable
// and linear, which matters at 100,000 positives per query.
type radixSorter struct {
	keys, keys2 []uint32
	pos, pos2   []int32
}

// rankOrder returns the positions of vals (list order, the positions in
// excluded left out) in rank order; the result is scratch of rs.
func rankOrder[T working](rs *radixSorter, vals []T, excluded []int32) []int32 {
	// Pass 1: an LSD radix sort on the score rounded to float32 (exact for
	// the float32 protocol): rounding is monotone, so the order is right
	// except inside runs of equal keys, which pass 2 orders exactly.
	rs.keys, rs.pos = rs.keys[:0], rs.pos[:0]
	ex := excluded
	for i, v := range vals {
		if len(ex) > 0 && int(ex[0]) == i {
			ex = ex[1:]
			continue
		}
		rs.keys = append(rs.keys, descKey32(float32(v)))
		rs.pos = append(rs.pos, int32(i))
	}
	n := len(rs.keys)
	if n == 0 {
		return rs.pos
	}
	rs.keys2, rs.pos2 = growTo(rs.keys2, n), growTo(rs.pos2, n)
	const bits = 11
	var count [1 << bits]int32
	for shift := uint(0); shift < 32; shift += bits {
		count = [1 << bits]int32{}
		for _, k := range rs.keys {
			count[(k>>shift)&(1<<bits-1)]++
		}
		if int(count[(rs.keys[0]>>shift)&(1<<bits-1)]) == n {
			continue // every key has this digit: the pass changes nothing
		}
		sum := int32(0)
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for i, k := range rs.keys {
			d := (k >> shift) & (1<<bits - 1)
			rs.keys2[count[d]], rs.pos2[count[d]] = k, rs.pos[i]
			count[d]++
		}
		rs.keys, rs.keys2 = rs.keys2, rs.keys
		rs.pos, rs.pos2 = rs.pos2, rs.pos
	}
	if _, exact := any(vals).([]float32); exact {
		return rs.pos // equal keys are equal scores, already by position
	}
	// Pass 2: exact order inside each run of equal keys.
	before := func(a, b int32) bool { return precedes(vals[a], int(a), vals[b], int(b)) }
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && rs.keys[hi] == rs.keys[lo] {
			hi++
		}
		if hi-lo > 16 {
			slices.SortFunc(rs.pos[lo:hi], func(a, b int32) int {
				if before(a, b) {
					return -1
				}
				if before(b, a) {
					return 1
				}
				return 0
			})
		} else {
			for i := lo + 1; i < hi; i++ {
				p := rs.pos[i]
				j := i
				for j > lo && before(p, rs.pos[j-1]) {
					rs.pos[j] = rs.pos[j-1]
					j--
				}
				rs.pos[j] = p
			}
		}
		lo = hi
	}
	return rs.pos
}

// bucketOrder fills th with the eligible positives of vals (list order;
// gallery indices list, excluded positions ex) in rank order and returns
// their bucket table, built in tab: a counting sort by the table's own
// buckets (descending), then each bucket in exact order (insertion sort;
// a sort for a crowded bucket). One pass over the scores does what a
// radix sort and a second pass over the sorted scores did, and its only
// random accesses are the buckets' counts.
func bucketOrder[T working](rs *radixSorter, th *thresholds[T], vals []T, list, ex []int32, tab []uint16) *slotBuckets {
	n := len(th.score)
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
	nb := min(maxSlotBuckets, slotBucketsPerThreshold*n)
	b := &slotBuckets{lo: float64(lo), nb: nb, first16: tab}
	if hi > lo && !math.IsInf(float64(hi)-float64(lo), 0) {
		b.scale = float64(nb) / (float64(hi) - float64(lo))
	}
	// Counts by bucket, then the first slot of each bucket, from the top:
	// first16[k+1] (the first slot whose bucket is ≤ k) is the number of
	// positives in the buckets above k.
	cnt := tab[1:]
	clear(cnt)
	rs.keys = growTo(rs.keys, n)
	x = ex
	j := 0
	for i, v := range vals {
		if len(x) > 0 && int(x[0]) == i {
			x = x[1:]
			continue
		}
		k := uint32(b.bucket(float64(v)))
		rs.keys[j] = k
		cnt[k]++
		j++
	}
	sum := uint16(0)
	for k := nb - 1; k >= 0; k-- {
		c := cnt[k]
		cnt[k] = sum
		sum += c
	}
	tab[0] = uint16(n)
	// Scatter positions in list order (ascending gallery index), so that
	// equal scores keep the tie rule's order within a bucket.
	rs.pos = growTo(rs.pos, n)
	next := growTo(rs.pos2, nb)
	rs.pos2 = next
	for k := range nb {
		next[k] = int32(cnt[k])
	}
	x = ex
	j = 0
	for i := range vals {
		if len(x) > 0 && int(x[0]) == i {
			x = x[1:]
			continue
		}
		k := rs.keys[j]
		rs.pos[next[k]] = int32(i)
		next[k]++
		j++
	}
	// Each bucket in exact rank order.
	before := func(a, b int32) bool { return precedes(vals[a], int(a), vals[b], int(b)) }
	for k := nb - 1; k >= 0; k-- {
		s, e := int(cnt[k]), n
		if k > 0 {
			e = int(cnt[k-1])
		}
		if e-s > 16 {
			slices.SortFunc(rs.pos[s:e], func(a, b int32) int {
				if before(a, b) {
					return -1
				}
				if before(b, a) {
					return 1
				}
				return 0
			})
			continue
		}
		for i := s + 1; i < e; i++ {
			p := rs.pos[i]
			m := i
			for m > s && before(p, rs.pos[m-1]) {
				rs.pos[m] = rs.pos[m-1]
				m--
			}
			rs.pos[m] = p
		}
	}
	for r, p := range rs.pos[:n] {
		th.score[r], th.index[r], th.pos[r] = vals[p], list[p], p
	}
	return b
}

// descKey32 maps a float32 (not NaN; −0 compared as +0) to a uint32 that
// ascends as the value descends.
func descKey32(f float32) uint32 {
	b := math.Float32bits(f + 0)
	if b>>31 != 0 {
		b = ^b
	} else {
		b |= 1 << 31
	}
	return ^b
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

// newSlotBuckets builds the table of thresholds desc, in buf when it has
// tableLen(len(desc)) room.
func newSlotBuckets[T working](desc []T, buf []uint16) *slotBuckets {
	nb := min(maxSlotBuckets, slotBucketsPerThreshold*len(desc))
	lo, hi := float64(desc[len(desc)-1]), float64(desc[0])
	b := &slotBuckets{lo: lo, nb: nb}
	if len(desc) < math.MaxUint16 {
		b.first16 = buf
		if len(buf) != nb+1 {
			b.first16 = make([]uint16, nb+1)
		}
	} else {
		b.first = make([]int32, nb+1)
	}
	b.set(-1, len(desc))
	if hi > lo && !math.IsInf(hi-lo, 0) {
		b.scale = float64(nb) / (hi - lo)
	}
	// Slots descend in score, so their buckets do not increase: walking
	// them from the last, slot r is the last one above every bucket below
	// its own.
	k := 0
	for r := len(desc) - 1; r >= 0 && k < nb; r-- {
		for bk := b.bucket(float64(desc[r])); k < bk; k++ {
			b.set(k, r+1)
		}
	}
	for ; k < nb; k++ {
		b.set(k, 0)
	}
	return b
}

func (b *slotBuckets) set(k, r int) {
	if b.first16 != nil {
		b.first16[k+1] = uint16(r)
	} else {
		b.first[k+1] = int32(r)
	}
}

// at is the first slot whose bucket is ≤ k (k = −1: len).
func (b *slotBuckets) at(k int) int {
	if b.first16 != nil {
		return int(b.first16[k+1])
	}
	return int(b.first[k+1])
}

func (b *slotBuckets) bucket(v float64) int {
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
