// Command gen writes the test fixtures of the ONNX extractors, outside the
// product's data flow: the tiny ONNX test models, tokenizers, processor
// configurations and images of extract/onnx/testdata (package tinymodels).
// It is run by go generate in extract/onnx/internal/tinymodels.
package main
