// Package plots renders the figures of SPEC §5.8 from a benchmark result
// (package results), for the HTML report of package report and the CLI's
// figure files: metrics against k, the per-query distribution of the
// primary metric, the retrieval margins, the compression frontier and the
// comparison forest plot. It reads results only (never the scorer) and
// draws with gonum.org/v1/plot, whose SVG and PNG output is byte-stable, so
// equal inputs give byte-identical files.
package plots
