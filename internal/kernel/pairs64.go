package kernel

import "strconv"

// Dot64PairsQuery writes out[l] = DotRow64(q[:d], g[goff[l]:goff[l]+d]):
// the exact float64 rule (SPEC §4.2) for scattered gallery rows of one
// query, as rank's int16 screen of the float64 protocol verifies a query's
// undecided pairs of a gallery block together. The SIMD forms broadcast
// q_k and transpose only the gallery rows: with AVX-512 16 pairs per call
// in two interleaved chains of 8 (pairsq64_amd64.s); with AVX2 + FMA 4
// pairs per ymm, up to 4 groups in flight (pairsq64avx2_amd64.s). Every
// implementation produces the bits of DotRow64.
func Dot64PairsQuery(q []float64, g []float64, goff []int32, d int, out []float64) {
	q, out = q[:d], out[:len(goff)]
	for _, o := range goff {
		if o < 0 || int(o)+d > len(g) {
			panic("kernel: Dot64PairsQuery offset out of range")
		}
	}
	if d == 0 || len(goff) == 0 {
		clear(out)
		return
	}
	dot64PairsQuery(pairs64Kind(), q, g, goff, d, out)
}

// Dot64PairsQueryFast reports whether Dot64PairsQuery runs a SIMD form
// under the active kernel: the AVX-512 chains under "avx512", the AVX2 +
// FMA chains under "avx2" (or "avx512" on a CPU without AVX-512F). The
// portable form is one scalar FMA chain per pair.
func Dot64PairsQueryFast() bool { return pairs64Kind() != pairs64Scalar }

// pairs64Impl names an implementation of Dot64PairsQuery: every one
// produces the bits of DotRow64.
type pairs64Impl uint8

const (
	pairs64Scalar pairs64Impl = iota // DotRow64 pair by pair
	pairs64AVX2                      // 4 chains per ymm (pairsq64avx2_amd64.s)
	pairs64AVX512                    // 8 chains per zmm (pairsq64_amd64.s)
)

func (k pairs64Impl) String() string {
	switch k {
	case pairs64Scalar:
		return "scalar"
	case pairs64AVX2:
		return "avx2"
	case pairs64AVX512:
		return "avx512"
	}
	return "pairs64Impl(" + strconv.Itoa(int(k)) + ")"
}

// pairs64For chooses the Dot64PairsQuery implementation for a kernel name
// (Name) on a CPU with or without AVX-512F and AVX2+FMA (pairs64Kind
// passes this CPU's; a build without the assembly passes neither), as
// pairs32For does for Dot32Pairs: the AVX-512 chains under "avx512", the
// AVX2 chains under "avx2" (or "avx512" without AVX-512F), else (and
// always under "generic") DotRow64 pair by pair.
func pairs64For(name string, avx512, avx2 bool) pairs64Impl {
	switch {
	case name == "avx512" && avx512:
		return pairs64AVX512
	case (name == "avx2" || name == "avx512") && avx2:
		return pairs64AVX2
	}
	return pairs64Scalar
}

// dot64PairsQuery is Dot64PairsQuery (offsets checked, d ≥ 1, at least
// one pair) with the implementation k, which the CPU must run.
func dot64PairsQuery(k pairs64Impl, q []float64, g []float64, goff []int32, d int, out []float64) {
	switch k {
	case pairs64AVX512:
		dot64PairsQuerySIMD(q, g, goff, d, out)
	case pairs64AVX2:
		dot64PairsQueryAVX2(q, g, goff, d, out)
	default:
		for l, o := range goff {
			out[l] = DotRow64(q, g[o:int(o)+d])
		}
	}
}
