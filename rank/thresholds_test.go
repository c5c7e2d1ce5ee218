package rank

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomThresholds draws n positives in rank order (score descending,
// lower gallery index first) of one of six shapes: exact ties, spread,
// clustered closer than a float32 rounding, signed zeros with float32
// subnormals, and (shapes 4 and 5) magnitudes near the largest finite
// working value, of one sign or of both (a score range that overflows).
// Like a chunk's arena, the slices have room for one more slot
// (countBucketed reads it).
func randomThresholds[T working](r *rand.Rand, n, shape int) thresholds[T] {
	type th struct {
		s T
		g int32
	}
	ths := make([]th, n)
	used := map[int32]bool{}
	for i := range ths {
		switch shape % 6 {
		case 0:
			ths[i].s = T(r.IntN(7)) / 4 // ties
		case 1:
			ths[i].s = T(r.NormFloat64())
		case 2:
			ths[i].s = T(0.5 + 1e-12*float64(r.IntN(50))) // clustered
		case 3:
			ths[i].s = []T{T(math.Copysign(0, -1)), 0, T(0x1p-140), -T(0x1p-149), 1}[r.IntN(5)]
		case 4:
			ths[i].s = -hugeScore[T]() * T(0.5+r.Float64()/2)
		default:
			ths[i].s = hugeScore[T]() * T(2*r.Float64()-1)
		}
		for {
			g := int32(r.IntN(4 * (n + 50)))
			if !used[g] {
				used[g], ths[i].g = true, g
				break
			}
		}
	}
	slices.SortFunc(ths, func(a, b th) int {
		if precedes(a.s, int(a.g), b.s, int(b.g)) {
			return -1
		}
		return 1
	})
	out := thresholds[T]{score: make([]T, n, n+1), index: make([]int32, n, n+1)}
	for i, x := range ths {
		out.score[i], out.index[i] = x.s, x.g
	}
	return out
}

// hugeScore is near the largest finite value of T.
func hugeScore[T working]() T {
	if _, f32 := any(T(0)).(float32); f32 {
		return T(3e38)
	}
	huge := 1.7e308
	return T(huge)
}

// candidate draws a score near, between, below and above the thresholds'
// (with huge set, also near the largest finite values).
func candidate[T working](r *rand.Rand, th *thresholds[T], huge bool) T {
	s := th.score[r.IntN(len(th.score))]
	if huge && r.IntN(4) == 0 {
		return hugeScore[T]() * T(2*r.Float64()-1)
	}
	switch r.IntN(7) {
	case 0:
		return s
	case 1:
		return T(float64(s) + 1e-13)
	case 2:
		return T(float64(s) - 1e-13)
	case 3:
		return s + 0.3
	case 4:
		return s - 0.3
	case 5:
		return T(math.Copysign(0, float64(-1+2*r.IntN(2))))
	}
	return T(100 * (r.Float64() - 0.5))
}

// linearSlot is the first slot candidate (v, g) precedes (len: none), by
// the tie rule of SPEC §4.3.
func linearSlot[T working](th *thresholds[T], v T, g int) int {
	r := 0
	for r < len(th.score) && !precedes(v, g, th.score[r], int(th.index[r])) {
		r++
	}
	return r
}

func testThresholdSearches[T working](t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 22))
	for trial := range 400 {
		n := 1 + r.IntN(300)
		if trial == 0 {
			n = 70000 // wider than a uint16 bucket table
		}
		base := randomThresholds[T](r, n, trial)
		withBuckets := base
		withBuckets.b = newSlotBuckets(base.score, nil)
		for _, th := range []*thresholds[T]{&base, &withBuckets} {
			for range 200 {
				v, g := candidate(r, th, true), r.IntN(4*(n+50))
				if got, want := th.firstPreceded(v, g), linearSlot(th, v, g); got != want {
					t.Fatalf("trial %d (%d thresholds, buckets %v): firstPreceded(%v, %d) = %d, want %d", trial, n, th.b != nil, v, g, got, want)
				}
				x := float64(candidate(r, th, true))
				want := 0
				for want < n && !(float64(th.score[want]) < x) {
					want++
				}
				if got := th.firstBelow(x); got != want {
					t.Fatalf("trial %d (buckets %v): firstBelow(%v) = %d, want %d", trial, th.b != nil, x, got, want)
				}
				// decideSlot: the exact score lies in [a, b]. It is decided
				// exactly when no positive's score lies in [a, b], and then
				// every score of [a, b] precedes the same first positive.
				a := float64(candidate(r, th, true))
				b := a + []float64{0, 1e-13, 1e-6, 0.2}[r.IntN(4)]
				slot, ok := th.decideSlot(a, b)
				inside := false
				for _, s := range th.score {
					inside = inside || (float64(s) >= a && float64(s) <= b)
				}
				if ok == inside {
					t.Fatalf("trial %d (buckets %v): decideSlot(%v, %v) ok %v with a positive inside %v", trial, th.b != nil, a, b, ok, inside)
				}
				if ok {
					for _, s := range []float64{a, b, a + (b-a)/3} {
						if v := T(s); float64(v) >= a && float64(v) <= b {
							if want := linearSlot(th, v, g); slot != want {
								t.Fatalf("trial %d (buckets %v): decideSlot(%v, %v) = %d, but %v precedes slot %d first", trial, th.b != nil, a, b, slot, v, want)
							}
						}
					}
				}
			}
		}
	}
}

// The threshold searches equal a linear scan of the tie rule
// (TestFirstPrecededEqualsLinearScan): firstPreceded, firstBelow and
// decideSlot, with and without bucket tables (uint16 and int32 tables),
// for thresholds with many exact ties, spread, clustered closer than a
// float32 rounding, signed zeros and subnormals, and near the largest
// finite values (of one sign, or a range that overflows), and candidates
// below, inside, between and above them, in both working precisions.
func TestThresholdSearchesEqualLinearScan(t *testing.T) {
	t.Parallel()
	t.Run("float64", func(t *testing.T) { t.Parallel(); testThresholdSearches[float64](t, 21) })
	t.Run("float32", func(t *testing.T) { t.Parallel(); testThresholdSearches[float32](t, 23) })
}

func testCounting[T working](t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 32))
	var hits []int32
	var fs foldScratch[T]
	for trial := range 300 {
		p := 1 + r.IntN(120)
		if trial%50 == 0 {
			p = minBucketedThresholds + r.IntN(3)
		}
		if trial == 1 {
			p = 66000 // an int32 bucket table
		}
		// Every shape, the huge ones included: where every threshold has
		// one score (or their range overflows) a negative's bucket
		// coordinate (v − lo)·0 can be NaN, which must land in bucket 0.
		th := randomThresholds[T](r, p, trial%6)
		// A block of a row set (a modulo shard now and then), its scores
		// and its runs of eligible negatives between specials.
		stride := 1 + r.IntN(3)*r.IntN(2)
		n := 1 + r.IntN(700)
		lo := r.IntN(40)
		rs := rowSet{lo, lo + (n+5)*stride, stride}
		p0 := r.IntN(5)
		b := rs.block(p0, p0+n)
		row := make([]T, n)
		for j := range row {
			row[j] = candidate(r, &th, false)
		}
		var runs []negRun
		for j := 0; j < n; {
			k := min(n, j+1+r.IntN(90))
			if r.IntN(4) > 0 {
				runs = append(runs, negRun{int32(j), int32(k)})
			}
			j = k + r.IntN(3) // a special between runs, now and then
		}
		want := make([]int32, p+1)
		wantMax := math.Inf(-1)
		for _, run := range runs {
			for j := run[0]; j < run[1]; j++ {
				want[linearSlot(&th, row[j], b.global(int(j)))]++
				wantMax = max(wantMax, float64(row[j]))
			}
		}
		what := fmt.Sprintf("trial %d (%d thresholds, %d runs, stride %d)", trial, p, len(runs), stride)
		// countRun, with and without a bucket table: slot p (preceding no
		// positive) is not counted; the rest must be the scan's.
		for _, buckets := range []bool{false, true} {
			th.b = nil
			if buckets {
				th.b = newSlotBuckets(th.score, nil)
			}
			cnt := make([]int32, p+1)
			gotMax := math.Inf(-1)
			for _, run := range runs {
				m := countRun(&th, cnt, row[run[0]:run[1]], b.global(int(run[0])), b.stride, &hits)
				gotMax = max(gotMax, m)
			}
			if !slices.Equal(cnt[:p], want[:p]) || gotMax != wantMax {
				t.Fatalf("%s countRun buckets %v: counts %v max %v, want %v max %v", what, buckets, cnt[:p], gotMax, want[:p], wantMax)
			}
		}
		// countBucketed (a bucket table, as the plan gives it to queries
		// with many positives): every slot, p included.
		if p >= 2 {
			var buf []uint16
			if l := tableLen(p); l > 0 {
				buf = make([]uint16, l)
			}
			th.b = newSlotBuckets(th.score, buf)
			cnt := make([]int32, p+1)
			m := countBucketed(&th, cnt, row, runs, b, &fs)
			if !slices.Equal(cnt, want) || m != wantMax {
				t.Fatalf("%s countBucketed: counts %v max %v, want %v max %v", what, cnt, m, want, wantMax)
			}
		}
	}
}

// countRun and countBucketed (the row fold's counting) place every eligible
// negative of a row in the slot a linear scan of the tie rule gives and
// return the row's largest negative, for random, tied, clustered and
// signed-zero scores, runs between specials, blocks of modulo shards
// (global indices break the ties), and bucket tables of every width.
func TestCountingEqualsLinearScan(t *testing.T) {
	t.Parallel()
	t.Run("float64", func(t *testing.T) { t.Parallel(); testCounting[float64](t, 31) })
	t.Run("float32", func(t *testing.T) { t.Parallel(); testCounting[float32](t, 33) })
}

func testRankOrder[T working](t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 42))
	rs := new(sorter)
	for trial := range 300 {
		n := 1 + r.IntN(400)
		switch trial {
		case 0:
			n = 5000 // crowded buckets are sorted, not insertion-sorted
		case 1:
			n = 70000 // an int32 table
		}
		sc := make([]T, n)
		for i := range sc {
			switch trial % 5 {
			case 0:
				sc[i] = T(r.NormFloat64())
			case 1:
				sc[i] = T(float64(r.IntN(5)-2) / 4) // exact ties, zeros
			case 2:
				sc[i] = T(0.5 + 1e-12*float64(r.IntN(1000))) // one float32 rounding
			case 3:
				sc[i] = T((r.Float64() - 0.5) * 1e-39) // float32 subnormals and ±0 roundings
			default:
				sc[i] = []T{T(math.Copysign(0, -1)), 0, -1, 1}[r.IntN(4)] // −0 and +0 are equal
			}
		}
		var ex []int32
		if trial%3 == 0 {
			for i := range n {
				if r.IntN(4) == 0 {
					ex = append(ex, int32(i))
				}
			}
		}
		var want []int32
		for i := range sc {
			if _, excluded := slices.BinarySearch(ex, int32(i)); !excluded {
				want = append(want, int32(i))
			}
		}
		slices.SortStableFunc(want, func(a, b int32) int {
			switch {
			case sc[a] > sc[b]:
				return -1
			case sc[a] < sc[b]:
				return 1
			}
			return 0
		})
		if got, _ := rankOrder(rs, sc, ex, false, nil); !slices.Equal(got, want) {
			t.Fatalf("trial %d: order %v, want %v", trial, got, want)
		}
		// With its bucket table: the same order, and the table
		// newSlotBuckets builds from the sorted scores.
		if len(want) == 0 {
			continue
		}
		got, b := rankOrder(rs, sc, ex, true, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: order with table %v, want %v", trial, got, want)
		}
		sorted := make([]T, len(want))
		for r, p := range want {
			sorted[r] = sc[p]
		}
		ref := newSlotBuckets(sorted, nil)
		if b.lo != ref.lo || b.scale != ref.scale || b.nb != ref.nb || !slices.Equal(b.first16, ref.first16) || !slices.Equal(b.first, ref.first) {
			t.Fatalf("trial %d: table %+v, want %+v", trial, b, ref)
		}
	}
}

// rankOrder equals sorting by (score descending, position ascending), for
// exact ties, scores closer than a float32 rounding (long runs of equal
// coarse keys), both signs, −0 against +0, subnormals and excluded
// positions, in both working precisions (TestRankOrderEqualsSort).
func TestRankOrderEqualsSort(t *testing.T) {
	t.Parallel()
	t.Run("float64", func(t *testing.T) { t.Parallel(); testRankOrder[float64](t, 41) })
	t.Run("float32", func(t *testing.T) { t.Parallel(); testRankOrder[float32](t, 43) })
}

// newSlotBuckets builds the bucket table of sorted thresholds desc from
// their scores alone (in buf when it has tableLen(len(desc)) room): the
// reference rankOrder's own table is checked against.
func newSlotBuckets[T working](desc []T, buf []uint16) *slotBuckets {
	nb := min(maxSlotBuckets, slotBucketsPerThreshold*len(desc))
	b := newBuckets(desc[len(desc)-1], desc[0], nb)
	if len(desc) < math.MaxUint16 {
		b.first16 = buf
		if len(buf) != nb+1 {
			b.first16 = make([]uint16, nb+1)
		}
		if b.k32 != nil {
			b.k32.Tab = b.first16
		}
	} else {
		b.first = make([]int32, nb+1)
	}
	b.set(-1, len(desc))
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
