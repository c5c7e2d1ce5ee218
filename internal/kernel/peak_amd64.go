//go:build amd64 && !purego

package kernel

// Each call runs n iterations of 12 independent vector FMAs on zeroed
// registers (no denormals, no dependency between the 12 chains beyond
// their own latency).
//
//go:noescape
func peakFMA512PD(n int)

//go:noescape
func peakFMA512PS(n int)

//go:noescape
func peakFMA256PD(n int)

//go:noescape
func peakFMA256PS(n int)

func peakLoop(name string, f32 bool, iters int) float64 {
	switch {
	case name == "avx512" && f32:
		peakFMA512PS(iters)
		return 12 * 16 * 2 * float64(iters)
	case name == "avx512":
		peakFMA512PD(iters)
		return 12 * 8 * 2 * float64(iters)
	case name == "avx2" && f32:
		peakFMA256PS(iters)
		return 12 * 8 * 2 * float64(iters)
	case name == "avx2":
		peakFMA256PD(iters)
		return 12 * 4 * 2 * float64(iters)
	}
	return peakGeneric(iters)
}
