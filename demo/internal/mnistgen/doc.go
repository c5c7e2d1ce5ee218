// Command mnistgen is the build-time generator of the demo's ONNX model,
// outside the run flow: it extracts the MNIST classifier (ONNX model zoo
// "mnist-8", exported by CNTK, MIT licence) and its three reference test
// cases from the Go module github.com/owulveryck/onnx-go@v0.5.0, where the
// model bytes sit in a Go string literal
// (internal/examples/mnist/mnist_binary.go), for package demo to embed.
// It writes demo/data/mnist-8.onnx and demo/data/mnist-8-testdata/. Run
// from the demo directory with `go generate` (needs the Go module proxy
// once).
package main
