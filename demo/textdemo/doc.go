// Package textdemo is the real text retrieval demo (`vertebrae demo
// --text`), a dataset and backbones that the CLI runs through evaluate: the
// 778 SAP Fiori documentation chunks of the npm package
// @sap-ux/fiori-docs-embeddings, each chunk a query against all the others
// (its own pair excluded), relevance = the same source file. It compares
// four frozen text backbones:
//
//   - the all-MiniLM-L6-v2 vectors the package ships (precomputed, 384-d);
//   - Universal Sentence Encoder Lite converted to ONNX (onnx_text, 512-d);
//   - GloVe 6B 100-d word vectors, mean-pooled (pure Go);
//   - TF-IDF over lower-cased word tokens, sparse CSR rows (pure Go).
//
// Nothing is embedded in the binary: the data and models come from a
// directory written by `vertebrae models prepare` (package pretrained),
// checked against its manifest before use.
package textdemo
