// Package results holds the result types of an evaluation and their JSON
// report, between evaluate (and evaluate/compare) and the writers of package
// report. Its values are those of SPEC §5.1–§5.3: one direction's score
// result, one extractor result per (extractor × compression variant), and
// the benchmark result with its ranked view and, for two or more results,
// the comparison of SPEC §13. They marshal to (and are read back from) the
// JSON report contract of SPEC §5.4.
package results
