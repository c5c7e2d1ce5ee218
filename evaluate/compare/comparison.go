package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/vertebrae-eval/vertebrae/evaluate/compare/stats"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/results"
)

// Defaults of SPEC §13.
const (
	DefaultBootstrap    = 10000
	DefaultPermutations = 10000
	DefaultAlpha        = 0.05
	ConfidenceLevel     = 0.95
)

// Test names.
const (
	TestRandomization = "randomization"
	TestTTest         = "ttest"
)

// CI method names.
const (
	CIBCa        = "bca"
	CIPercentile = "percentile"
)

// Options are the comparison settings. The zero value means the SPEC §13
// defaults (randomization test, α = 0.05, BCa, 10,000 resamples and sign
// vectors, seed 0, every result against every other, every result).
type Options struct {
	// Metrics are compared besides the primary metric (--compare-metrics).
	Metrics []string
	// Baseline, when set, compares every result against this one only.
	Baseline string
	// MaxResults, when > 0, caps the "all" family at the MaxResults
	// best-ranked results (n results make n(n−1)/2 pairs); the settings
	// record the cap and name the results left out, which the reports
	// state. 0 (the default) compares every result.
	MaxResults   int
	Test         string  // "" = randomization
	Alpha        float64 // 0 = 0.05
	CIMethod     string  // "" = bca
	Bootstrap    int     // 0 = 10,000
	Permutations int     // 0 = 10,000
	Seed         uint64
	// Threads computes results and pairs concurrently (0 = GOMAXPROCS);
	// it never changes a number.
	Threads int
}

// OptionError is an invalid setting (a usage error at the CLI).
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return e.Msg }

// ErrNoPerQuery is returned when a result carries no per-query values.
var ErrNoPerQuery = errors.New("significance needs per-query values")

// withDefaults fills zero fields and validates the rest; settings are
// named as the CLI's flags.
func (o Options) withDefaults() (Options, error) { return o.withDefaultsNamed(flagName) }

// flagName names a setting as the CLI's flag.
func flagName(setting string) string { return "--" + setting }

func (o Options) withDefaultsNamed(name func(string) string) (Options, error) {
	if o.Test == "" {
		o.Test = TestRandomization
	}
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.CIMethod == "" {
		o.CIMethod = CIBCa
	}
	if o.Bootstrap == 0 {
		o.Bootstrap = DefaultBootstrap
	}
	if o.Permutations == 0 {
		o.Permutations = DefaultPermutations
	}
	switch {
	case o.Test != TestRandomization && o.Test != TestTTest:
		return o, &OptionError{fmt.Sprintf("%s must be randomization or ttest, got %s", name("test"), msgfmt.Quote(o.Test))}
	case o.CIMethod != CIBCa && o.CIMethod != CIPercentile:
		return o, &OptionError{fmt.Sprintf("%s must be bca or percentile, got %s", name("ci-method"), msgfmt.Quote(o.CIMethod))}
	case !(o.Alpha > 0 && o.Alpha < 1):
		return o, &OptionError{fmt.Sprintf("%s must lie in (0, 1), got %v", name("alpha"), o.Alpha)}
	case o.Bootstrap < 1:
		return o, &OptionError{name("bootstrap") + " must be >= 1"}
	case o.Permutations < 1:
		return o, &OptionError{name("permutations") + " must be >= 1"}
	case o.MaxResults < 0 || o.MaxResults == 1:
		return o, &OptionError{fmt.Sprintf("the comparison cap must be 0 (every result) or at least 2 results, got %d", o.MaxResults)}
	case o.Threads < 0:
		return o, &OptionError{name("threads") + " must be >= 0"}
	}
	return o, nil
}

// CheckSettings validates options a caller set explicitly (flags, keyword
// arguments), where a zero is the caller's value and not "the default":
// bootstrap and permutations must be at least 1 and alpha must not be 0.
// Every name in metrics (trimmed) must be one of keys, the metric keys of
// the results compared; they become o.Metrics in the caller's order. Then
// the rest is validated as Validate does. name gives the caller's name of
// a setting ("test", "ci-method", "alpha", "bootstrap", "permutations",
// "threads", "metrics") for the messages; errors are *OptionError.
func (o *Options) CheckSettings(metrics, keys []string, name func(setting string) string) error {
	for _, m := range metrics {
		m = strings.TrimSpace(m)
		if !slices.Contains(keys, m) {
			return &OptionError{fmt.Sprintf("%s: %s is not a metric of the results (metrics: %s)", name("metrics"), msgfmt.Quote(m), strings.Join(keys, ", "))}
		}
		o.Metrics = append(o.Metrics, m)
	}
	switch {
	case o.Bootstrap < 1:
		return &OptionError{fmt.Sprintf("%s must be >= 1, got %d", name("bootstrap"), o.Bootstrap)}
	case o.Permutations < 1:
		return &OptionError{fmt.Sprintf("%s must be >= 1, got %d", name("permutations"), o.Permutations)}
	case o.Alpha == 0:
		return &OptionError{name("alpha") + " must lie in (0, 1), got 0"}
	}
	_, err := o.withDefaultsNamed(name)
	return err
}

// Validate checks the options (zero fields take their defaults).
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

// Compute builds the comparison of b's results. It needs two or more
// results, each with per-query values for every compared metric, all over
// the same queries in the same order (one dataset, SPEC §13).
func Compute(ctx context.Context, b *results.Benchmark, opt Options) (*results.Comparison, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(b.ExtractorResults) < 2 {
		return nil, &OptionError{"the comparison needs at least 2 results"}
	}
	primary := b.Metadata.RetrievalConfig.PrimaryMetric
	if f := b.ExtractorResults[0].Forward; f != nil && f.PrimaryMetric != "" {
		primary = f.PrimaryMetric
	}
	metricList := []string{primary}
	for _, m := range o.Metrics {
		if !slices.Contains(metricList, m) {
			metricList = append(metricList, m)
		}
	}
	order := comparisonOrder(b.ExtractorResults)
	family := "all"
	var baseline *string
	var maxResults *int
	var leftOut []string
	if o.MaxResults > 0 && o.Baseline == "" {
		maxResults = &o.MaxResults
	}
	if o.Baseline != "" {
		family = "baseline"
		name := o.Baseline
		baseline = &name
		if !slices.ContainsFunc(order, func(r *results.ExtractorResult) bool { return r.Name == name }) {
			return nil, &OptionError{fmt.Sprintf("--baseline %s is not a result of this report", msgfmt.Quote(name))}
		}
	} else if maxResults != nil && len(order) > *maxResults {
		for _, r := range order[*maxResults:] {
			leftOut = append(leftOut, r.Name)
		}
		order = order[:*maxResults]
	}
	names := make([]string, len(order))
	for i, r := range order {
		names[i] = r.Name
	}
	cmp := &results.Comparison{Settings: results.ComparisonSettings{
		Metrics: metricList, Family: family, Baseline: baseline, MaxResults: maxResults, Results: names, LeftOut: leftOut,
		Test: o.Test, Alpha: o.Alpha, ConfidenceLevel: ConfidenceLevel, CIMethod: o.CIMethod,
		Bootstrap: o.Bootstrap, Permutations: o.Permutations, Seed: o.Seed, Adjustment: "holm",
	}}
	directions := []string{"forward"}
	if !slices.ContainsFunc(order, func(r *results.ExtractorResult) bool { return r.Reverse == nil }) {
		directions = append(directions, "reverse")
	}
	var blocks []*block
	for _, m := range metricList {
		for _, dir := range directions {
			bl, err := newBlock(order, m, dir, baseline)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, bl)
		}
	}
	if err := runTasks(ctx, blocks, o); err != nil {
		return nil, err
	}
	for _, bl := range blocks {
		cmp.Blocks = append(cmp.Blocks, bl.finish(o))
	}
	return cmp, nil
}

// comparisonOrder ranks results by primary score, ties by name, so the
// comparison does not depend on the order results were run or listed in.
func comparisonOrder(rs []*results.ExtractorResult) []*results.ExtractorResult {
	out := slices.Clone(rs)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].PrimaryScore != out[j].PrimaryScore {
			return out[i].PrimaryScore > out[j].PrimaryScore
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// block is one (metric, direction) in the making.
type block struct {
	metric, dir string
	names       []string
	cols        [][]float64
	summaries   []results.ResultSummary
	pairs       [][2]int
	pairOut     []results.PairComparison
}

func newBlock(order []*results.ExtractorResult, metric, dir string, baseline *string) (*block, error) {
	bl := &block{metric: metric, dir: dir}
	var ids []string
	for _, r := range order {
		s := r.Forward
		if dir == "reverse" {
			s = r.Reverse
		}
		if s == nil || len(s.PerQuery) == 0 {
			return nil, fmt.Errorf("%w: result %s has no per-query values in the %s direction (was its report written with --no-per-query?)", ErrNoPerQuery, msgfmt.Quote(r.Name), dir)
		}
		col, ok := s.Column(metric)
		if !ok {
			return nil, &OptionError{fmt.Sprintf("metric %s is not among the per-query metrics of result %s", msgfmt.Quote(metric), msgfmt.Quote(r.Name))}
		}
		for i, v := range col {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("result %s: %s query %s: non-finite %s", msgfmt.Quote(r.Name), dir, msgfmt.Quote(s.PerQuery[i].QueryID), metric)
			}
		}
		if ids == nil {
			ids = make([]string, len(s.PerQuery))
			for i, q := range s.PerQuery {
				ids[i] = q.QueryID
			}
		} else if !sameIDs(ids, s.PerQuery) {
			return nil, fmt.Errorf("result %s: its %s per-query values are not over the same queries as result %s", msgfmt.Quote(r.Name), dir, msgfmt.Quote(bl.names[0]))
		}
		bl.names = append(bl.names, r.Name)
		bl.cols = append(bl.cols, col)
	}
	n := len(bl.names)
	if baseline == nil {
		for i := 0; i < n; i++ {
			for j := i + 1; j < n; j++ {
				bl.pairs = append(bl.pairs, [2]int{i, j})
			}
		}
	} else {
		bi := slices.Index(bl.names, *baseline)
		for i := 0; i < n; i++ {
			if i != bi {
				bl.pairs = append(bl.pairs, [2]int{i, bi})
			}
		}
	}
	bl.summaries = make([]results.ResultSummary, n)
	bl.pairOut = make([]results.PairComparison, len(bl.pairs))
	return bl, nil
}

func sameIDs(ids []string, rows []results.QueryRow) bool {
	if len(ids) != len(rows) {
		return false
	}
	for i, r := range rows {
		if r.QueryID != ids[i] {
			return false
		}
	}
	return true
}

func (o Options) ciMethod() stats.CIMethod {
	if o.CIMethod == CIPercentile {
		return stats.Percentile
	}
	return stats.BCa
}

// summarise fills summary i. Its stream is labelled by the result, so a
// result's interval is the same in every comparison it takes part in.
func (bl *block) summarise(ctx context.Context, i int, o Options) error {
	x := bl.cols[i]
	r := stats.NewSource(o.Seed, "result", bl.dir, bl.metric, bl.names[i])
	ci, err := stats.BootstrapMeanSource(ctx, x, ConfidenceLevel, o.Bootstrap, o.ciMethod(), r)
	if err != nil {
		return fmt.Errorf("result %s, %s %s: %w", msgfmt.Quote(bl.names[i]), bl.dir, bl.metric, err)
	}
	bl.summaries[i] = results.ResultSummary{
		Name: bl.names[i], Mean: stats.Mean(x), SD: stats.StdDev(x),
		CI: results.Interval{Low: ci.Low, High: ci.High}, Beats: []string{},
	}
	return nil
}

// pairCI fills pair k's interval; pairTests its tests and the rest (before
// adjustment). Each pair has two streams of its own (interval,
// randomization), labelled by both names in comparison order whichever is
// A (pairLabels), so a pair draws the same resamples and sign vectors in
// every family: (A, B) and (B, A) get exactly negated intervals and equal
// p-values. The two halves are separate tasks so that the bootstraps, the
// longest tasks, can be handed out first.
func (bl *block) pairCI(ctx context.Context, k int, o Options) error {
	a, b := bl.pairs[k][0], bl.pairs[k][1]
	d, err := stats.Differences(bl.cols[a], bl.cols[b])
	if err != nil {
		return err
	}
	ci, err := stats.BootstrapMeanSource(ctx, d, ConfidenceLevel, o.Bootstrap, o.ciMethod(), stats.NewSource(o.Seed, bl.pairLabels(k, "pair-ci")...))
	if err != nil {
		return bl.pairErr(k, err)
	}
	bl.pairOut[k].CI = results.Interval{Low: ci.Low, High: ci.High}
	return nil
}

func (bl *block) pairTests(ctx context.Context, k int, o Options) error {
	a, b := bl.pairs[k][0], bl.pairs[k][1]
	d, err := stats.Differences(bl.cols[a], bl.cols[b])
	if err != nil {
		return err
	}
	_, tp, err := stats.OneSampleTTest(d)
	if err != nil {
		return bl.pairErr(k, err)
	}
	sf, err := stats.SignFlipTestSource(ctx, d, o.Permutations, stats.NewSource(o.Seed, bl.pairLabels(k, "pair-randomization")...))
	if err != nil {
		return bl.pairErr(k, err)
	}
	pc := &bl.pairOut[k]
	pc.A, pc.B, pc.MeanDiff = bl.names[a], bl.names[b], stats.Mean(d)
	pc.TTestP, pc.RandomizationP, pc.RandomizationExact = tp, sf.P, sf.Exact
	if es, ok := stats.EffectSize(d); ok {
		pc.EffectSize = &es
	}
	return nil
}

// pairLabels labels the stream of pair k: the kind, the direction, the
// metric and the two names in comparison order (the order of the "all"
// family's pairs).
func (bl *block) pairLabels(k int, kind string) []string {
	a, b := bl.pairs[k][0], bl.pairs[k][1]
	if a > b {
		a, b = b, a
	}
	return []string{kind, bl.dir, bl.metric, bl.names[a], bl.names[b]}
}

func (bl *block) pairErr(k int, err error) error {
	a, b := bl.pairs[k][0], bl.pairs[k][1]
	return fmt.Errorf("pair %s vs %s, %s %s: %w", msgfmt.Quote(bl.names[a]), msgfmt.Quote(bl.names[b]), bl.dir, bl.metric, err)
}

// finish applies Holm over the block's pairs and derives significance and
// the "beats" lists.
func (bl *block) finish(o Options) results.MetricComparison {
	tp := make([]float64, len(bl.pairOut))
	rp := make([]float64, len(bl.pairOut))
	for k, p := range bl.pairOut {
		tp[k], rp[k] = p.TTestP, p.RandomizationP
	}
	ta, ra := stats.Holm(tp), stats.Holm(rp)
	beats := make([][]bool, len(bl.names))
	for i := range beats {
		beats[i] = make([]bool, len(bl.names))
	}
	for k := range bl.pairOut {
		p := &bl.pairOut[k]
		p.TTestPAdjusted, p.RandomizationPAdjusted = ta[k], ra[k]
		adj := ra[k]
		if o.Test == TestTTest {
			adj = ta[k]
		}
		p.Significant = adj < o.Alpha
		if p.Significant {
			a, b := bl.pairs[k][0], bl.pairs[k][1]
			switch {
			case p.MeanDiff > 0:
				beats[a][b] = true
			case p.MeanDiff < 0:
				beats[b][a] = true
			}
		}
	}
	for i := range bl.summaries {
		for j, ok := range beats[i] {
			if ok {
				bl.summaries[i].Beats = append(bl.summaries[i].Beats, bl.names[j])
			}
		}
	}
	n := 0
	if len(bl.cols) > 0 {
		n = len(bl.cols[0])
	}
	return results.MetricComparison{Metric: bl.metric, Direction: bl.dir, NQueries: n, Results: bl.summaries, Pairs: bl.pairOut}
}

// runTasks computes every summary and pair, concurrently. Each task writes
// only its own fields and draws from its own stream, so the outcome is the
// same for any number of threads. Tasks are handed out longest first (the
// bootstraps, then the tests), so that no worker is left with a long task
// while the others idle; the error reported is still the first in the
// order of the computation (block by block: summaries, then pairs, a pair's
// interval before its tests).
func runTasks(ctx context.Context, blocks []*block, o Options) error {
	type task struct {
		run  func() error
		rank int // position in the order of the computation
		long bool
	}
	var tasks []task
	for _, bl := range blocks {
		for i := range bl.names {
			tasks = append(tasks, task{run: func() error { return bl.summarise(ctx, i, o) }, long: true})
		}
		for k := range bl.pairs {
			tasks = append(tasks, task{run: func() error { return bl.pairCI(ctx, k, o) }, long: true})
			tasks = append(tasks, task{run: func() error { return bl.pairTests(ctx, k, o) }})
		}
	}
	for i := range tasks {
		tasks[i].rank = i
	}
	// The bootstraps (summaries and intervals) first, each kind in order.
	sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].long && !tasks[j].long })
	threads := o.Threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	// Each running bootstrap holds its B resampled means (SPEC §6.1: checked
	// before any is allocated; --bootstrap 2e9 would ask for 16 GB apiece).
	if err := memory.Check(ctx, fmt.Sprintf("Bootstrap intervals (%d resamples, %d at a time)", o.Bootstrap, min(threads, len(tasks))),
		memory.Bytes(int64(o.Bootstrap), 8, int64(max(1, min(threads, len(tasks)))))); err != nil {
		return err
	}
	errs := make([]error, len(tasks)) // by rank
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(threads, len(tasks)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := tasks[i]
				if err := ctx.Err(); err != nil {
					errs[t.rank] = err
					continue
				}
				errs[t.rank] = t.run()
			}
		}()
	}
	for i := range tasks {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs { // the first failure in the order of the computation
		if err != nil {
			return err
		}
	}
	return nil
}
