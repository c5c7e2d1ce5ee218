package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var units = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"ki", 1 << 10}, {"mi", 1 << 20}, {"gi", 1 << 30}, {"ti", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"b", 1},
}

// Parse parses "123", "4G", "1.5GiB", "512 MiB": K, M, G, T are powers
// of 1000, KiB, MiB, GiB, TiB (or Ki, Mi, ...) powers of 1024, and an
// optional trailing B. Errors never show strconv internals.
func Parse(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	bad := fmt.Errorf("%q is not a byte count (use e.g. 4000000000, 4G or 4GiB)", s)
	if t == "" {
		return 0, bad
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if mult == 1 {
			return n, nil
		}
		if m := int64(mult); n <= math.MaxInt64/m && n >= math.MinInt64/m {
			return n * m, nil
		}
		return 0, fmt.Errorf("%q is too large", s)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, bad
	}
	v := math.Floor(f * mult)
	if v >= math.MaxInt64 || v <= math.MinInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(v), nil
}
