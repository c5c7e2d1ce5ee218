// Package retrieval is the retrieval task: dataset, relevance, protocol
// config, fingerprints. It defines the validated retrieval dataset (SPEC §2)
// with its relevance, the retrieval configuration (SPEC §3) and the
// fingerprints that identify a protocol (SPEC §10.3); runspec builds it from
// the input files, and the encoding, scoring and evaluation steps read it.
package retrieval
