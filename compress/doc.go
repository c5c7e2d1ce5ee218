// Package compress implements paired compression (SPEC §8), applied to the
// endpoints that extract encodes before rank scores them (by
// evaluate.Benchmark locally, artifact's Compress in distributed runs): a
// compressor is fitted on the gallery endpoint only and the same fitted
// state is applied to the query endpoint, so both sides of a retrieval pair
// live in one space.
package compress
