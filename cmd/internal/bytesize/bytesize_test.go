package bytesize

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParse: the byte-size parser never panics, never leaks Go
// internals and round-trips every plain integer it accepts.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"4G", "512 MiB", "1.5K", "", "9223372036854775807", "1e400", "-3", "TiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			if strings.Contains(err.Error(), "strconv") {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if v, perr := Parse(strconv.FormatInt(n, 10)); perr != nil || v != n {
			t.Fatalf("%q = %d does not round-trip: %d, %v", s, n, v, perr)
		}
	})
}

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"123": 123, "4G": 4_000_000_000, "4GB": 4_000_000_000, "4GiB": 4 << 30, "512 MiB": 512 << 20,
		"1.5K": 1500, "2k": 2000, "3T": 3_000_000_000_000, "1TiB": 1 << 40, "64B": 64, "1Gi": 1 << 30,
		"9223372036854775807": 9223372036854775807, "8589934591G": 8589934591 * 1_000_000_000,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "G", "4X", "four", "1e400", "99999999999T", "9223372036854775807K", "NaN", "inf"} {
		if _, err := Parse(bad); err == nil || strings.Contains(err.Error(), "strconv") {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
}
