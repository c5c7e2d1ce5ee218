// Package columnar is the single-format reader (and writer) of Parquet files
// and Arrow IPC files or streams (.arrow, .feather, .ipc) under
// formats/files: it reads embedding matrices and optional row IDs from them,
// SPEC §6.4.1. The embedding column holds fixed-size lists, or lists of
// constant length, of float16, float32 or float64; the element type is kept.
//
// Readers stream: batches are copied one at a time into a single output
// slice allocated once, so peak memory is the matrix plus one batch.
package columnar
