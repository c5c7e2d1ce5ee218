package rank

import (
	"math"

	"github.com/vertebrae-eval/vertebrae/kernel"
)

// countRun32 is countRun followed by precedingOffsets for a run of float32
// scores that need no negation (the float32 protocol's dot and cosine),
// done by the vector row scans of package kernel: one pass for the maximum
// and finiteness, one that counts the candidates strictly above the last
// positive and lists the ties with it (or, when wantHits, every candidate
// at or above it). The results are those of countRun and precedingOffsets:
// the same comparisons, only vectorised. finite false means the caller
// rescans for the first non-finite score (the other results are then
// meaningless).
func countRun32(seg []float32, g int, lastScore float64, lastIndex int, wantHits bool, hits []int32) (best float64, finite bool, n int, out []int32) {
	m, finite := kernel.MaxFinite32(seg)
	if !finite {
		return 0, false, 0, hits[:0]
	}
	// lastScore is a float32 score widened exactly, so comparing in float32
	// is comparing the same numbers.
	t := float32(lastScore)
	inf := float32(math.Inf(1))
	cut := kernel.Cut{Above: t, Lo: t, Hi: t, High: inf} // ties only
	if wantHits {
		cut.Hi = inf // everything at or above the last positive
	}
	hits = growTo(hits, len(seg))
	above, listed := kernel.Scan32(seg, cut, hits)
	tieBefore := lastIndex - g // offsets below this win a tie with the last positive
	n = above
	k := 0
	for _, j := range listed {
		if seg[j] == t && int(j) >= tieBefore {
			continue // a tie lost to the last positive: precedes none
		}
		if seg[j] == t {
			n++
		}
		listed[k] = j
		k++
	}
	if len(seg) == 0 {
		return math.Inf(-1), true, 0, listed[:0]
	}
	return float64(m), true, n, listed[:k]
}
