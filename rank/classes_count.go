package rank

import "slices"

// consumeClassesBucketed is consumeClasses for the common case of the
// label path (the demo: every query has hundreds of positives and
// thousands of negatives): no candidates kept, per-worker counters, a
// bucket table, and no exclusion inside the row. It gives the same
// counters bit for bit, with fewer branches per negative:
//
//   - a negative that precedes no positive is counted in the spare slot
//     len(ordScore) of its query's counters (never read: classResult reads
//     slots 0..P−1), so the "precedes the last positive" test goes;
//   - a negative in a bucket that holds no threshold takes the bucket's
//     slot directly (every threshold above it is in a higher bucket, every
//     one below in a lower one, slotBuckets), and only a bucket that holds
//     thresholds is searched, over exactly those thresholds.
//
// The error for a non-finite negative is that of consumeClasses: without
// exclusions in the row its first non-finite non-positive entry.
func consumeClassesBucketed[T float32 | float64](s *scorer, part *partial, q, g0 int, row []T) error {
	st, c := s.cls, s.p.Classes
	k := c.Query[q]
	os, oi, b := st.ordScore[q], st.ordIndex[q], st.buckets[q]
	P := len(os)
	cnt := part.cbeaten[st.off[q] : st.off[q]+P+1]
	first := b.first16
	nb := b.nb
	top := float64(nb - 1)
	lo, scale := b.lo, b.scale
	neg := s.o.Similarity == SquaredL2
	best, hasBest := part.best[q], part.hasBest[q]
	gal := c.Gallery[g0 : g0+len(row)]
	for j, x := range row {
		if gal[j] == k { // an eligible positive: already placed by the sort
			continue
		}
		v := float64(x)
		if neg {
			v = -v
		}
		if v-v != 0 {
			return s.checkFinite(v, q, g0+j)
		}
		if !hasBest || v > best {
			best, hasBest = v+0, true
		}
		// bucket(v), inlined (slotBuckets.bucket).
		y := (v - lo) * scale
		kb := 0
		if y >= top {
			kb = nb - 1
		} else if y >= 0 {
			kb = int(y)
		}
		r := int(first[kb])
		hi := P // slot P: precedes no positive
		if kb > 0 {
			hi = int(first[kb-1])
		}
		if hi > r {
			// Thresholds r..hi−1 share v's bucket; slot hi is preceded
			// (or is the spare slot): a lower bound over n = hi−r+1 slots
			// whose last one is known to qualify.
			g := g0 + j
			n := hi - r + 1
			for n > 1 {
				half := n >> 1
				mid := r + half
				if !(v > os[mid-1] || (v == os[mid-1] && g < int(oi[mid-1]))) {
					r = mid
				}
				n -= half
			}
		}
		cnt[r]++
	}
	part.best[q], part.hasBest[q] = best, hasBest
	return nil
}

// bucketedRow reports whether query q's row of gallery rows [g0, g0+n) can
// take consumeClassesBucketed.
func (s *scorer) bucketedRow(part *partial, q, g0, n int) bool {
	if noBucketedRows || part.cbeaten == nil || part.all != nil || part.top != nil || s.cls.buckets[q] == nil || s.cls.buckets[q].first16 == nil {
		return false
	}
	if s.p.Exclusions == nil {
		return true
	}
	ex := s.p.Exclusions[q]
	i, _ := slices.BinarySearch(ex, g0)
	return i == len(ex) || ex[i] >= g0+n
}

// noBucketedRows turns consumeClassesBucketed off (tests and benchmarks
// compare both paths).
var noBucketedRows = false

// Bucket tables: about slotBucketsPerThreshold buckets per positive, so
// that most buckets hold no threshold and most negatives are placed without
// a search, up to maxSlotBuckets per query (16 KiB).
const (
	slotBucketsPerThreshold = 4
	maxSlotBuckets          = 4096
)
