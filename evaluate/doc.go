// Package evaluate runs the retrieval protocol end to end, from a validated
// dataset (package retrieval) to the ranked benchmark result of SPEC §5
// (package results): Run scores it with precomputed backbones and Benchmark
// with extractors (package extract), whose endpoints it encodes first, both
// ranking in both directions (package rank) and computing metrics and
// diagnostics (package metrics).
package evaluate
