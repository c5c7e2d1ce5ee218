// Package safetensors reads and writes the safetensors tensor format
// (SPEC §6.4.1), the single-format reader of .safetensors embedding tables
// under formats/files. A file is an 8-byte little-endian header length N,
// N bytes of JSON describing each tensor's dtype, shape and byte range, then
// the data buffer the ranges point into (little-endian, C order).
//
// Open memory-maps the file read-only where it can and returns matrices that
// view the mapping, so resident memory is only what the scorer touches.
// Nothing in the header is trusted: every byte range is checked against the
// buffer before anything is sized from it. Every user-facing error is a
// *formats.Error naming the file.
package safetensors
