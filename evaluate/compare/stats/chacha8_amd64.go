//go:build amd64 && !purego

package stats

import "golang.org/x/sys/cpu"

//go:noescape
func chacha8EpochAVX512(seed *[4]uint64, out *[128]uint64)

// epochFunc computes whole ChaCha8 epochs when the CPU can (HasAVX512F is
// only set when the OS saves the zmm registers).
var epochFunc = func() func(seed *[4]uint64, out *[128]uint64) {
	if cpu.X86.HasAVX512F {
		return chacha8EpochAVX512
	}
	return nil
}()
