//go:build !linux

package memory

// AdviseHugePages does nothing outside Linux.
func AdviseHugePages[E any](s []E) {}
