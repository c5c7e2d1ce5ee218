//go:build !amd64 || purego

package stats

var epochFunc func(seed *[4]uint64, out *[128]uint64)
