// Package tinymodels holds test fixtures of the ONNX extractors (package
// extract/onnx), outside the product's data flow: it defines the tiny ONNX
// models, tokenizers, processor configurations and images under
// extract/onnx/testdata, together with reference forward passes in plain Go
// (float64), so that tests of the ONNX Runtime adapters can compute expected
// outputs independently of ONNX Runtime.
//
// Every weight is a small multiple of a power of two (1/8, 1/16, ... 1/512)
// and therefore exactly representable in float32. The files are written by
// WriteAll, which the gen program runs through go generate:
//
//	go generate ./extract/onnx/internal/tinymodels
//
// See extract/onnx/testdata/README.md for the model descriptions and the
// designed retrieval outcome.
package tinymodels
