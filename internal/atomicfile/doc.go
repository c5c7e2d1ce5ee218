// Package atomicfile is a shared helper that writes whole files atomically
// (SPEC §6.1), for model preparation, the digest cache and the data
// generators: the data goes to a temporary file in the target directory,
// which is synced and renamed over the target, so readers see either the old
// file or the complete new one and a failed write leaves nothing behind.
package atomicfile
