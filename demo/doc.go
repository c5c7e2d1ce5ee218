// Package demo holds a small, self-contained retrieval task for trying
// vertebrae without downloading anything, the input of `vertebrae demo`,
// which builds a dataset from it and runs it through evaluate: a fixed
// Fashion-MNIST subset (1,000 test images as queries, 5,000 training images
// as the gallery) embedded in the binary, three frozen pure-Go image
// descriptors ("backbones") of clearly different quality and width, and the
// MNIST classifier mnist-8 for `vertebrae demo --onnx`.
//
// The data file is produced by internal/gen from the Debian package
// dataset-fashion-mnist; see data/LICENSE-fashion-mnist.txt for its licence
// and provenance. The model is extracted by internal/mnistgen; see
// data/LICENSE-mnist-onnx.txt.
package demo
