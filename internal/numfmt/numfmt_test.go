package numfmt

import (
	"encoding/json"
	"math"
	"testing"
)

func TestMatchesEncodingJSON(t *testing.T) {
	for _, v := range []float64{0, 1, -1, 0.5, 1e-7, 1e-6, 9.99e-7, 1e20, 1e21, 123456789, 1e-300, 1e308, math.SmallestNonzeroFloat64, 0.1 + 0.2, -2.5e-9} {
		want, _ := json.Marshal(v)
		if got := JSON(v); got != string(want) {
			t.Errorf("JSON(%v) = %s, encoding/json %s", v, got, want)
		}
		f32 := float32(v)
		if math.IsInf(float64(f32), 0) {
			continue
		}
		want32, _ := json.Marshal(f32)
		if got := string(AppendJSON(nil, float64(f32), 32)); got != string(want32) {
			t.Errorf("AppendJSON(%v, 32) = %s, encoding/json %s", f32, got, want32)
		}
	}
}
