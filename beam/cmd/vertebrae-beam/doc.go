// Command vertebrae-beam is the entry point of a distributed run on Apache
// Beam: it runs a vertebrae evaluation from a run file as the pipeline of
// package pipeline (SPEC §11.4), over an artifact store:
//
//	vertebrae-beam run --spec run.yaml --store URI --total-shards N [--beam-option k=v …]
//
// It plans and writes the relevance artifact locally, runs embed shards →
// merge → per gallery shard the positives stage, then (once all are
// committed) the count stage → finalize → score artifact (with
// --query-block: score query block × gallery shard → group by query block →
// metrics → score artifact) on the chosen runner (Prism in-process by
// default; Flink, Spark or Dataflow through --beam-option runner=…), then
// prints the report reconstructed from the score artifacts (the JSON of
// `vertebrae retrieval from-artifacts`).
//
// Beam runners start this same binary as a worker (`--worker …`); that
// mode is handed to beam.Init before anything else parses the arguments.
// A PROCESS environment may start it directly as its boot program
// (`--environment_type=PROCESS --environment_config={"command":
// "/path/to/vertebrae-beam"}`): started with --id and
// --provision_endpoint, it fetches its endpoints and pipeline options from
// the runner's provision service and runs as the worker in the same
// process (boot.go).
package main
