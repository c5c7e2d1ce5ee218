// Package npz reads and writes NumPy .npz archives, the single-format reader
// of .npz embedding and relevance matrices under formats/files and the
// sparse array format of artifacts: a single dense array, or a sparse matrix
// in the layout scipy.sparse.save_npz writes (members data, indices, indptr,
// format and shape). Members are decoded lazily, so asking for one array
// never decompresses the others.
//
// Every user-facing error is a *formats.Error naming the archive and, where
// it applies, the array and row (SPEC §6.4.1, §6.4.3).
package npz
