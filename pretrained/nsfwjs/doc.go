// Package nsfwjs builds the MobileNetV2 image backbone shipped in the npm
// package nsfwjs@4.4.0 (MIT) as an onnx_image model directory (SPEC §9.4),
// one of the models package pretrained prepares. From the unpacked package
// (npm pack nsfwjs@4.4.0) it converts the TF.js Keras layers model with
// package keras (pretrained/convert/keras) and writes
//
//	model.onnx                 input pixel_values [batch,3,224,224], output flatten_1 [batch,1280]
//	preprocessor_config.json   resize to 224×224 (bilinear), ×1/255, no normalisation
//	conversion.json            source file digests, converter version and choices
//
// Package pretrained registers it (`vertebrae models prepare`), which also
// copies the package's LICENSE next to them and records every file's
// SHA-256 in the models directory's manifest.
//
// The model is MobileNetV2 1.0 @224, an ImageNet backbone fine-tuned by
// nsfwjs's authors for five-class NSFW detection; flatten_1 is the
// 1280-d average-pooled feature before its classifier head. It is a real
// CNN for image similarity, not a CLIP substitute (no text tower).
//
// The output bytes are a pure function of the package files.
package nsfwjs
