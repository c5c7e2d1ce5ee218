// Package pipeline is vertebrae's evaluation as an Apache Beam pipeline
// (SPEC §11.4), which cmd/vertebrae-beam runs from a run file (package
// runspec) over an artifact store. Its stages: embed shards → merge → per
// gallery shard the positives stage, then (all committed) the count stage →
// finalize → score artifact (or, with query blocks, score query block ×
// gallery shard → group by query block → metrics → score artifact). Heavy
// data stays in the artifact store; PCollection elements are keys, shard
// descriptors and serialised partials. Every stage calls the same
// engine-free library code as the job-array commands (package distributed,
// the partial scorer of package rank), so the result equals `vertebrae
// retrieval run` bit for bit.
package pipeline
