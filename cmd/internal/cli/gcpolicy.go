package cli

import (
	"os"
	"runtime/debug"
)

// evalGCPercent is the collector's growth target while an evaluation runs.
// Its live heap is small next to its inputs (mapped embedding files are
// not heap), so the default of 100 collects every few megabytes while
// scoring allocates its large pointer-free block buffers; each cycle stops
// the world, which waits for the running vector kernels. The soft memory
// limit set from the budget (withMemoryGuard) still bounds the heap.
const evalGCPercent = 400

// relaxGC raises the collector's target for one evaluation unless the user
// chose one (GOGC); restore puts the previous target back (tests run many
// commands in one process).
func relaxGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	prev := debug.SetGCPercent(evalGCPercent)
	return func() { debug.SetGCPercent(prev) }
}
