// Package formats is the common base of the single-format file readers and
// writers under it (npy, npz, safetensors, columnar, qrels, idlist), which
// formats/files and runspec use to load a dataset: the error type that names
// the file (and line) a problem was found in, and a reader that stops once
// its context is cancelled.
package formats
