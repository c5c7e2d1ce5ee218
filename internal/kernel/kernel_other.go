//go:build !amd64 || purego

package kernel

// addSIMD has nothing to offer: only amd64 has SIMD kernels.
func addSIMD() {}
