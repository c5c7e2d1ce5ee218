package stats

import (
	"context"
	"math/bits"
	"math/rand/v2"
)

// MaxExactN bounds exact enumeration (2^n sign vectors) regardless of N.
const MaxExactN = 30

// SignFlipResult is the outcome of the paired randomization test.
type SignFlipResult struct {
	P float64
	// Exact says every one of the 2^n sign vectors was enumerated (then P
	// = #{vectors with |Σ s_i d_i| ≥ |Σ d_i|} / 2^n, the exact permutation
	// p-value); otherwise P = (1 + #{draws at least as extreme}) / (1 + N)
	// over N random sign vectors, which is never 0.
	Exact bool
	// ExactSums says the sums were compared exactly (see fixedVec).
	ExactSums bool
}

// SignFlipTest is the two-sided paired randomization test of H0: the
// distribution of d = a − b is symmetric about 0 (SPEC §13). Under H0 every
// sign vector s is equally likely, so the observed |Σ d_i| is compared with
// |Σ s_i d_i|. When 2^n ≤ n_perm the 2^n vectors are enumerated exactly;
// otherwise n_perm vectors are drawn from r (one bit per sign, 64 signs per
// draw). Sums rather than means are compared, in exact integer arithmetic,
// so ties are decided exactly. Every d_i = 0 gives p = 1.
func SignFlipTest(d []float64, nPerm int, r *rand.Rand) (SignFlipResult, error) {
	return SignFlipTestContext(context.Background(), d, nPerm, r)
}

// SignFlipTestContext is SignFlipTest that gives up with ctx's error once
// ctx is done (polled every 64 sign vectors).
func SignFlipTestContext(ctx context.Context, d []float64, nPerm int, r *rand.Rand) (SignFlipResult, error) {
	return signFlip(ctx, d, nPerm, r.Uint64)
}

// SignFlipTestSource is SignFlipTestContext drawing from src: with
// src = NewSource(seed, labels...) and r = Stream(seed, labels...) both give
// the same result.
func SignFlipTestSource(ctx context.Context, d []float64, nPerm int, src *Source) (SignFlipResult, error) {
	return signFlip(ctx, d, nPerm, src.Uint64)
}

func signFlip(ctx context.Context, d []float64, nPerm int, r func() uint64) (SignFlipResult, error) {
	n := len(d)
	if n == 0 {
		return SignFlipResult{}, ErrEmpty
	}
	if allZero(d) {
		return SignFlipResult{P: 1, Exact: true, ExactSums: true}, nil
	}
	fv := newFixed(d)
	exact := n <= MaxExactN && uint64(1)<<n <= uint64(max(nPerm, 0))
	if !exact && nPerm < 1 {
		return SignFlipResult{}, errorf("permutations must be >= 1")
	}
	var count, total uint64
	var err error
	if fv.exact {
		var obs int128
		for _, v := range fv.v {
			obs = obs.add(v)
		}
		obs = obs.abs()
		tab := newFlipTable(fv.v)
		count, total, err = flips(ctx, n, nPerm, exact, r, func(words []uint64) bool {
			return tab.sum(words).abs().cmp(obs) >= 0
		})
	} else {
		var obs float64
		for _, v := range d {
			obs += v
		}
		obs = abs(obs)
		count, total, err = flips(ctx, n, nPerm, exact, r, func(words []uint64) bool {
			var s float64
			for i, v := range d {
				if words[i>>6]>>(i&63)&1 == 1 {
					v = -v
				}
				s += v
			}
			return abs(s) >= obs
		})
	}
	if err != nil {
		return SignFlipResult{}, err
	}
	res := SignFlipResult{Exact: exact, ExactSums: fv.exact}
	if exact {
		res.P = float64(count) / float64(total)
	} else {
		res.P = float64(1+count) / float64(1+total)
	}
	return res, nil
}

// flips runs extreme over every sign vector (exact) or nPerm random ones;
// bit i of words set flips d_i. It returns the count of extreme vectors and
// the number of vectors tried.
func flips(ctx context.Context, n, nPerm int, exact bool, r func() uint64, extreme func(words []uint64) bool) (count, total uint64, err error) {
	words := make([]uint64, (n+63)/64)
	if exact { // n ≤ MaxExactN < 64: one word enumerates every vector
		total = uint64(1) << n
		for m := uint64(0); m < total; m++ {
			if m%(1<<16) == 0 {
				if err := ctx.Err(); err != nil {
					return 0, 0, err
				}
			}
			words[0] = m
			if extreme(words) {
				count++
			}
		}
		return count, total, nil
	}
	for k := 0; k < nPerm; k++ {
		if k%64 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
		}
		for w := range words {
			words[w] = r()
		}
		if extreme(words) {
			count++
		}
	}
	return count, uint64(nPerm), nil
}

// flippedSum is Σ ±v_i with v_i negated where its bit is set, branch-free
// (random signs would defeat branch prediction): with m all ones for a
// flipped term, −v = (v XOR m) + 1 in two's complement.
func flippedSum(v []int128, words []uint64) int128 {
	var hi, lo uint64
	for w, bitsW := range words {
		end := min(len(v), (w+1)*64)
		for _, x := range v[w*64 : end] {
			m := -(bitsW & 1)
			bitsW >>= 1
			var c uint64
			lo, c = bits.Add64(lo, x.lo^m, m&1)
			hi, _ = bits.Add64(hi, x.hi^m, c)
		}
	}
	return int128{hi, lo}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// flipTable holds, for every group of eight consecutive values and every
// sign pattern of the group (a byte of the sign words), the group's signed
// sum: a sign vector's sum is then one lookup per eight values instead of
// eight additions. Integer sums are exact and order-free, so it equals
// flippedSum bit for bit.
type flipTable struct {
	t []int128 // t[g*256+b]: Σ_j ±v[8g+j], negated where bit j of b is set
}

func newFlipTable(v []int128) flipTable {
	groups := (len(v) + 7) / 8
	t := make([]int128, groups*256)
	for g := range groups {
		tg := t[g*256 : (g+1)*256]
		vs := v[g*8 : min(len(v), g*8+8)]
		for _, x := range vs {
			tg[0] = tg[0].add(x)
		}
		for b := 1; b < 256; b++ {
			j := bits.TrailingZeros(uint(b))
			prev := tg[b&(b-1)]
			if j < len(vs) { // bits past the end flip nothing
				prev = prev.sub(vs[j]).sub(vs[j])
			}
			tg[b] = prev
		}
	}
	return flipTable{t}
}

// sum is flippedSum(v, words).
func (ft flipTable) sum(words []uint64) int128 {
	var hi, lo, c uint64
	t := ft.t
	groups := len(t) / 256
	for g := 0; g < groups; g++ {
		b := words[g>>3] >> ((g & 7) * 8) & 0xff
		x := t[g*256+int(b)]
		lo, c = bits.Add64(lo, x.lo, 0)
		hi += x.hi + c
	}
	return int128{hi, lo}
}
