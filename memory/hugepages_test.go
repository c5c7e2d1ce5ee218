package memory

import "testing"

// AdviseHugePages is advice only: on slices of every size and alignment it
// changes no value, panics on none, and the memory stays usable.
func TestAdviseHugePagesChangesNothing(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 1000, 1 << 20, 3<<20 + 7, 9 << 20} {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(i%251) - 125
		}
		for _, off := range []int{0, 1, 3} {
			if off > n {
				continue
			}
			AdviseHugePages(s[off:])
		}
		for i, v := range s {
			if v != float32(i%251)-125 {
				t.Fatalf("n=%d: value %d changed to %v", n, i, v)
			}
		}
		fresh := make([]byte, n)
		AdviseHugePages(fresh) // before the first touch, as the scorer calls it
		for i := range fresh {
			fresh[i] = byte(i)
		}
		for i, v := range fresh {
			if v != byte(i) {
				t.Fatalf("n=%d: fresh byte %d reads %d", n, i, v)
			}
		}
	}
}
