// Package tfjs converts TensorFlow.js graph models (model.json + weight
// shards, as written by tensorflowjs_converter) to ONNX for package
// pretrained, so that real pretrained backbones shipped in npm packages run
// on the ONNX adapters of package extract/onnx (SPEC §9.4). Only the
// TensorFlow ops those models use are supported; any other op fails the
// conversion with its name.
//
// The conversion is a pure function of the model files: the same input gives
// the same ONNX bytes on every run (tested), so a prepared model directory
// has a stable content identity (SPEC §9.5).
package tfjs
