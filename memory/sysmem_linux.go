package memory

import (
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// SystemMemory returns total and available memory in bytes from
// /proc/meminfo, falling back to sysinfo(2) (free + buffers) when /proc is
// not mounted. ok is false when neither can be read.
func SystemMemory() (total, available int64, ok bool) {
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if total, available, ok = parseMeminfo(data); ok {
			return total, available, true
		}
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, 0, false
	}
	unit := uint64(si.Unit)
	if unit == 0 {
		unit = 1
	}
	return clampBytes(uint64(si.Totalram), unit), clampBytes(uint64(si.Freeram)+uint64(si.Bufferram), unit), true
}

func clampBytes(n, unit uint64) int64 {
	if n > math.MaxInt64/unit {
		return math.MaxInt64
	}
	return int64(n * unit)
}
