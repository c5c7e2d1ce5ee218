package kernel

// Dot64Pairs writes out[l] = DotRow64(q[qoff[l]:qoff[l]+d], g[goff[l]:goff[l]+d])
// for element offsets qoff[l], goff[l] of rows of q and g: the exact
// float64 rule (SPEC §4.2) for a list of scattered pairs, as rank's int16
// screen of the float64 protocol verifies its undecided pairs. Where the
// CPU has AVX-512 (and the avx512 kernel is active), 8 lanes hold 8 pairs'
// chains, fed by 8×8 transposes of the rows' chunks in registers; every
// implementation produces the bits of DotRow64.
func Dot64Pairs(q []float64, qoff []int32, g []float64, goff []int32, d int, out []float64) {
	qoff, out = qoff[:len(goff)], out[:len(goff)]
	for l, o := range goff {
		if o < 0 || int(o)+d > len(g) || qoff[l] < 0 || int(qoff[l])+d > len(q) {
			panic("kernel: Dot64Pairs offset out of range")
		}
	}
	if d == 0 || len(goff) == 0 {
		clear(out)
		return
	}
	if gatherSIMD() {
		dot64PairsSIMD(q, qoff, g, goff, d, out)
		return
	}
	for l, o := range goff {
		out[l] = DotRow64(q[qoff[l]:int(qoff[l])+d], g[o:int(o)+d])
	}
}

// Dot64PairsQuery writes out[l] = DotRow64(q[:d], g[goff[l]:goff[l]+d]):
// Dot64Pairs for pairs that share one query row, as rank verifies a
// query's undecided pairs of a gallery block together. The AVX-512 code
// broadcasts q_k and transposes only the gallery rows, 16 pairs per call
// in two interleaved chains of 8; every implementation produces the bits
// of DotRow64.
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
	if gatherSIMD() {
		dot64PairsQuerySIMD(q, g, goff, d, out)
		return
	}
	for l, o := range goff {
		out[l] = DotRow64(q, g[o:int(o)+d])
	}
}
