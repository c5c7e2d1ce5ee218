// Package modelstest is a test helper that finds the real models package
// pretrained prepares (`vertebrae models prepare`), for the tests of
// pretrained and its converters, extract/onnx/tokenize, the text demo and
// the CLI. The tests that need them skip when VERTEBRAE_MODELS_DIR is
// unset, unless VERTEBRAE_REQUIRE_MODELS is set: .ci/run prepares the
// models and sets both, so CI fails instead of skipping.
package modelstest
