// Package matrix holds the embedding matrices that flow from the file
// readers and extractors to the scorer: dense row-major matrices stored as
// float16, float32 or float64, and compressed sparse row (CSR) matrices.
// Matrices are read-only once constructed so that they can be shared between
// scoring workers and be memory-mapped.
package matrix
