package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/results"
)

// Markdown parts of the SPEC §13 comparison: the ranking table gains a key
// letter per result, the 95 % interval of the primary metric and, as in
// ranx's comparison tables, superscripts naming (by key) the results each
// one beats significantly after Holm adjustment; a `## Comparison` section
// lists every compared pair.

// primaryBlock is the forward block of the primary metric, which the
// ranking table's metric column shows (nil without a comparison).
func primaryBlock(b *results.Benchmark, primary string) *results.MetricComparison {
	if b.Comparison == nil {
		return nil
	}
	for i := range b.Comparison.Blocks {
		bl := &b.Comparison.Blocks[i]
		if bl.Metric == primary && bl.Direction == "forward" {
			return bl
		}
	}
	return nil
}

// keyLetter names ranked position i: a, b, …, z, then 27, 28, ….
func keyLetter(i int) string {
	if i < 26 {
		return string(rune('a' + i))
	}
	return strconv.Itoa(i + 1)
}

// rankingKeys maps result names to their key letters (ranked order).
func rankingKeys(ranked []*results.ExtractorResult) map[string]string {
	keys := make(map[string]string, len(ranked))
	for i, r := range ranked {
		keys[r.Name] = keyLetter(i)
	}
	return keys
}

// comparedCells returns the superscripted metric cell and the interval
// cell of result name in the block ("-" when it is not compared).
func comparedCells(bl *results.MetricComparison, keys map[string]string, name, value string) (string, string, error) {
	for _, s := range bl.Results {
		if s.Name != name {
			continue
		}
		lo, err := fixed4(s.CI.Low, name, "ci.low")
		if err != nil {
			return "", "", err
		}
		hi, err := fixed4(s.CI.High, name, "ci.high")
		if err != nil {
			return "", "", err
		}
		var sup strings.Builder
		for _, beaten := range s.Beats {
			sup.WriteString(keys[beaten])
		}
		if sup.Len() > 0 {
			value += "<sup>" + sup.String() + "</sup>"
		}
		return value, "[" + lo + ", " + hi + "]", nil
	}
	return value, "-", nil
}

// writeRankingLegend explains the key letters, superscripts and intervals.
func writeRankingLegend(buf *bytes.Buffer, c *results.Comparison, primary string) {
	s := c.Settings
	family := "every pair of compared results"
	if s.Baseline != nil {
		family = "each result against the baseline " + EscapeMarkdown(*s.Baseline)
	}
	fmt.Fprintf(buf, "\nSuperscripts: the keys of the results whose forward %s this result is significantly better than (%s, Holm-adjusted p < %s over %s). 95 %% CI: %s bootstrap interval of the mean, %d resamples, seed %d.",
		EscapeMarkdown(primary), testName(s.Test), formatAlpha(s.Alpha), family, ciName(s.CIMethod), s.Bootstrap, s.Seed)
	if note := leftOutNote(s, EscapeMarkdown); note != "" {
		buf.WriteString(" " + note)
	}
	buf.WriteString("\n")
}

// leftOutNote names the results an explicit cap left out of the
// comparison, and why ("" when every result is compared).
func leftOutNote(s results.ComparisonSettings, esc func(string) string) string {
	if len(s.LeftOut) == 0 {
		return ""
	}
	names := make([]string, len(s.LeftOut))
	for i, n := range s.LeftOut {
		names[i] = esc(n)
	}
	limit := "a cap"
	if s.MaxResults != nil {
		limit = fmt.Sprintf("max_results = %d", *s.MaxResults)
	}
	return fmt.Sprintf("Not compared (no interval, no significance): %s; the comparison was limited to the %d best-ranked results (%s; n results make n(n − 1)/2 pairs).",
		strings.Join(names, ", "), len(s.Results), limit)
}

// matrixNames are the block's results in ranked order (the order of the
// key letters).
func matrixNames(bl *results.MetricComparison, ranked []*results.ExtractorResult) []string {
	in := make(map[string]bool, len(bl.Results))
	for _, r := range bl.Results {
		in[r.Name] = true
	}
	var names []string
	for _, r := range ranked {
		if in[r.Name] {
			names = append(names, r.Name)
		}
	}
	return names
}

// Marks of a significant matrix cell: the row result is significantly
// better (▲) or worse (▼) than the column result.
const (
	markBetter = "▲"
	markWorse  = "▼"
)

// matrixCell formats one cell: the signed difference with 4 decimals and
// the significance mark ("·" on the diagonal, "-" without a pair).
func matrixCell(c results.MatrixCell, diag bool, name string) (text, mark string, err error) {
	switch {
	case diag:
		return "·", "", nil
	case !c.OK:
		return "-", "", nil
	}
	text, err = fixed4(c.Diff, name, "mean_diff")
	if err != nil {
		return "", "", err
	}
	if c.Diff > 0 {
		text = "+" + text
	}
	if c.Significant {
		switch {
		case c.Diff > 0:
			mark = markBetter
		case c.Diff < 0:
			mark = markWorse
		}
	}
	return text, mark, nil
}

// matrixNote explains a matrix: what a cell holds and what the marks mean.
func matrixNote(s results.ComparisonSettings, bl *results.MetricComparison) string {
	return fmt.Sprintf("Each cell: mean per-query difference row − column; %s the row result is significantly better, %s significantly worse (%s, Holm-adjusted p < %s over the %d pairs).",
		markBetter, markWorse, testName(s.Test), formatAlpha(s.Alpha), len(bl.Pairs))
}

// writeMatrix renders block bl as a results × results table, rows and
// columns in ranked order, columns headed by the key letters.
func writeMatrix(buf *bytes.Buffer, s results.ComparisonSettings, bl *results.MetricComparison, ranked []*results.ExtractorResult, keys map[string]string) error {
	names := matrixNames(bl, ranked)
	m := bl.Matrix(names)
	fmt.Fprintf(buf, "**%s, %s** (n = %d queries). %s\n\n", EscapeMarkdown(bl.Metric), bl.Direction, bl.NQueries, matrixNote(s, bl))
	buf.WriteString("| key | extractor |")
	for _, n := range names {
		buf.WriteString(" " + keys[n] + " |")
	}
	buf.WriteString("\n| --- | --- |" + strings.Repeat(" ---: |", len(names)) + "\n")
	for i, row := range names {
		fmt.Fprintf(buf, "| %s | %s |", keys[row], EscapeMarkdown(row))
		for j, col := range names {
			text, mark, err := matrixCell(m[i][j], i == j, row+" vs "+col)
			if err != nil {
				return err
			}
			if mark != "" {
				text += " " + mark
			}
			buf.WriteString(" " + text + " |")
		}
		buf.WriteString("\n")
	}
	buf.WriteString("\n")
	return nil
}

func testName(t string) string {
	if t == "ttest" {
		return "paired t-test"
	}
	return "paired sign-flip randomization test"
}

func ciName(m string) string {
	if m == "percentile" {
		return "percentile"
	}
	return "BCa"
}

func formatAlpha(a float64) string { return strconv.FormatFloat(a, 'g', -1, 64) }

// writeComparison renders one table row per compared pair of every block;
// an "all" family of more than results.MatrixAbove results is first shown
// as one pairwise significance matrix per block.
func writeComparison(buf *bytes.Buffer, c *results.Comparison, ranked []*results.ExtractorResult) error {
	if note := leftOutNote(c.Settings, EscapeMarkdown); note != "" {
		buf.WriteString(note + "\n\n")
	}
	matrices := 0
	keys := rankingKeys(ranked)
	for i := range c.Blocks {
		if bl := &c.Blocks[i]; c.ShowsMatrix(bl) {
			if err := writeMatrix(buf, c.Settings, bl, ranked, keys); err != nil {
				return err
			}
			matrices++
		}
	}
	if matrices > 0 {
		buf.WriteString("Every pair, with its interval and p-values:\n\n")
	}
	p := "randomization p"
	if c.Settings.Test == "ttest" {
		p = "t-test p"
	}
	fmt.Fprintf(buf, "| metric | direction | A | B | mean diff (A − B) | 95 %% CI | %s | Holm p | significant | effect size |\n", p)
	buf.WriteString("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |\n")
	for _, bl := range c.Blocks {
		for _, pr := range bl.Pairs {
			name := pr.A + " vs " + pr.B
			diff, err := fixed4(pr.MeanDiff, name, "mean_diff")
			if err != nil {
				return err
			}
			lo, err := fixed4(pr.CI.Low, name, "ci.low")
			if err != nil {
				return err
			}
			hi, err := fixed4(pr.CI.High, name, "ci.high")
			if err != nil {
				return err
			}
			raw, adj := pr.RandomizationP, pr.RandomizationPAdjusted
			if c.Settings.Test == "ttest" {
				raw, adj = pr.TTestP, pr.TTestPAdjusted
			}
			es := "-"
			if pr.EffectSize != nil {
				if es, err = fixed4(*pr.EffectSize, name, "effect_size"); err != nil {
					return err
				}
			}
			sig := "no"
			if pr.Significant {
				sig = "yes"
			}
			fmt.Fprintf(buf, "| %s | %s | %s | %s | %s | [%s, %s] | %s | %s | %s | %s |\n",
				EscapeMarkdown(bl.Metric), bl.Direction, EscapeMarkdown(pr.A), EscapeMarkdown(pr.B), diff, lo, hi, formatP(raw), formatP(adj), sig, es)
		}
	}
	var notes []string
	for i := range c.Blocks {
		bl := &c.Blocks[i]
		for _, pr := range bl.Pairs {
			if note, ok := disagreement(c.Settings, bl, pr, EscapeMarkdown); ok {
				notes = append(notes, note)
			}
		}
	}
	if len(notes) > 0 {
		buf.WriteString("\n")
		for _, n := range notes {
			buf.WriteString("- " + n + "\n")
		}
	}
	return nil
}

// disagreement explains, in one sentence, a pair whose confidence interval
// and Holm-adjusted test disagree: the interval of the difference excludes
// 0 but the pair is not significant, or it includes 0 but the pair is
// significant. The interval is a bootstrap interval of the pair alone,
// not adjusted for the block's other pairs; the test is Holm-adjusted
// over them (and is a different procedure). ok is false when they agree.
func disagreement(s results.ComparisonSettings, bl *results.MetricComparison, p results.PairComparison, esc func(string) string) (note string, ok bool) {
	excludes := p.CI.Low > 0 || p.CI.High < 0
	if excludes == p.Significant {
		return "", false
	}
	name := p.A + " vs " + p.B
	lo, err := fixed4(p.CI.Low, name, "ci.low")
	if err != nil {
		return "", false
	}
	hi, err := fixed4(p.CI.High, name, "ci.high")
	if err != nil {
		return "", false
	}
	raw, adj := p.RandomizationP, p.RandomizationPAdjusted
	if s.Test == "ttest" {
		raw, adj = p.TTestP, p.TTestPAdjusted
	}
	level := "95"
	if s.ConfidenceLevel > 0 {
		level = strconv.FormatFloat(s.ConfidenceLevel*100, 'g', -1, 64)
	}
	pairs := fmt.Sprintf("%d pairs", len(bl.Pairs))
	if len(bl.Pairs) == 1 {
		pairs = "1 pair"
	}
	head := fmt.Sprintf("%s vs %s (%s, %s): the %s %% interval of the difference, [%s, %s], ",
		esc(p.A), esc(p.B), esc(bl.Metric), bl.Direction, level, lo, hi)
	alpha := formatAlpha(s.Alpha)
	switch {
	case excludes && raw < s.Alpha:
		return head + fmt.Sprintf("excludes 0, but after Holm adjustment over %s the %s is not significant at α = %s (p = %s, Holm p = %s): the interval is not adjusted for multiple comparisons.",
			pairs, testName(s.Test), alpha, formatP(raw), formatP(adj)), true
	case excludes:
		return head + fmt.Sprintf("excludes 0, but the %s is not significant at α = %s even before Holm adjustment (p = %s): the bootstrap interval and the test are different procedures and can disagree near the boundary.",
			testName(s.Test), alpha, formatP(raw)), true
	default:
		return head + fmt.Sprintf("includes 0, but the %s is significant at α = %s after Holm adjustment over %s (Holm p = %s): the bootstrap interval and the test are different procedures and can disagree near the boundary.",
			testName(s.Test), alpha, pairs, formatP(adj)), true
	}
}

// formatP writes a p-value with 4 significant digits ("0.0001", "3.2e-08").
func formatP(p float64) string {
	if p != 0 && p < 1e-4 {
		return strconv.FormatFloat(p, 'e', 1, 64)
	}
	return strconv.FormatFloat(p, 'f', 4, 64)
}
