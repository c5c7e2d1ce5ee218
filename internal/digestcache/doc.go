// Package digestcache remembers the SPEC §2.9 endpoint digests of embedding
// files between runs (and, through Sub, other facts about the same files),
// so the dataset loader (runspec) does not hash again a file that has not
// changed since an earlier run. Hashing is the one part of a content
// identity whose cost grows with the data (about 0.8 s per GB on one core
// with SHA-NI), and users evaluate many backbones, compressions and
// configurations over the same gallery file.
//
// An entry is keyed by what identifies a file's content without reading it:
// device, inode, size, modification and change times (nanoseconds), the
// absolute path and what was read from the file (format, tensor). The change
// time cannot be set by a user, and every write moves it, so a rewritten
// file misses the cache. As in Go's build cache, a file whose times are less
// than two seconds older than the start of its load is never stored: a
// write in the same timestamp tick as the hash could otherwise go unseen.
// Entries repeat their full key and are checked against it on every read.
//
// The cache is an optimisation only: every failure to read or write it falls
// back to hashing, silently. VERTEBRAE_DIGEST_CACHE=off disables it; any
// other non-empty value names its directory (default: the user cache
// directory's vertebrae/digests).
package digestcache
