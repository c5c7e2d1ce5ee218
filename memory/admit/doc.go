// Package admit runs the batched endpoint encoding of SPEC §7.3–§7.4,
// between the extractors (package extract) and the scorer: it calls an
// encoder on contiguous row batches, checks every batch, and admits the rows
// into the run's shared memory budget — allocated once in memory, or staged
// in spill files and memory-mapped read-only when they do not fit.
//
// The package knows nothing about extractors; callers adapt an extractor to
// a Func. The query endpoint of a run must be encoded (and succeed) before
// its gallery endpoint, both against the same *Budget.
package admit
