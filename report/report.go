// Package report renders a benchmark result as the human and tool-facing
// exports of SPEC §5.5–§5.7: the Markdown report, the per-query CSV, TREC
// run files and TREC qrels. The JSON report is results.Benchmark.MarshalReport.
package report

import (
	"math"
	"strconv"
)

// FormatFloat formats f exactly as encoding/json formats a float64
// (SPEC §1.3): shortest round-trip digits, integral values without a
// fraction, exponent notation only below 1e-6 or from 1e21 on, with a
// one-digit negative exponent written "e-7" rather than "e-07".
// Non-finite values are the caller's error; they come out as strconv does.
func FormatFloat(f float64) string {
	return string(appendFloat(nil, f, 64))
}

// appendFloat is encoding/json's float encoder for bits 32 or 64.
func appendFloat(b []byte, f float64, bits int) []byte {
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

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
