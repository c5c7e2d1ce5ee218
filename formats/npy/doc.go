// Package npy reads and writes NumPy .npy files (format versions 1.0, 2.0
// and 3.0), the single-format reader of .npy embedding and relevance
// matrices under formats/files and the dense array format of artifacts.
//
// It is written by hand: float16, big-endian and Fortran-order data are
// decoded directly, and the header parser (header.go) is kept apart from the
// data decoding so that the data can come from a memory mapping (MapMatrix).
// Readers never trust the header: the byte count the shape needs is compared
// with the bytes present before anything is allocated. Every user-facing
// error is a *formats.Error naming the file (SPEC §6.4).
package npy
