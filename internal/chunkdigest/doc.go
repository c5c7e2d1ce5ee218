// Package chunkdigest is the chunked SHA-256 of SPEC §10.5, the shared
// helper behind the content digests of embedding files (package retrieval)
// and of the artifacts' data files (package artifact). A file is cut into
// consecutive ChunkBytes chunks (the last may be shorter; an empty file is
// one empty chunk), each chunk gets its SHA-256, the 32-byte chunk digests
// in order form the sidecar, and the file's digest is the SHA-256 of the
// sidecar. Chunks hash on every core, and any byte range can be verified
// from its chunks alone, so a gallery shard checks the rows it reads without
// touching the rest of the file.
//
// One chunk's digest is `sha256sum` of that chunk, so a user can check a
// file with standard tools (`split -b 8M`, then `sha256sum` each part).
package chunkdigest
