// Package onnx holds the ONNX Runtime extractors that runspec builds from a
// run file (SPEC §9.4): it runs Hugging Face, CLIP, OpenCLIP and SigLIP ONNX
// exports on ONNX Runtime as vertebrae extractors:
//
//   - [DualEncoder] (run-file type onnx_dual_encoder): a text tower and an
//     image tower sharing one embedding space, exposed as the branches
//     text_branch and image_branch for cross-modal retrieval;
//   - [TextEncoder] (onnx_text): a single-tower sentence-embedding model;
//   - [ImageEncoder] (onnx_image): a single-tower image model.
//
// Text goes through the model directory's tokenizer.json (package
// extract/onnx/tokenize); images through its preprocessor_config.json
// (package extract/onnx/imageprep). Outputs are float32 and, unless Normalize is set, are
// returned exactly as the model produced them.
//
// ONNX Runtime is a C library loaded at run time with
// github.com/yalue/onnxruntime_go, so the adapters need cgo. Without cgo the
// package still builds: its constructors return [ErrNotCompiled]. The library
// is found from the configured path, the ONNXRUNTIME_LIB environment
// variable, or standard install locations (see [ResolveLibrary]).
//
// # Directory layouts
//
// Hugging Face exports (CLIP, SigLIP, and the Xenova/optimum layout):
//
//	model_dir/
//	  text_model.onnx, vision_model.onnx   (top level, or under onnx/)
//	  tokenizer.json [tokenizer_config.json special_tokens_map.json]
//	  preprocessor_config.json
//	  config.json                           (optional)
//
// OpenCLIP exports in the layout used by Immich's model repository:
//
//	model_dir/
//	  config.json                           (open_clip model config; text_cfg.context_length)
//	  textual/model.onnx  textual/tokenizer.json [textual/tokenizer_config.json]
//	  visual/model.onnx   visual/preprocess_cfg.json
//
// Single-tower models: model_dir/model.onnx (or onnx/model.onnx) next to
// tokenizer.json (onnx_text) or preprocessor_config.json (onnx_image).
//
// # Determinism
//
// ONNX Runtime is not covered by vertebrae's bit-identity rule (SPEC §4):
// parity with other runtimes is approximate. Outputs do not depend on how rows
// are batched when text is padded to max_length (the default); with padding
// "longest" the extractor reports itself as not streaming-safe.
package onnx
