package stats

import "testing"

func benchData(n int) []float64 {
	r := Stream(1, "bench")
	d := make([]float64, n)
	for i := range d {
		d[i] = 1/float64(1+uniformIndex(r, 10)) - 1/float64(1+uniformIndex(r, 10))
	}
	return d
}

// BenchmarkSignFlip: 10,000 sign vectors over 1,000 differences.
func BenchmarkSignFlip(b *testing.B) {
	d := benchData(1000)
	for b.Loop() {
		if _, err := SignFlipTest(d, 10000, Stream(2, "p")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBootstrapBCa: 10,000 resamples of 1,000 values.
func BenchmarkBootstrapBCa(b *testing.B) {
	d := benchData(1000)
	for b.Loop() {
		if _, err := BootstrapMean(d, 0.95, 10000, BCa, Stream(3, "b")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBootstrapBCaSource: BenchmarkBootstrapBCa through a Source.
func BenchmarkBootstrapBCaSource(b *testing.B) {
	d := benchData(1000)
	for b.Loop() {
		if _, err := BootstrapMeanSource(b.Context(), d, 0.95, 10000, BCa, NewSource(3, "b")); err != nil {
			b.Fatal(err)
		}
	}
}
