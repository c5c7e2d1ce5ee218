// Package artifact is the verified artifact layer of distributed runs
// (SPEC §10) above an object store (package store): the endpoints,
// relevance, compressions and scores that sharded extraction (package
// distributed) and the scoring stages write, and that are read back to score
// and to reconstruct a run's result. It holds the key rules and builders
// (§10.4), manifests as the commit point with content-addressed data files
// (§10.5), the metadata documents of §10.6, and verification on every read.
//
// Layout of a key K:
//
//	K/manifest.json              the commit point, written last
//	K/array-<sha256>.npy | .npz  dense (C order, little-endian) or CSR array
//	K/metadata-<sha256>.json     the metadata document (canonical JSON)
//	K/chunks-<sha256>.bin        per data file: its 8 MiB chunks' SHA-256s
//
// A data file's digest is the SHA-256 of its sidecar of chunk digests
// (package internal/chunkdigest), so a reader verifies exactly the chunks
// it reads (ReadRows: a gallery shard's row range) and a full read
// verifies chunks in parallel. Data files are immutable and named by
// their digest, so a write that dies
// before its manifest leaves the previous generation (whose files it never
// touched) readable, and concurrent writers of one key each commit a
// complete generation with one atomic manifest Put: the last one wins.
//
// Above the storage rules: WriteEndpoint/ReadEndpoint (endpoint embeddings,
// the entry points for embedding caches), WriteRelevance/ReadRelevance,
// Compress (paired compression, §8.4 no-op included), Score (the checks of
// §10.7, then evaluate.Pair: bit-identical to a local run), FromArtifacts
// (the reconstruction of §10.8). WriteArray takes any Source, so a merge
// streams its shards straight into the artifact (package distributed).
package artifact
