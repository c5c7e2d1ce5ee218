package results

// Comparison is the `comparison` section of a report holding two or more
// results (SPEC §6.6, §13): the settings used and, for every compared
// metric and direction, the per-result summaries and the per-pair tests.
// Every number is finite; values that do not exist (an effect size when the
// differences do not vary) are null.
type Comparison struct {
	Settings ComparisonSettings `json:"settings"`
	// Blocks holds one entry per (metric, direction): metrics in the order
	// of Settings.Metrics (primary metric first), forward before reverse.
	Blocks []MetricComparison `json:"blocks"`
}

// ComparisonSettings records every choice that determines the numbers of a
// comparison, so a reader can reproduce them (SPEC §13).
type ComparisonSettings struct {
	// Metrics are the compared metrics: the primary metric, then the
	// --compare-metrics list in its order, without repeats.
	Metrics []string `json:"metrics"`
	// Family is "all" (every compared result against every other) or
	// "baseline" (every result against Baseline).
	Family string `json:"family"`
	// Baseline is the baseline result name, null for the "all" family.
	Baseline *string `json:"baseline"`
	// MaxResults is the cap on the results of the "all" family (the
	// best-ranked ones are compared), null when every result is compared
	// (the default). Results lists the compared names in order; LeftOut
	// the results the cap left out, in ranked order (omitted when none).
	MaxResults *int     `json:"max_results"`
	Results    []string `json:"results"`
	LeftOut    []string `json:"left_out,omitempty"`
	// Test is the test whose Holm-adjusted p decides `significant`:
	// "randomization" or "ttest".
	Test  string  `json:"test"`
	Alpha float64 `json:"alpha"`
	// ConfidenceLevel of every interval (0.95).
	ConfidenceLevel float64 `json:"confidence_level"`
	// CIMethod is "bca" or "percentile"; Bootstrap the resample count.
	CIMethod  string `json:"ci_method"`
	Bootstrap int    `json:"bootstrap"`
	// Permutations is the sign-flip sample count N of the randomization
	// test (exact enumeration replaces it when 2^n ≤ N).
	Permutations int `json:"permutations"`
	// Seed of the generator; each (pair or result, metric, direction) gets
	// its own stream derived from it (SPEC §13).
	Seed uint64 `json:"seed"`
	// Adjustment names the multiple-comparison correction ("holm"), applied
	// per block over the family's pairs.
	Adjustment string `json:"adjustment"`
}

// MetricComparison is the comparison of one metric in one direction.
type MetricComparison struct {
	Metric    string `json:"metric"`
	Direction string `json:"direction"` // "forward" or "reverse"
	NQueries  int    `json:"n_queries"`
	// Results are the compared results in comparison order (ranked by
	// primary score, ties by name).
	Results []ResultSummary `json:"results"`
	// Pairs are the family's pairs: for "all", (Results[i], Results[j]) for
	// i < j; for "baseline", (result, baseline) in Results order.
	Pairs []PairComparison `json:"pairs"`
}

// ResultSummary is one result's per-query distribution of a metric.
type ResultSummary struct {
	Name string  `json:"name"`
	Mean float64 `json:"mean"`
	// SD is the sample standard deviation (n − 1 denominator; 0 when n < 2).
	SD float64  `json:"sd"`
	CI Interval `json:"ci"`
	// Beats lists, in Results order, the results this one is significantly
	// better than after Holm adjustment (the ranx-style superscripts).
	Beats []string `json:"beats"`
}

// Interval is a confidence interval [Low, High].
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// PairComparison is the paired comparison of results A and B over the same
// queries, with differences d_i = a_i − b_i (SPEC §13).
type PairComparison struct {
	A        string  `json:"a"`
	B        string  `json:"b"`
	MeanDiff float64 `json:"mean_diff"`
	// CI is the interval of the mean difference (method of the settings).
	CI Interval `json:"ci"`
	// TTestP is the two-sided paired Student's t-test p-value
	// (scipy.stats.ttest_rel); 1 when every d_i is 0.
	TTestP float64 `json:"ttest_p"`
	// RandomizationP is the paired sign-flip test p-value;
	// RandomizationExact says all 2^n sign vectors were enumerated.
	RandomizationP     float64 `json:"randomization_p"`
	RandomizationExact bool    `json:"randomization_exact"`
	// Holm-adjusted p-values of both tests over the block's family.
	TTestPAdjusted         float64 `json:"ttest_p_adjusted"`
	RandomizationPAdjusted float64 `json:"randomization_p_adjusted"`
	// Significant: the chosen test's adjusted p < alpha.
	Significant bool `json:"significant"`
	// EffectSize is mean(d)/sd(d); null when sd(d) = 0.
	EffectSize *float64 `json:"effect_size"`
}

// MatrixAbove is the number of compared results above which the reports
// show an "all" family as a pairwise significance matrix (results ×
// results) rather than only as a list of its n(n−1)/2 pairs.
const MatrixAbove = 6

// ShowsMatrix reports whether block bl of c is shown as a pairwise
// significance matrix: an "all" family of more than MatrixAbove results.
func (c *Comparison) ShowsMatrix(bl *MetricComparison) bool {
	return c.Settings.Baseline == nil && c.Settings.Family != "baseline" && len(bl.Results) > MatrixAbove
}

// MatrixCell is one cell of a pairwise matrix: the mean difference row −
// column and whether the pair is significant; OK is false on the diagonal
// and where the block holds no pair of the two results.
type MatrixCell struct {
	Diff        float64
	Significant bool
	OK          bool
}

// Matrix lays the block's pairs out as a names × names matrix: cell [i][j]
// holds the difference names[i] − names[j] (a pair (B, A) negated).
func (bl *MetricComparison) Matrix(names []string) [][]MatrixCell {
	pos := make(map[string]int, len(names))
	for i, n := range names {
		pos[n] = i
	}
	m := make([][]MatrixCell, len(names))
	for i := range m {
		m[i] = make([]MatrixCell, len(names))
	}
	for _, p := range bl.Pairs {
		i, ok1 := pos[p.A]
		j, ok2 := pos[p.B]
		if !ok1 || !ok2 || i == j {
			continue
		}
		m[i][j] = MatrixCell{Diff: p.MeanDiff, Significant: p.Significant, OK: true}
		m[j][i] = MatrixCell{Diff: 0 - p.MeanDiff, Significant: p.Significant, OK: true} // 0 − x: never −0
	}
	return m
}
