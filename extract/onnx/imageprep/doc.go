// Package imageprep is the image preprocessing of the ONNX image extractors
// (package extract/onnx, SPEC §9.4): it decodes images and turns them into
// float32 C×H×W tensors the way a Hugging Face image processor configured by
// a preprocessor_config.json does (CLIP, SigLIP, ViT style slow processors,
// which resize through PIL on uint8 images and finish in numpy).
//
// # Pipeline
//
// Config.Tensor applies, in transformers' order:
//
//  1. Convert to 8-bit RGB like PIL's convert("RGB"): grey replicated,
//     palette expanded, alpha dropped (the straight, un-premultiplied colour
//     is kept, never composited), 16-bit samples reduced to their high byte,
//     YCbCr chroma upsampled like libjpeg-turbo (see Decoding) and converted
//     with libjpeg's jdcolor.c fixed-point arithmetic, CMYK with Pillow's
//     cmyk2rgb arithmetic. Lossy WebP is converted at decode time like
//     libwebp (see Decoding): fancy chroma upsampling, then VP8YuvToRgb
//     arithmetic (limited-range BT.601).
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
//	go test ./extract/onnx/imageprep/ -run PIL -v
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
// the file in every error.
//
// JPEG colour images (*image.YCbCr from image/jpeg) are converted the way
// Pillow's libjpeg-turbo decoder does by default (do_fancy_upsampling on,
// islow IDCT; Pillow changes these only in draft mode): subsampled chroma
// is upsampled with jdsample.c's algorithms, chosen per ratio as
// jinit_upsampler does — the triangle ("fancy") filter with libjpeg's
// alternating rounding biases for 4:2:2 and 4:2:0 when the chroma plane is
// more than 2 samples wide (replication otherwise), the vertical triangle
// filter for 4:4:0, replication for 4:1:1 and 4:1:0 — with the edge sample
// repeated past the first and last chroma column and row (libjpeg's edge
// columns and the context rows jdmainct.c duplicates), over the
// ceil(width/h) × ceil(height/v) samples libjpeg calls downsampled_width
// and downsampled_height (Go's planes also hold partial-MCU padding, which
// is ignored). Then jdcolor.c's YCbCr → RGB arithmetic is applied. Images
// whose Rect has a negative origin (never produced by the decoder) keep
// nearest chroma sampling. The only remaining difference is the IDCT: Go's
// image/jpeg IDCT is not bit-exact with libjpeg-turbo's jidctint (islow),
// so decoded Y, Cb and Cr samples differ by at most 1 in about 1-2 % of
// samples, which the colour conversion turns into the RGB figures below.
//
// Parity is measured by TestPILJPEGParity on JPEGs written by
// internal/pilref/pilref.py with Pillow 9.4.0 (libjpeg-turbo 2.1.5) at
// quality 90 (4:4:0 and 4:1:1 files are relabelled PIL files, see the
// script): uniform noise (the worst case), smooth gradients, and flat
// 16×16 colour blocks (DC-only blocks, whose IDCT is exact in both
// decoders, so any upsampling error would show):
//
//	fixture            ratio  size   differing  max |diff|  mean |diff|  nearest chroma (before): max, mean
//	noise              4:4:4  33×17     4.2 %        2         0.054       2, 0.054
//	noise              4:2:2  33×17     3.3 %        2         0.041      55, 12.1
//	noise              4:2:0  33×17     2.8 %        2         0.032      57, 12.9
//	noise              4:4:4  48×32     4.2 %        2         0.053       2, 0.053
//	noise              4:2:2  48×32     3.7 %        3         0.044      62, 12.2
//	noise              4:2:0  48×32     3.8 %        2         0.046      69, 12.8
//	noise              4:2:2  7×5       4.8 %        2         0.057      45, 10.2
//	noise              4:2:0  7×5       0 %          0         0          57, 13.7
//	noise              4:2:0  3×3       7.4 %        1         0.074       1, 0.074  (box filter)
//	noise              4:4:0  33×17     3.3 %        3         0.037      64, 14.6
//	noise              4:1:1  33×17     4.2 %        2         0.052       2, 0.052  (box filter)
//	noise progressive  4:2:0  33×17     4.2 %        3         0.050      80, 14.6
//	smooth             4:4:4  48×32     3.2 %        3         0.038       3, 0.038
//	smooth             4:2:2  48×32     2.9 %        3         0.035      11, 3.17
//	smooth             4:2:0  48×32     2.3 %        2         0.026      16, 4.62
//	smooth             4:2:0  33×17     2.3 %        2         0.025      15, 4.89
//	blocks             4:4:4  48×32     0 %          0         0           0, 0
//	blocks             4:2:2  48×32     0 %          0         0          20, 0.74
//	blocks             4:2:0  48×32     0 %          0         0          52, 1.63
//	blocks             4:2:0  41×23     0 %          0         0          60, 2.40
//	blocks             4:4:0  41×23     0 %          0         0          41, 1.23
//
// ("differing" is the share of uint8 RGB values that differ from Pillow's.)
// The test requires exact equality for the block images and max |diff| <= 3,
// mean |diff| <= 0.08 for the others, and checks that nearest chroma
// sampling fails those bounds wherever libjpeg-turbo interpolates. On a
// 128×96 gradient-plus-noise photo-like image (dev-time, not committed) the
// figures are the same: 4:2:0 max 2, 4.1 % differing, mean 0.05 (nearest
// chroma: max 48, 91 %, mean 6.8); 4:4:4 max 3, 4.2 %, mean 0.05. Reproduce
// with:
//
//	go test ./extract/onnx/imageprep/ -run PILJPEG -v
//
// Lossy WebP (VP8, *image.YCbCr 4:2:0 from golang.org/x/image/webp, or
// *image.NYCbCrA when the file has alpha) stores limited-range BT.601, so
// Decode converts it at once to *image.NRGBA the way libwebp's default
// decoder does for PIL (WebPDecode / WebPAnimDecoder with
// no_fancy_upsampling unset and no scaling): EmitFancyRGB's row pairing and
// UpsampleRgbLinePair's fancy upsampling, each pixel's chroma being
// (9·a + 3·b + 3·c + d + 8) >> 4 over the 2×2 chroma samples around it
// (a the nearest), with the far sample clamped to the plane at the first and
// last column and row (libwebp's edge cases, including the first row, the
// last row of an even height and the last column of an even width, reduce to
// that), over the ceil(width/2) × ceil(height/2) chroma plane; then
// VP8YuvToRgb's 14-bit fixed-point arithmetic. Alpha is kept in the NRGBA
// (straight colour, as PIL returns it) and dropped by the RGB conversion. libwebp interpolates at every size, so nearest chroma
// sampling remains only for YCbCr layouts the WebP decoder never returns (a
// ratio other than 4:2:0 or a Rect not at the origin). The result is
// bit-identical to PIL's on every file measured, so Go's VP8 decoder
// (golang.org/x/image/vp8) reconstructs the same Y, U and V samples as
// libwebp on them.
//
// Parity is measured by TestPILWebPParity on lossy WebPs written by
// internal/pilref/pilref.py with Pillow 9.4.0 (libwebp 1.2.4) at quality
// 80:
//
//	fixture         size   differing  max |diff|  mean |diff|  nearest chroma (before): differing, max, mean
//	noise           33×17     0 %          0          0        95.0 %, 63, 12.2
//	noise           48×32     0 %          0          0        95.0 %, 66, 12.7
//	noise           7×5       0 %          0          0        95.2 %, 53, 12.1
//	noise           17×33     0 %          0          0        95.4 %, 75, 14.7
//	noise           2×3       0 %          0          0        66.7 %, 15, 6.28
//	noise           1×1       0 %          0          0         0 %,    0, 0     (one chroma sample)
//	smooth          48×32     0 %          0          0        90.0 %, 22, 4.63
//	smooth          33×17     0 %          0          0        89.5 %, 20, 4.91
//	noise + alpha   33×17     0 %          0          0        95.0 %, 73, 13.2
//	smooth + alpha  48×32     0 %          0          0        88.0 %, 31, 4.68
//
// The test requires exact equality, and checks that nearest chroma sampling
// differs from PIL wherever upsampling changes anything;
// TestWebPFancyReference checks the conversion against a structural
// transcription of UpsampleRgbLinePair and EmitFancyRGB (packed u | v<<16
// arithmetic) for every size up to 19×9. Dev-time (not committed), 128
// further PIL-written files were also bit-identical: 128×96, 257×191,
// 300×200, 31×65, 64×64, 1×40, 40×1 and 3×2, gradient-plus-noise and
// uniform noise, quality 10 to 100, encoder methods 0, 4 and 6, with and
// without alpha (nearest chroma on the 128×96 gradient-plus-noise image at
// q90: max |diff| 27, 86.7 % of values differ, mean 3.7). Lossless WebP
// (VP8L) decodes to RGB directly and is identical too. Reproduce with:
//
//	go test ./extract/onnx/imageprep/ -run PILWebP -v
//
// Other known differences from PIL's decoders, which affect decoded pixels
// before any preprocessing:
//
//   - JPEGs that image/jpeg does not return as *image.YCbCr keep Go's
//     handling: subsampled components of RGB (Adobe transform 0) and CMYK
//     files are sampled at the nearest position, and YCbCrK files are turned
//     into CMYK with Go's YCbCr arithmetic and nearest chroma (the CMYK →
//     RGB step is Pillow's).
//   - GIF: Go's decoder replaces the transparent palette entry with
//     (0, 0, 0, 0), so transparent GIF pixels become black, whereas PIL
//     keeps the palette colour.
//   - 16-bit greyscale PNG: the high byte is used; PIL opens these as mode
//     "I;16" and clips values above 255 when converting to RGB.
package imageprep
