package kernel

import (
	"context"
	"math"
	"time"
)

// PeakName is the instruction set PeakGFLOPS measures: the widest one
// available, which is what the kernels aim at.
func PeakName() string {
	a := Available()
	return a[len(a)-1]
}

// PeakGFLOPS measures this core's fused multiply-add ceiling in GFLOP/s
// (2 flops per lane and FMA) for float32 or float64 by running a loop of
// independent register-resident FMAs for about d. It is the denominator
// `vertebrae bench` reports its kernels against.
func PeakGFLOPS(float32Lanes bool, d time.Duration) float64 {
	peak, _ := PeakGFLOPSContext(context.Background(), float32Lanes, d)
	return peak
}

// PeakGFLOPSContext is PeakGFLOPS that stops with ctx's error once ctx is
// done (checked between rounds of well under a millisecond).
func PeakGFLOPSContext(ctx context.Context, float32Lanes bool, d time.Duration) (float64, error) {
	const iters = 1 << 16
	peak := 0.0
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start := time.Now()
		flops := peakLoop(PeakName(), float32Lanes, iters)
		if s := time.Since(start).Seconds(); s > 0 {
			peak = math.Max(peak, flops/s/1e9)
		}
	}
	return peak, nil
}

// peakGeneric runs iters rounds of 8 independent scalar FMA chains.
func peakGeneric(iters int) float64 {
	var a0, a1, a2, a3, a4, a5, a6, a7 float64
	x, y := 1.0000001, 0.9999999
	for i := 0; i < iters; i++ {
		a0 = math.FMA(x, y, a0)
		a1 = math.FMA(x, y, a1)
		a2 = math.FMA(x, y, a2)
		a3 = math.FMA(x, y, a3)
		a4 = math.FMA(x, y, a4)
		a5 = math.FMA(x, y, a5)
		a6 = math.FMA(x, y, a6)
		a7 = math.FMA(x, y, a7)
	}
	sink = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
	return 16 * float64(iters)
}

var sink float64
