//go:build !linux

package syncfile

func chunkSize() int { return 8 << 20 }
