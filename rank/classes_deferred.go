package rank

import "math"

// Deferred counting of label runs. The gallery pass visits a query once per
// gallery block, and between two visits every other query's counting state
// (bucket table, rank-ordered positives, counters: about 12 KiB at the
// demo's 500 positives) passes through the cache, so each visit reloads it.
// When every pair's score fits in a bounded buffer, the pass instead only
// checks and stores its rows, and each query's whole row is counted once,
// with its state hot, when its result is built (in parallel over queries,
// by merge). The counts, the nearest negative and every error are those of
// consumeClasses: a row is checked for non-finite scores during the pass in
// the same order, and counting uses the same placement rule.

// maxDeferredBytes bounds the score buffer of deferred counting (a
// variable for tests).
var maxDeferredBytes = 64 << 20

// noDeferredRows turns deferred counting off (tests compare both paths).
var noDeferredRows = false

// deferRows reports whether the label pass defers counting: no candidates
// are kept and the buffer is small enough.
func (s *scorer) deferRows() bool {
	return !noDeferredRows && !s.o.FullRanking && s.o.TopN == 0 && s.ng > 0 &&
		s.nq <= maxDeferredBytes/8/s.ng
}

// consumeDeferred checks query q's row of block scores as consumeClasses
// would (the first non-finite excluded pair or negative, in row order, is
// the error; a positive's score was checked when positives were scored) and
// stores it.
func consumeDeferred[T float32 | float64](s *scorer, q, g0 int, row []T) error {
	st, c := s.cls, s.p.Classes
	dst := st.rows[q*st.ng+g0 : q*st.ng+g0+len(row)]
	for j, x := range row {
		if x-x != 0 {
			g := g0 + j
			if c.Gallery[g] == c.Query[q] && !s.excludedPair(q, g) {
				continue // a positive: never counted
			}
			v := float64(x)
			if s.o.Similarity == SquaredL2 {
				v = -v
			}
			return s.checkFinite(v, q, g)
		}
		dst[j] = float64(x)
	}
	return nil
}

func (s *scorer) excludedPair(q, g int) bool {
	if s.p.Exclusions == nil {
		return false
	}
	ex := s.p.Exclusions[q]
	lo, hi := 0, len(ex)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ex[m] < g {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(ex) && ex[lo] == g
}

// countDeferred counts query q's stored row into its counters
// (st.beaten[q]) and records its nearest negative in the first partial,
// as the pass would have: the same negatives, the same slots.
func (s *scorer) countDeferred(q int, parts []*partial) {
	st, c := s.cls, s.p.Classes
	if st.rows == nil || st.ordScore[q] == nil {
		return
	}
	row := st.rows[q*st.ng : (q+1)*st.ng]
	k := c.Query[q]
	os, oi, b, cnt := st.ordScore[q], st.ordIndex[q], st.buckets[q], st.beaten[q]
	P := len(os)
	lastScore, lastIndex := math.Inf(1), -1 // no eligible positive: nothing counts
	if P > 0 {
		lastScore, lastIndex = os[P-1], int(oi[P-1])
	}
	neg := s.o.Similarity == SquaredL2
	var excl []int
	if s.p.Exclusions != nil {
		excl = s.p.Exclusions[q]
	}
	exPtr, exNext := 0, -1 // exNext: the next excluded gallery row, −1 when none
	if len(excl) > 0 {
		exNext = excl[0]
	}
	best, hasBest := 0.0, false
	bucketed := b != nil && b.first16 != nil
	var first []uint16
	var nb int
	var top, lo, scale float64
	if bucketed {
		first, nb = b.first16, b.nb
		top, lo, scale = float64(nb-1), b.lo, b.scale
	}
	for g, x := range row {
		if g == exNext {
			exPtr++
			exNext = -1
			if exPtr < len(excl) {
				exNext = excl[exPtr]
			}
			continue // excluded: never counts
		}
		if c.Gallery[g] == k {
			continue // a positive: placed by the sort
		}
		v := x
		if neg {
			v = -v
		}
		if !hasBest || v > best {
			best, hasBest = v+0, true
		}
		if !bucketed {
			if v > lastScore || (v == lastScore && g < lastIndex) {
				cnt[firstPreceded(os, oi, b, v, g)]++
			}
			continue
		}
		// As consumeClassesBucketed: slot P takes the negatives that
		// precede no positive.
		y := (v - lo) * scale
		kb := 0
		if y >= top {
			kb = nb - 1
		} else if y >= 0 {
			kb = int(y)
		}
		r := int(first[kb])
		hi := P
		if kb > 0 {
			hi = int(first[kb-1])
		}
		if hi <= r+1 {
			// No threshold (hi = r) or one (hi = r+1) in the bucket, the
			// common cases: decided without a branch. Slot r is read even
			// when the bucket is empty (clamped to a real slot), and then
			// hi − r = 0 discards the comparison.
			ri := min(r, P-1)
			sv := os[ri]
			pre := b2i(v > sv) | b2i(v == sv)&b2i(g < int(oi[ri]))
			r += (hi - r) * (1 - pre)
		} else {
			// Thresholds r..hi−1 share v's bucket; slot hi is preceded
			// (or is the spare slot): a lower bound over n = hi−r+1 slots
			// whose last one is known to qualify.
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
	parts[0].best[q], parts[0].hasBest[q] = best, hasBest
}
