package numfmt

import (
	"math"
	"strconv"
)

// AppendJSON appends f formatted as encoding/json formats a float of the
// given bit size (32 or 64): plain notation, switching to exponent notation
// below 1e-6 and from 1e21 on, with a two-digit exponent trimmed ("1e-7").
func AppendJSON(b []byte, f float64, bits int) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// JSON is AppendJSON for a float64, as a string.
func JSON(f float64) string { return string(AppendJSON(nil, f, 64)) }
