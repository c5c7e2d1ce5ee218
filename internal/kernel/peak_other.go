//go:build !amd64 || purego

package kernel

func peakLoop(_ string, _ bool, iters int) float64 { return peakGeneric(iters) }
