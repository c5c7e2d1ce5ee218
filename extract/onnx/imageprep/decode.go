package imageprep

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"os"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"
)

// MaxPixels is the largest image (width × height) DecodeFile and Decode
// accept. The size is checked from the header before any pixel buffer is
// allocated.
const MaxPixels = 64 << 20

// maxFileBytes bounds how much Decode reads from its reader.
const maxFileBytes = 1 << 30

// SupportedFormats lists the image formats Decode recognises.
const SupportedFormats = "PNG, JPEG, GIF, WebP, BMP, TIFF"

// ErrUnsupportedFormat is wrapped by decode errors for data that is not in
// one of SupportedFormats.
var ErrUnsupportedFormat = errors.New("unsupported image format (supported: " + SupportedFormats + ")")

// ErrTooLarge is wrapped by decode errors for images above MaxPixels.
var ErrTooLarge = errors.New("image too large")

type codec struct {
	name         string
	decode       func(io.Reader) (image.Image, error)
	decodeConfig func(io.Reader) (image.Config, error)
}

// sniff identifies the format from magic bytes. Formats are matched locally
// rather than through image.RegisterFormat so that importing this package
// has no global side effects.
func sniff(b []byte) (codec, bool) {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return codec{"png", png.Decode, png.DecodeConfig}, true
	case bytes.HasPrefix(b, []byte("\xff\xd8")):
		return codec{"jpeg", jpeg.Decode, jpeg.DecodeConfig}, true
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return codec{"gif", gif.Decode, gif.DecodeConfig}, true
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return codec{"webp", webp.Decode, webp.DecodeConfig}, true
	case bytes.HasPrefix(b, []byte("BM")):
		return codec{"bmp", bmp.Decode, bmp.DecodeConfig}, true
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return codec{"tiff", tiff.Decode, tiff.DecodeConfig}, true
	}
	return codec{}, false
}

// DecodeFile decodes the image at path. Errors name the file.
func DecodeFile(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("imageprep: %w", err)
	}
	defer f.Close()
	return Decode(f, path)
}

// Decode decodes an image from r; name (usually the file name) is used in
// errors. The header is checked against MaxPixels before decoding.
func Decode(r io.Reader, name string) (image.Image, error) {
	return decodeLimited(r, name, MaxPixels)
}

func decodeLimited(r io.Reader, name string, maxPixels int) (image.Image, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: read image: %w", name, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s: %w: file larger than %d bytes", name, ErrTooLarge, maxFileBytes)
	}
	c, ok := sniff(data)
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, ErrUnsupportedFormat)
	}
	cfg, err := c.decodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: corrupt %s image: %w", name, c.name, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("%s: %s image has empty size %dx%d", name, c.name, cfg.Width, cfg.Height)
	}
	if cfg.Width > maxPixels || cfg.Height > maxPixels || cfg.Width*cfg.Height > maxPixels {
		return nil, fmt.Errorf("%s: %w: %dx%d exceeds %d pixels", name, ErrTooLarge, cfg.Width, cfg.Height, maxPixels)
	}
	img, err := c.decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: corrupt %s image: %w", name, c.name, err)
	}
	b := img.Bounds()
	if b.Empty() || b.Dx() > maxPixels || b.Dy() > maxPixels || b.Dx()*b.Dy() > maxPixels {
		return nil, fmt.Errorf("%s: %s image has unusable bounds %v", name, c.name, b)
	}
	if c.name == "webp" {
		// VP8 (lossy WebP) stores limited-range BT.601 YCbCr, which Go's
		// image.YCbCr would interpret as full-range JPEG YCbCr. Convert it
		// now with libwebp's arithmetic, which is what PIL uses.
		switch m := img.(type) {
		case *image.YCbCr:
			return webpToNRGBA(m, nil), nil
		case *image.NYCbCrA:
			return webpToNRGBA(&m.YCbCr, m), nil
		}
	}
	return img, nil
}
