// Package qrels is the single-format reader of relevance judgement ("qrels")
// files in the text formats of SPEC §6.4.3 (TREC, TSV, CSV, JSONL) and of
// exclusion files (§6.4.5) under formats/files, and writes the qrels export
// of §5.6. Matrix formats (npy, npz) are identified here but read by the
// array readers.
//
// Readers keep IDs byte-exactly and report problems as *formats.Error naming
// the file and 1-based line. They do not resolve IDs or detect duplicates:
// the dataset does that, using Record.Line and Pair.Line in its messages.
package qrels
