// Package imageprep decodes images and turns them into float32 C×H×W
// tensors the way a Hugging Face image processor configured by a
// preprocessor_config.json does (CLIP, SigLIP, ViT style slow processors,
// which resize through PIL on uint8 images and finish in numpy), for ONNX
// vision encoders (SPEC §9.4).
//
// # Pipeline
//
// Config.Tensor applies, in transformers' order:
//
//  1. Convert to 8-bit RGB like PIL's convert("RGB"): grey replicated,
//     palette expanded, alpha dropped (the straight, un-premultiplied colour
//     is kept, never composited), 16-bit samples reduced to their high byte,
//     YCbCr converted with libjpeg's jdcolor.c fixed-point arithmetic, CMYK
//     with Pillow's cmyk2rgb arithmetic. Lossy WebP is converted at decode
//     time with libwebp's VP8YuvToRgb arithmetic (limited-range BT.601).
//     do_convert_rgb is parsed and recorded, but conversion always happens:
//     the tensor has 3 channels, and for RGB inputs skipping it is a no-op
//     (for other inputs transformers would fail or feed palette indices).
//  2. Vertebrae extension, not Hugging Face: with "do_convert_grayscale":
//     true the image becomes one luma channel, PIL's convert("L"):
//     L = (R·19595 + G·38470 + B·7471 + 0x8000) >> 16, and Channels() is 1.
//  3. do_resize (default true): "size" is {"shortest_edge": S} or a bare
//     int S (shorter side becomes S, longer side floor(long·S/short), like
//     transformers' get_resize_output_image_size), {"height": h, "width": w}
//     or [h, w] (exact). "resample" is required when resizing (its default
//     depends on the processor class): 2 = bilinear, 3 = bicubic; any other
//     value is an error naming the field.
//  4. do_center_crop (default: true when crop_size is present): crop_size
//     is {"height","width"}, [h, w] or an int (square). This reproduces
//     transformers' image_transforms.center_crop on the uint8 image, per
//     axis: when the image is at least as large as the crop the window
//     starts at floor((size − crop)/2); when it is smaller, the image is
//     placed at offset ceil((crop − size)/2) in a zero-filled crop (zeros
//     are pixel value 0, so after normalisation they become −mean/std).
//  5. do_rescale (default true), rescale_factor (default 1/255): like
//     transformers' rescale, float32(float64(x) · rescale_factor) — the
//     product is formed in float64 and rounded once to float32.
//  6. do_normalize (default true): image_mean and image_std are required,
//     each a number or a list of 1 or Channels() numbers (one value is
//     broadcast). As in transformers' normalize, mean and std are cast to
//     float32 and (x − mean_c)/std_c is evaluated in float32 arithmetic.
//  7. Output is channel-major float32: index c·H·W + y·W + x.
//
// JSON null counts as an absent key; unknown keys are ignored. Identity
// returns the resolved settings (plus Version) for recipes; settings of
// disabled steps are left out.
//
// # Resampling and measured PIL parity
//
// Resizing is an independent Go implementation of Pillow's
// ImagingResample for 8-bit images (horizontal pass, then vertical; support
// = filter support × max(1, in/out); coefficients normalised, quantised to
// 22 fractional bits with rounding away from zero, accumulated from 1<<21 and
// clipped). golang.org/x/image/draw is not used.
//
// Parity is measured by TestPILResizeParity and TestPILCLIPPipeline against
// fixtures written by internal/pilref/pilref.py with Pillow 9.4.0 and numpy
// 1.24.2 on x86-64 (126 resize cases of noise and hard-edged block images
// from 1×1 to 64×48, targets up to 2600 pixels, both filters; 6 full CLIP
// pipeline cases including 224×224 ones and zero-padded crops):
//
//	filter    direction  cases  uint8 values  differing  max |diff|
//	bilinear  up            18        16842          0           0
//	bilinear  down          30        22950          0           0
//	bilinear  mixed         15        26385          0           0
//	bicubic   up            18        16842          0           0
//	bicubic   down          30        22950          0           0
//	bicubic   mixed         15        26385          0           0
//
// That is exact equality (0 % differing pixels). The CLIP pipeline tensors
// are bit-identical to numpy's float32 output (SHA-256 of the whole tensor).
// Reproduce with:
//
//	go test ./extract/imageprep/ -run PIL -v
//
// Floating-point products in the coefficient computation are wrapped in
// explicit conversions so the Go compiler cannot fuse them into FMA
// instructions; Pillow's x86-64 build rounds every double operation.
//
// # Decoding
//
// DecodeFile and Decode recognise PNG, JPEG, GIF, WebP, BMP and TIFF by
// their magic bytes (without registering formats globally), check the
// header size against MaxPixels (64 Mi pixels) before decoding, and name
// the file in every error. Known differences from PIL's decoders, which
// affect decoded pixels before any preprocessing. Measured once (dev-time,
// not a committed test) on a 128×96 gradient-plus-noise image saved by PIL:
// JPEG q90 4:4:4 max |diff| 3, 4.5 % of values differ, mean 0.05; JPEG q90
// 4:2:0 max 28, 85 % differ, mean 3.5; lossy WebP q90 max 22, 84 % differ,
// mean 3.4; lossless WebP identical. The noisy chroma makes these worst
// cases; natural photos differ less.
//
//   - JPEG: Go's IDCT differs from libjpeg-turbo's, and chroma is sampled
//     at the nearest position instead of libjpeg's "fancy" (triangle)
//     upsampling, so subsampled colour JPEGs differ from PIL by small
//     amounts. The colour conversion itself is libjpeg's.
//   - Lossy WebP: libwebp's colour arithmetic, but nearest chroma instead of
//     libwebp's fancy upsampling.
//   - GIF: Go's decoder replaces the transparent palette entry with
//     (0, 0, 0, 0), so transparent GIF pixels become black, whereas PIL
//     keeps the palette colour.
//   - 16-bit greyscale PNG: the high byte is used; PIL opens these as mode
//     "I;16" and clips values above 255 when converting to RGB.
package imageprep
