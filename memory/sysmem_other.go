//go:build !linux && !windows

package memory

// SystemMemory reports that the machine's memory is unknown on platforms
// without a reader; runs there need an explicit max_memory_bytes.
func SystemMemory() (total, available int64, ok bool) { return 0, 0, false }
