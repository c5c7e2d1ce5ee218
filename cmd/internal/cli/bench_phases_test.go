package cli

import (
	"context"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

var phasesRE = regexp.MustCompile(`run 1: ([0-9.]+) s.*\nphases: prepare ([0-9.]+) s, positives ([0-9.]+) s, pass ([0-9.]+) s \[(screen|score) ([0-9.]+) s, count\+verify ([0-9.]+) s worker time\], merge ([0-9.]+) s, metrics ([0-9.]+) s; (?:undecided (\d+) of (\d+) pairs \(([0-9.e+-]+)\), (\d+) blocks exact \((float32|int8|int16) screen\)|screen n/a \(exhaustive\)); output ([0-9.]+) s`)

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

// `--placement near` gives every positive a row of its own, made of its
// query plus noise of the same scale (cosine about 0.7), leaves the other
// rows as drawn, and is refused where it cannot hold (sparse rows, fewer
// rows than positives, an unknown placement).
func TestBenchPlacementNear(t *testing.T) {
	for _, store32 := range []bool{true, false} {
		const nq, ng, d, pos = 40, 90, 64, 2
		p, err := synthProblem(context.Background(), nq, ng, d, pos, store32, 3)
		if err != nil {
			t.Fatal(err)
		}
		before := allRows(p.Gallery.(*matrix.Dense))
		placeNear(p, 3)
		g, q := allRows(p.Gallery.(*matrix.Dense)), allRows(p.Queries.(*matrix.Dense))
		owner := map[int]int{}
		for i, ps := range p.Relevance {
			if len(ps) != pos || !slices.IsSortedFunc(ps, func(a, b retrieval.Positive) int { return a.Index - b.Index }) {
				t.Fatalf("query %d: positives %v", i, ps)
			}
			for _, x := range ps {
				if o, dup := owner[x.Index]; dup {
					t.Fatalf("row %d is a positive of queries %d and %d", x.Index, o, i)
				}
				owner[x.Index] = i
				qi, gj := q[i*d:(i+1)*d], g[x.Index*d:(x.Index+1)*d]
				if c := cosine(qi, gj); c < 0.45 || c > 0.92 {
					t.Errorf("store32 %v: query %d and its positive %d: cosine %.3f, want about 0.7", store32, i, x.Index, c)
				}
			}
		}
		for j := range ng {
			if _, ok := owner[j]; !ok && !slices.Equal(g[j*d:(j+1)*d], before[j*d:(j+1)*d]) {
				t.Fatalf("row %d is no positive, yet changed", j)
			}
		}
	}
	for _, args := range [][]string{
		{"--placement", "bogus"},
		{"--placement", "near", "--nnz", "3"},
		{"--placement", "near", "--queries", "30", "--gallery", "20"},
	} {
		code, _, stderr := run(t, append([]string{"bench", "--dim", "4", "--calibrate", "0"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "--placement") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
	code, stdout, stderr := run(t, "bench", "--queries", "30", "--gallery", "500", "--dim", "33", "--calibrate", "0", "--placement", "near")
	if code != 0 || phasesRE.FindStringSubmatch(stdout) == nil {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
}

func cosine(a, b []float64) float64 {
	var ab, aa, bb float64
	for k := range a {
		ab += a[k] * b[k]
		aa += a[k] * a[k]
		bb += b[k] * b[k]
	}
	return ab / math.Sqrt(aa*bb)
}

// allRows is a dense matrix's values as float64, row after row.
func allRows(m *matrix.Dense) []float64 {
	out := make([]float64, m.Rows()*m.Cols())
	for i := range m.Rows() {
		m.RowFloat64(i, out[i*m.Cols():(i+1)*m.Cols()])
	}
	return out
}
