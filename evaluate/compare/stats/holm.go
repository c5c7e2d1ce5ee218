package stats

import (
	"fmt"
	"sort"
)

func errorf(format string, args ...any) error { return fmt.Errorf("stats: "+format, args...) }

// Holm returns Holm's step-down adjusted p-values, in the order of p:
// with p sorted ascending (ties keep their order), the i-th (0-based)
// adjusted value is min(1, max_{j ≤ i} (m − j)·p_(j)). It controls the
// family-wise error rate over the m tests without assuming independence.
func Holm(p []float64) []float64 {
	m := len(p)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	out := make([]float64, m)
	running := 0.0
	for j, i := range idx {
		v := min(1, float64(m-j)*p[i])
		running = max(running, v)
		out[i] = running
	}
	return out
}
