// Package files opens the input files of a retrieval task by their
// extension, on top of the single-format readers of formats/… and below the
// dataset loader of runspec (which the CLI and the Beam module share):
// embedding tables (.npy, .npz, .safetensors, Parquet, Arrow), relevance
// (qrels in every form), labels, exclusions, raw texts and image lists.
package files
