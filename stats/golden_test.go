package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// golden holds reference values computed once by testdata/make_golden.py
// with scipy/numpy (see that script for the definitions).
type golden struct {
	TTest []struct {
		Name string
		A, B []float64
		P    float64
	}
	SignFlip []struct {
		Name         string
		D            []float64
		Count, Total uint64
		P            float64
	}
	Bootstrap []struct {
		Name            string
		X               []float64
		Idx             [][]int
		Level           float64
		Percentile, BCa []float64
		Below           int
	}
}

func loadGolden(t *testing.T) golden {
	t.Helper()
	data, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.TTest) == 0 || len(g.SignFlip) == 0 || len(g.Bootstrap) == 0 {
		t.Fatal("golden file has empty sections")
	}
	return g
}

// The paired t-test equals scipy.stats.ttest_rel within 1e-12 (absolute),
// and within 1e-9 relative for the tiny p-values.
func TestPairedTTestGolden(t *testing.T) {
	for _, c := range loadGolden(t).TTest {
		_, p, err := PairedTTest(c.A, c.B)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if math.Abs(p-c.P) > 1e-12 || math.Abs(p-c.P) > 1e-9*c.P {
			t.Errorf("%s: p = %.17g, scipy %.17g (diff %.3g)", c.Name, p, c.P, p-c.P)
		}
	}
}

// Exact enumeration equals the rational-arithmetic enumeration of all 2^n
// sign vectors for n ≤ 16, count for count.
func TestSignFlipExactGolden(t *testing.T) {
	for _, c := range loadGolden(t).SignFlip {
		res, err := SignFlipTest(c.D, 1<<16, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if !res.Exact || !res.ExactSums {
			t.Errorf("%s: exact=%v exactSums=%v, want both", c.Name, res.Exact, res.ExactSums)
		}
		if res.P != c.P {
			t.Errorf("%s: p = %.17g, enumeration %d/%d = %.17g", c.Name, res.P, c.Count, c.Total, c.P)
		}
	}
}

// BCa and percentile intervals equal the numpy implementation over the same
// resample indices within 1e-12.
func TestBootstrapGolden(t *testing.T) {
	for _, c := range loadGolden(t).Bootstrap {
		for _, m := range []struct {
			method CIMethod
			want   []float64
		}{{Percentile, c.Percentile}, {BCa, c.BCa}} {
			got, err := BootstrapMeanIndices(c.X, c.Level, m.method, c.Idx)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if math.Abs(got.Low-m.want[0]) > 1e-12 || math.Abs(got.High-m.want[1]) > 1e-12 {
				t.Errorf("%s %s: [%.17g, %.17g], numpy [%.17g, %.17g]", c.Name, m.method, got.Low, got.High, m.want[0], m.want[1])
			}
		}
	}
}
