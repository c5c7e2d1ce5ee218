//go:build amd64 && !purego

package kernel

import "golang.org/x/sys/cpu"

// hasPairs64AVX2: the CPU runs dot64PairsQ4.
var hasPairs64AVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// pairs64Kind is the Dot64PairsQuery implementation under the active
// kernel.
func pairs64Kind() pairs64Impl {
	return pairs64For(Name(), cpu.X86.HasAVX512F, hasPairs64AVX2)
}

// pairs64Kinds lists the Dot64PairsQuery implementations this CPU runs,
// the scalar one first.
func pairs64Kinds() []pairs64Impl {
	k := []pairs64Impl{pairs64Scalar}
	if hasPairs64AVX2 {
		k = append(k, pairs64AVX2)
	}
	if cpu.X86.HasAVX512F {
		k = append(k, pairs64AVX512)
	}
	return k
}

// dot64PairsQuerySIMD runs 16 pairs per dot64PairsQ16 call; a short last
// group repeats its last pair.
func dot64PairsQuerySIMD(q []float64, g []float64, goff []int32, d int, out []float64) {
	var gO [16]int32
	var r [16]float64
	n := len(goff)
	for k := 0; k < n; k += 16 {
		if k+16 <= n {
			dot64PairsQ16(&q[0], &g[0], &goff[k], d, &out[k])
			continue
		}
		for l := range gO {
			gO[l] = goff[min(k+l, n-1)]
		}
		dot64PairsQ16(&q[0], &g[0], &gO[0], d, &r[0])
		copy(out[k:n], r[:])
	}
}

// dot64PairsQ16 is 16 chains of one query row, the gallery rows transposed
// in registers (pairsq64_amd64.s).
//
//go:noescape
func dot64PairsQ16(q *float64, rows *float64, goff *int32, d int, out *float64)

// dot64PairsQueryAVX2 runs up to 16 pairs (4 groups of 4) per dot64PairsQ4
// call; the last call takes as many groups as the pairs left fill, a short
// last group repeating its last pair.
func dot64PairsQueryAVX2(q []float64, g []float64, goff []int32, d int, out []float64) {
	var gO [16]int32
	var r [16]float64
	n := len(goff)
	k := 0
	for ; k+16 <= n; k += 16 {
		dot64PairsQ4(&q[0], &g[0], &goff[k], d, 4, &out[k])
	}
	if k == n {
		return
	}
	m := n - k
	for l := range gO {
		gO[l] = goff[k+min(l, m-1)]
	}
	dot64PairsQ4(&q[0], &g[0], &gO[0], d, (m+3)/4, &r[0])
	copy(out[k:n], r[:m])
}

// dot64PairsQ4 is groups (1–4) × 4 chains of one query row q, broadcast
// per dimension, against the gallery rows at goff[0..4·groups−1],
// transposed in registers (pairsq64avx2_amd64.s); d ≥ 1. It writes
// 4·groups results.
//
//go:noescape
func dot64PairsQ4(q *float64, rows *float64, goff *int32, d int, groups int, out *float64)
