// Package rank is the exact scorer of SPEC §4, between the encoded
// endpoints and package metrics: every query is scored against every
// eligible candidate, ranks follow the tie rule (descending score, then
// lower gallery index), and the n_q × n_g matrix is never held. Its score
// kernels are in internal/kernel.
//
// For every relevance kind, rank(p_r) = 1 + r + (negatives ahead of p_r),
// where p_0, p_1, … are a query's eligible positives in rank order. Every
// run is one pipeline, with each choice made once by the plan:
//
//	check (§4.9, check.go) → plan (plan.go) → per query chunk (pipeline.go):
//	  positives stage   exact scores of the eligible positives, grouped
//	                    into dense tiles (by class for labels, by gallery
//	                    row for explicit pairs, positives.go); the pooled
//	                    summary sink folds them (pooled.go); their rank
//	                    order becomes the query's thresholds (thresholds.go)
//	  gallery pass      over a row set (the gallery, or a shard's rows,
//	                    global indices kept): tiles scored exhaustively,
//	                    sparse, or through the screen driver over a
//	                    cheap-score type (float32, int8 or int16,
//	                    screen*.go); block-major, or query-major when a
//	                    query's counting state is large (many positives);
//	                    one row fold places every eligible negative in the
//	                    slot of the first positive it precedes (pass.go)
//	  merge             integer counts summed over workers, ranks from the
//	                    counts and the rank order, results in query order
//	                    (merge.go; shard.go for partials)
//
// The stages are types of one generic scorer over the working precision
// (float32 or float64); exact[T] is the only caller of the exact kernels,
// and relevance is a view (explicit pairs, or label classes that are never
// materialised). A gallery shard is the same pass over its own rows, so
// shards get every screen and the implicit classes. Every reported number
// is bit-identical across block sizes, threads, chunks, screens, shard
// splits and CPU kernels; plan_test.go checks every feasible plan against
// an oracle written from the SPEC. When any pair's exact score is not
// finite, the run fails naming the pair with the lowest gallery index, then
// query index (failure.go), whatever the path.
package rank
