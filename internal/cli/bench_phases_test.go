package cli

import (
	"regexp"
	"strconv"
	"testing"
)

var phasesRE = regexp.MustCompile(`run 1: ([0-9.]+) s.*\nphases: prepare ([0-9.]+) s, positives ([0-9.]+) s, pass ([0-9.]+) s \[(screen|score) ([0-9.]+) s, count\+verify ([0-9.]+) s worker time\], merge ([0-9.]+) s, metrics ([0-9.]+) s; (?:undecided (\d+) of (\d+) pairs \(([0-9.e+-]+)\), (\d+) blocks exact \((float32|int16) screen\)|screen n/a \(exhaustive\)); output ([0-9.]+) s`)

// `vertebrae bench` reports every phase and the undecided fraction, and the
// figures agree with each other: the sequential phases fit in the run, the
// screen covers every pair, the fraction is undecided/pairs, and runs that
// are not screened say so.
func TestBenchPhases(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		screened bool
	}{
		{[]string{"--similarity", "cosine"}, true},
		{[]string{"--similarity", "dot", "--positives", "3"}, true},
		{[]string{"--similarity", "cosine", "--exhaustive"}, false},
		{[]string{"--similarity", "cosine", "--precision", "float32"}, false},
		{[]string{"--similarity", "squared_l2"}, false},
	} {
		args := append([]string{"bench", "--queries", "30", "--gallery", "500", "--dim", "33", "--calibrate", "0"}, tc.args...)
		code, stdout, stderr := run(t, args...)
		if code != 0 {
			t.Fatal(stderr)
		}
		m := phasesRE.FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("%v: no phase line in\n%s", tc.args, stdout)
		}
		f := func(i int) float64 {
			v, err := strconv.ParseFloat(m[i], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		total, seq := f(1), f(2)+f(3)+f(4)+f(8)
		if seq > total+0.002 { // each figure is rounded to the millisecond
			t.Errorf("%v: phases %.3f s exceed the run's %.3f s", tc.args, seq, total)
		}
		if screened := m[5] == "screen"; screened != tc.screened || (m[10] != "") != tc.screened {
			t.Fatalf("%v: screened %v, want %v:\n%s", tc.args, screened, tc.screened, stdout)
		}
		if tc.screened {
			// Runs below 2²² pairs keep the float32 screen (the int16 one is chosen only above).
			if m[14] != "float32" {
				t.Errorf("%v: %s screen ran, want float32", tc.args, m[14])
			}
			und, pairs, frac := f(10), f(11), f(12)
			if pairs != 30*500 || und > pairs || (frac-und/pairs) > 1e-3*frac+1e-12 || (und/pairs-frac) > 1e-3*frac+1e-12 {
				t.Errorf("%v: undecided %v of %v pairs, fraction %v", tc.args, und, pairs, frac)
			}
		}
	}
}
