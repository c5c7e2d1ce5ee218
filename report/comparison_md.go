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
	fmt.Fprintf(buf, "\nSuperscripts: the keys of the results whose forward %s this result is significantly better than (%s, Holm-adjusted p < %s over %s). 95 %% CI: %s bootstrap interval of the mean, %d resamples, seed %d.\n",
		EscapeMarkdown(primary), testName(s.Test), formatAlpha(s.Alpha), family, ciName(s.CIMethod), s.Bootstrap, s.Seed)
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

// writeComparison renders one table row per compared pair of every block.
func writeComparison(buf *bytes.Buffer, c *results.Comparison) error {
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
	return nil
}

// formatP writes a p-value with 4 significant digits ("0.0001", "3.2e-08").
func formatP(p float64) string {
	if p != 0 && p < 1e-4 {
		return strconv.FormatFloat(p, 'e', 1, 64)
	}
	return strconv.FormatFloat(p, 'f', 4, 64)
}
