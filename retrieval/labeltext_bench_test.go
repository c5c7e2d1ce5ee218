package retrieval

import (
	"io"
	"testing"
)

// BenchmarkLabelTextStamp: restamping the run of one class of 20,000
// members for 2,000 queries in a row (the per-query cost of the label
// triples besides hashing them), in ns per triple.
func BenchmarkLabelTextStamp(b *testing.B) {
	members := make([]int32, 20000)
	for i := range members {
		members[i] = int32(i)
	}
	t := newRunText(members, 4)
	var d [4]byte
	b.ResetTimer()
	for range b.N {
		for q := 1000; q < 3000; q++ {
			d[0], d[1], d[2], d[3] = byte('0'+q/1000), byte('0'+q/100%10), byte('0'+q/10%10), byte('0'+q%10)
			t.stamp(d[:])
		}
	}
	_, _ = io.Discard.Write(t.text)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/4e7, "ns/triple")
}
