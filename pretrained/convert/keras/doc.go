// Package keras converts TensorFlow.js Keras layers models (model.json plus
// weight shards, or the JavaScript module wrappers some npm packages ship
// them in) to ONNX, so that package pretrained can prepare them for the
// onnx_image and onnx_text adapters of package extract/onnx (SPEC §9.4). It
// is pure Go: no Python, Node or TensorFlow at conversion time.
//
// Reading: ParseModelJSON reads model.json; ParseModelModule and
// ParseWeightsModule read browserify-wrapped modules (model.min.js,
// group1-shard1of1.min.js) by parsing the exported data literal, never by
// running JavaScript. LoadWeights dequantises uint8/uint16 weights exactly
// as TF.js does: q·scale + min in float64, rounded once to float32.
//
// Converting: Model.Convert emits an opset-17 graph of the layers the chosen
// output depends on, in NCHW layout (input [batch, C, H, W] float32 where
// Keras took NHWC): Conv2D, DepthwiseConv2D (any depth multiplier),
// BatchNormalization, ReLU (with max_value, e.g. ReLU6), Activation, Add,
// Concatenate, ZeroPadding2D, AveragePooling2D, MaxPooling2D,
// GlobalAveragePooling2D, GlobalMaxPooling2D, Flatten (in channels-last
// order, as Keras flattens), Dense and Dropout (identity at inference).
// "same" padding is resolved to TensorFlow's explicit pads (the odd pixel at
// the end). Anything else fails with ErrUnsupported naming the layer.
//
// Choices: batch normalisation is kept as BatchNormalization nodes rather
// than folded into convolution weights, so the file holds the original
// parameters bit for bit (ONNX Runtime folds them when it optimises the
// graph); the input size is the model's fixed batch_input_shape, because
// the explicit pads depend on it. The output bytes are a pure function of
// the model and Options (deterministic: same bytes on every run).
package keras
