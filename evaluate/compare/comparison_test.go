package compare

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/vertebrae-eval/vertebrae/memory"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate/compare/stats"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// result builds an extractor result whose per-query ndcg@10 and mrr are
// given; its primary score is the mean ndcg@10.
func result(name string, ndcg, mrr []float64) *results.ExtractorResult {
	rows := make([]results.QueryRow, len(ndcg))
	keys := []string{"mrr", "ndcg@10"}
	for i := range ndcg {
		rows[i] = results.QueryRow{QueryID: string(rune('a' + i)), Metrics: metrics.Values{Keys: keys, Vals: []float64{mrr[i], ndcg[i]}}}
	}
	return &results.ExtractorResult{
		Name:         name,
		Forward:      &results.ScoreResult{PrimaryMetric: "ndcg@10", PerQuery: rows, Score: stats.Mean(ndcg)},
		PrimaryScore: stats.Mean(ndcg),
	}
}

func bench(rs ...*results.ExtractorResult) *results.Benchmark {
	cfg := retrieval.DefaultConfig()
	return &results.Benchmark{ExtractorResults: rs, Metadata: results.Metadata{RetrievalConfig: cfg}}
}

func threeResults() []*results.ExtractorResult {
	n := 20
	good, mid, bad := make([]float64, n), make([]float64, n), make([]float64, n)
	mrr := make([]float64, n)
	for i := range n {
		good[i] = 1
		mid[i] = float64(i%2) * 0.5 // half the queries 0.5
		bad[i] = 0
		mrr[i] = 1 / float64(1+i%3)
	}
	return []*results.ExtractorResult{result("mid", mid, mrr), result("good", good, mrr), result("bad", bad, mrr)}
}

func TestComputeStructure(t *testing.T) {
	c, err := Compute(context.Background(), bench(threeResults()...), Options{Metrics: []string{"mrr"}, Bootstrap: 500, Permutations: 999})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings
	if !slices.Equal(s.Metrics, []string{"ndcg@10", "mrr"}) || s.Family != "all" || s.Baseline != nil ||
		s.Test != "randomization" || s.Alpha != 0.05 || s.CIMethod != "bca" || s.Bootstrap != 500 || s.Permutations != 999 || s.Adjustment != "holm" {
		t.Errorf("settings %+v", s)
	}
	if !slices.Equal(s.Results, []string{"good", "mid", "bad"}) {
		t.Errorf("comparison order %v, want by primary score", s.Results)
	}
	if len(c.Blocks) != 2 || c.Blocks[0].Metric != "ndcg@10" || c.Blocks[1].Metric != "mrr" || c.Blocks[0].Direction != "forward" {
		t.Fatalf("blocks %+v", c.Blocks)
	}
	b := c.Blocks[0]
	if b.NQueries != 20 || len(b.Pairs) != 3 {
		t.Fatalf("block %+v", b)
	}
	// good − bad: every d_i = 1: t-test p = 0, Monte Carlo p = 1/(1+999),
	// Holm over 3 pairs: the smallest p times 3.
	gb := b.Pairs[1]
	if gb.A != "good" || gb.B != "bad" || gb.MeanDiff != 1 || gb.TTestP != 0 || gb.RandomizationP != 1.0/1000 ||
		gb.RandomizationExact || gb.EffectSize != nil || !gb.Significant || gb.CI != (results.Interval{Low: 1, High: 1}) {
		t.Errorf("good vs bad %+v", gb)
	}
	if math.Abs(gb.RandomizationPAdjusted-3.0/1000) > 1e-18 {
		t.Errorf("Holm-adjusted p %v, want 3/1000", gb.RandomizationPAdjusted)
	}
	// Means are the report's means; "beats" follow significance and sign.
	want := map[string][]string{"good": {"mid", "bad"}, "mid": {"bad"}, "bad": {}}
	for _, r := range b.Results {
		if !slices.Equal(r.Beats, want[r.Name]) {
			t.Errorf("%s beats %v, want %v", r.Name, r.Beats, want[r.Name])
		}
	}
	if b.Results[1].Mean != 0.25 || b.Results[1].SD != stdOf(threeResults()[0], "ndcg@10") {
		t.Errorf("mid summary %+v", b.Results[1])
	}
	// mrr is identical for all: every p is 1, nothing significant.
	for _, p := range c.Blocks[1].Pairs {
		if p.TTestP != 1 || p.RandomizationP != 1 || p.Significant || p.MeanDiff != 0 {
			t.Errorf("identical mrr pair %+v", p)
		}
	}
}

func TestComputeBaselineAndErrors(t *testing.T) {
	c, err := Compute(context.Background(), bench(threeResults()...), Options{Baseline: "mid", Bootstrap: 200, Permutations: 200, Test: TestTTest})
	if err != nil {
		t.Fatal(err)
	}
	var pairs [][2]string
	for _, p := range c.Blocks[0].Pairs {
		pairs = append(pairs, [2]string{p.A, p.B})
	}
	if !slices.Equal(pairs, [][2]string{{"good", "mid"}, {"bad", "mid"}}) || c.Settings.Family != "baseline" || *c.Settings.Baseline != "mid" {
		t.Errorf("baseline pairs %v, settings %+v", pairs, c.Settings)
	}
	if _, err := Compute(context.Background(), bench(threeResults()...), Options{Baseline: "nope"}); !errors.As(err, new(*OptionError)) {
		t.Errorf("unknown baseline: %v", err)
	}
	rs := threeResults()
	rs[2].Forward.PerQuery = nil
	if _, err := Compute(context.Background(), bench(rs...), Options{}); !errors.Is(err, ErrNoPerQuery) {
		t.Errorf("missing per-query values: %v", err)
	}
	for _, o := range []Options{{Test: "z"}, {CIMethod: "x"}, {Alpha: 1}, {Bootstrap: -1}, {Permutations: -2}} {
		if err := o.Validate(); !errors.As(err, new(*OptionError)) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// The comparison is the same for any thread count and any order of the
// results (streams are labelled by names, order is by score then name).
func TestComputeDeterministic(t *testing.T) {
	ref := marshal(t, bench(threeResults()...), 1)
	rs := threeResults()
	slices.Reverse(rs)
	for _, got := range []string{marshal(t, bench(threeResults()...), 2), marshal(t, bench(rs...), 2), marshal(t, bench(threeResults()...), 1)} {
		if got != ref {
			t.Fatalf("comparison differs:\n%s\nvs\n%s", got, ref)
		}
	}
}

func marshal(t *testing.T, b *results.Benchmark, threads int) string {
	t.Helper()
	c, err := Compute(context.Background(), b, Options{Threads: threads, Bootstrap: 300, Permutations: 300, Metrics: []string{"mrr"}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func stdOf(r *results.ExtractorResult, key string) float64 {
	col, _ := r.Forward.Column(key)
	return stats.StdDev(col)
}

// Bidirectional results are compared forward and reverse separately, each
// over its own per-query values.
func TestComputeBidirectional(t *testing.T) {
	rs := threeResults() // mid, good, bad; in reverse "bad" is best
	rs[1].Reverse = result("good", []float64{0.1, 0.2}, []float64{1, 1}).Forward
	rs[0].Reverse = result("mid", []float64{0.3, 0.4}, []float64{1, 1}).Forward
	rs[2].Reverse = result("bad", []float64{0.9, 1}, []float64{1, 1}).Forward
	c, err := Compute(context.Background(), bench(rs...), Options{Bootstrap: 100, Permutations: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Blocks) != 2 || c.Blocks[0].Direction != "forward" || c.Blocks[1].Direction != "reverse" {
		t.Fatalf("blocks %+v", c.Blocks)
	}
	rev := c.Blocks[1]
	if rev.NQueries != 2 || rev.Results[0].Name != "good" || rev.Results[0].Mean != stats.Mean([]float64{0.1, 0.2}) {
		t.Errorf("reverse block %+v", rev)
	}
	// good − bad in reverse is −0.8 for both queries: exact enumeration of
	// the 4 sign vectors gives p = 2/4.
	if p := rev.Pairs[1]; p.A != "good" || p.B != "bad" || !p.RandomizationExact || p.RandomizationP != 0.5 {
		t.Errorf("reverse good vs bad %+v", p)
	}
}

// twelveResults are 12 results over 6 queries whose per-query ndcg@10 and
// mrr are tie-heavy (multiples of ¼); result "A" is the worst, "L" the best.
func twelveResults() []*results.ExtractorResult {
	var rs []*results.ExtractorResult
	for i := range 12 {
		// 2i + 1 quarters spread over the 6 queries, then one quarter
		// moved between two queries: distinct means, ranked L … A.
		quarters := make([]int, 6)
		for q := range quarters {
			quarters[q] = (2*i + 1) / 6
			if q < (2*i+1)%6 {
				quarters[q]++
			}
		}
		if up, down := i%6, (i+3)%6; quarters[up] < 4 && quarters[down] > 0 {
			quarters[up]++
			quarters[down]--
		}
		nd, mrr := make([]float64, 6), make([]float64, 6)
		for q := range nd {
			nd[q] = float64(quarters[q]) / 4
			mrr[q] = float64(1+(i*q)%4) / 4
		}
		rs = append(rs, result(string(rune('A'+i)), nd, mrr))
	}
	return rs
}

// By default the "all" family covers every result: 12 results give 66
// pairs, every result has an interval and takes part in Holm's family; no
// cap is recorded. An explicit cap names the results it leaves out; a
// baseline family has no cap.
func TestComputeEveryResult(t *testing.T) {
	rs := twelveResults()
	c, err := Compute(context.Background(), bench(rs...), Options{Bootstrap: 200, Permutations: 200, Metrics: []string{"mrr"}})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings
	if len(s.Results) != 12 || s.Results[0] != "L" || s.Results[11] != "A" || s.MaxResults != nil || s.LeftOut != nil {
		t.Errorf("all family: results %v, max_results %v, left_out %v", s.Results, s.MaxResults, s.LeftOut)
	}
	for _, bl := range c.Blocks {
		if len(bl.Results) != 12 || len(bl.Pairs) != 66 {
			t.Fatalf("%s: %d results, %d pairs; want 12 and 66", bl.Metric, len(bl.Results), len(bl.Pairs))
		}
		seen := map[[2]string]bool{}
		for _, p := range bl.Pairs {
			seen[[2]string{p.A, p.B}] = true
			if p.RandomizationPAdjusted < p.RandomizationP {
				t.Errorf("%s %s vs %s: Holm p %v below raw p %v", bl.Metric, p.A, p.B, p.RandomizationPAdjusted, p.RandomizationP)
			}
		}
		for i, a := range s.Results {
			if bl.Results[i].Name != a || bl.Results[i].CI.Low > bl.Results[i].Mean || bl.Results[i].CI.High < bl.Results[i].Mean {
				t.Errorf("%s: summary %d %+v", bl.Metric, i, bl.Results[i])
			}
			for _, b := range s.Results[i+1:] {
				if !seen[[2]string{a, b}] {
					t.Errorf("%s: no pair %s vs %s", bl.Metric, a, b)
				}
			}
		}
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"max_results":null`) || strings.Contains(string(data), "left_out") {
		t.Errorf("settings JSON %s", data)
	}

	c, err = Compute(context.Background(), bench(rs...), Options{Bootstrap: 50, Permutations: 50, MaxResults: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Settings; len(got.Results) != 10 || got.Results[9] != "C" || *got.MaxResults != 10 ||
		!slices.Equal(got.LeftOut, []string{"B", "A"}) || len(c.Blocks[0].Pairs) != 45 {
		t.Errorf("capped family: %v, cap %v, left out %v, %d pairs", got.Results, got.MaxResults, got.LeftOut, len(c.Blocks[0].Pairs))
	}
	c, err = Compute(context.Background(), bench(rs...), Options{Bootstrap: 50, Permutations: 50, Baseline: "A", MaxResults: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Settings.Results) != 12 || len(c.Blocks[0].Pairs) != 11 || c.Settings.MaxResults != nil || c.Settings.LeftOut != nil {
		t.Errorf("baseline family: %v, %d pairs", c.Settings.Results, len(c.Blocks[0].Pairs))
	}
	for _, bad := range []int{-1, 1} {
		if err := (Options{MaxResults: bad}).Validate(); !errors.As(err, new(*OptionError)) {
			t.Errorf("MaxResults %d: %v", bad, err)
		}
	}
}

// A pair draws the same resamples in every family, so the interval of
// (B, A) in a baseline family is exactly the negated interval of (A, B) in
// the "all" family and the p-values are equal (SPEC §13: B − A is the
// negation of A − B, also with ties at the estimate).
func TestComputePairAntisymmetric(t *testing.T) {
	rs := twelveResults()
	for _, ci := range []string{CIBCa, CIPercentile} {
		all, err := Compute(context.Background(), bench(rs...), Options{Bootstrap: 400, Permutations: 400, CIMethod: ci, Metrics: []string{"mrr"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, base := range []string{"L", "F", "A"} {
			bf, err := Compute(context.Background(), bench(rs...), Options{Bootstrap: 400, Permutations: 400, CIMethod: ci, Metrics: []string{"mrr"}, Baseline: base})
			if err != nil {
				t.Fatal(err)
			}
			for bi, bl := range bf.Blocks {
				for _, p := range bl.Pairs {
					var q *results.PairComparison
					for k := range all.Blocks[bi].Pairs {
						if ap := &all.Blocks[bi].Pairs[k]; (ap.A == p.A && ap.B == p.B) || (ap.A == p.B && ap.B == p.A) {
							q = ap
						}
					}
					if q == nil {
						t.Fatalf("pair %s vs %s missing from the all family", p.A, p.B)
					}
					want := q.CI
					if q.A != p.A {
						want = results.Interval{Low: -q.CI.High, High: -q.CI.Low}
						if p.MeanDiff != -q.MeanDiff {
							t.Errorf("%s %s vs %s: mean diff %v, all family %v", ci, p.A, p.B, p.MeanDiff, q.MeanDiff)
						}
					}
					if p.CI != want || p.RandomizationP != q.RandomizationP || p.TTestP != q.TTestP {
						t.Errorf("%s %s %s vs %s (baseline %s): CI %v p %v, all family gives %v p %v",
							ci, bl.Metric, p.A, p.B, base, p.CI, p.RandomizationP, want, q.RandomizationP)
					}
				}
			}
		}
	}
}

// BenchmarkCompute10k: three results over 10,000 queries with the default
// settings (3 intervals, 3 pairs).
func BenchmarkCompute10k(b *testing.B) {
	r := stats.Stream(9, "bench")
	var rs []*results.ExtractorResult
	for i, name := range []string{"x", "y", "z"} {
		nd, mrr := make([]float64, 10000), make([]float64, 10000)
		for q := range nd {
			nd[q] = min(1, r.Float64()+0.02*float64(i))
			mrr[q] = 1 / float64(1+r.IntN(10))
		}
		rs = append(rs, result(name, nd, mrr))
	}
	bm := bench(rs...)
	for b.Loop() {
		if _, err := Compute(context.Background(), bm, Options{Threads: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// The bootstrap means are charged before they are allocated: B float64 per
// concurrently running interval (SPEC §6.1; --bootstrap 2e9 used to die
// with a runtime out-of-memory dump).
func TestComputeChecksTheBudget(t *testing.T) {
	t.Parallel()
	opt := Options{Bootstrap: 1000, Permutations: 100, Threads: 2}
	need := int64(1000 * 8 * 2)
	_, err := Compute(memory.WithLimit(context.Background(), need-1), bench(threeResults()...), opt)
	var be *memory.BudgetError
	if !errors.As(err, &be) || be.Required != need {
		t.Fatalf("budget %d: %v, want a BudgetError requiring %d", need-1, err, need)
	}
	if _, err := Compute(memory.WithLimit(context.Background(), need), bench(threeResults()...), opt); err != nil {
		t.Fatal(err)
	}
}

// CheckSettings refuses the explicit zeros Options would read as defaults
// and metrics the results lack, naming each setting as the caller does,
// fills Metrics in the caller's order, and validates the rest.
func TestCheckSettings(t *testing.T) {
	t.Parallel()
	keys := []string{"ndcg@10", "mrr", "recall@5"}
	flag := func(s string) string { return "--" + s }
	kw := func(s string) string { return strings.ReplaceAll(s, "-", "_") }
	ok := Options{Alpha: 0.05, Bootstrap: 100, Permutations: 100}
	for _, c := range []struct {
		name    string
		o       Options
		metrics []string
		named   func(string) string
		want    string // "" = valid
	}{
		{"valid", ok, []string{" mrr", "recall@5 "}, flag, ""},
		{"unknown metric", ok, []string{"mrr", "map"}, flag, `--metrics: "map" is not a metric of the results (metrics: ndcg@10, mrr, recall@5)`},
		{"bootstrap 0", Options{Alpha: 0.05, Permutations: 1}, nil, kw, "bootstrap must be >= 1, got 0"},
		{"permutations 0", Options{Alpha: 0.05, Bootstrap: 1}, nil, flag, "--permutations must be >= 1, got 0"},
		{"alpha 0", Options{Bootstrap: 1, Permutations: 1}, nil, kw, "alpha must lie in (0, 1), got 0"},
		{"alpha 1", Options{Alpha: 1, Bootstrap: 1, Permutations: 1}, nil, flag, "--alpha must lie in (0, 1), got 1"},
		{"ci method", Options{Alpha: 0.05, Bootstrap: 1, Permutations: 1, CIMethod: "student"}, nil, kw, `ci_method must be bca or percentile, got "student"`},
		{"test", Options{Alpha: 0.05, Bootstrap: 1, Permutations: 1, Test: "z"}, nil, flag, `--test must be randomization or ttest, got "z"`},
	} {
		o := c.o
		err := o.CheckSettings(c.metrics, keys, c.named)
		if c.want == "" {
			if err != nil || !slices.Equal(o.Metrics, []string{"mrr", "recall@5"}) {
				t.Errorf("%s: %v, metrics %v", c.name, err, o.Metrics)
			}
			continue
		}
		var oe *OptionError
		if !errors.As(err, &oe) || err.Error() != c.want {
			t.Errorf("%s: %v, want the OptionError %q", c.name, err, c.want)
		}
	}
}
