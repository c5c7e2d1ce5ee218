// Package distributed is the engine-free core of distributed extraction (SPEC
// §11.1, §11.2), between extract and the artifact store: the plan document,
// the encoding of one extraction shard (rows {r : r mod N = i}) and the
// validated merge of an endpoint's shards into one artifact. The CLI's plan /
// embed-shard / merge commands and the Beam pipeline both drive it, so every
// engine writes the same artifacts.
package distributed
