// Command refcases is a development tool for the ONNX extractors' test
// fixtures (package tinymodels), outside the product's data flow and not run
// by go test: it prints, as JSON, model inputs with the outputs of the Go
// reference forward passes and tokenizer texts with their designed ids, for
// the Node.js scripts in the parent directory to compare against ONNX
// Runtime and tokenizers.js.
package main
