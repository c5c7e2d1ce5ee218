package report

import (
	"math"

	"github.com/vertebrae-eval/vertebrae/internal/numfmt"
)

// FormatFloat formats f exactly as encoding/json formats a float64
// (SPEC §1.3): shortest round-trip digits, integral values without a
// fraction, exponent notation only below 1e-6 or from 1e21 on, with a
// one-digit negative exponent written "e-7" rather than "e-07".
// Non-finite values are the caller's error; they come out as strconv does.
func FormatFloat(f float64) string {
	return numfmt.JSON(f)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
