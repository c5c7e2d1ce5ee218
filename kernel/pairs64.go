package kernel

// Dot64PairsQuery writes out[l] = DotRow64(q[:d], g[goff[l]:goff[l]+d]):
// the exact float64 rule (SPEC §4.2) for scattered gallery rows of one
// query, as rank's int16 screen of the float64 protocol verifies a query's
// undecided pairs of a gallery block together. The AVX-512 code
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
