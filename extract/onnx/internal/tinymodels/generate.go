package tinymodels

// Regenerate extract/onnx/testdata (everything but its README.md):
//
//	go generate ./extract/onnx/internal/tinymodels

//go:generate go run ./gen -out ../../testdata
