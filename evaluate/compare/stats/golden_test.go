package stats

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// golden holds reference values computed once by testdata/make_golden.py
// with scipy/numpy (see that script for the definitions). Regenerate with
// Debian's python3-scipy and python3-numpy (scipy 1.10):
//
//	/usr/bin/python3 stats/testdata/make_golden.py > stats/testdata/golden.json
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
		Below, Equal    int
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
// resample indices within 1e-12; the cases named "scipy …" are the output
// of scipy.stats.bootstrap itself on tie-heavy samples, whose bootstrap
// distributions have a point mass at the estimate (the mid-rank z0 of SPEC
// §13). Negating the sample negates the interval exactly.
func TestBootstrapGolden(t *testing.T) {
	scipyTies := 0
	for _, c := range loadGolden(t).Bootstrap {
		if strings.HasPrefix(c.Name, "scipy ") && c.Equal > 0 {
			scipyTies++
		}
		neg := make([]float64, len(c.X))
		for i, v := range c.X {
			neg[i] = -v
		}
		for _, m := range []struct {
			method CIMethod
			want   []float64
		}{{Percentile, c.Percentile}, {BCa, c.BCa}} {
			got, err := BootstrapMeanIndices(c.X, c.Level, m.method, c.Idx)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if math.Abs(got.Low-m.want[0]) > 1e-12 || math.Abs(got.High-m.want[1]) > 1e-12 {
				t.Errorf("%s %s: [%.17g, %.17g], reference [%.17g, %.17g]", c.Name, m.method, got.Low, got.High, m.want[0], m.want[1])
			}
			ng, err := BootstrapMeanIndices(neg, c.Level, m.method, c.Idx)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if ng.Low != -got.High || ng.High != -got.Low {
				t.Errorf("%s %s: interval of −x [%.17g, %.17g], want exactly [%.17g, %.17g]", c.Name, m.method, ng.Low, ng.High, -got.High, -got.Low)
			}
		}
	}
	if scipyTies < 2 {
		t.Errorf("%d scipy cases with ties at the estimate, want at least 2", scipyTies)
	}
}
