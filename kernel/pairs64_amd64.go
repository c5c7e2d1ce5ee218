//go:build amd64 && !purego

package kernel

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
