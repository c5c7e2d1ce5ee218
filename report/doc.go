// Package report writes a benchmark result (package results) as the human
// and tool-facing exports of SPEC §5.5–§5.8, the last step of a run: the
// Markdown report, the self-contained HTML report with the figures of
// report/plots, the per-query CSV, TREC run files and TREC qrels. The JSON
// report is results.Benchmark.MarshalReport.
package report
