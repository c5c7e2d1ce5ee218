package tinymodels

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
)

// RescaleFactor is the rescale_factor of every preprocessor_config.json.
const RescaleFactor = 0.00392156862745098

// NormalizedPixels returns the pixel_values (3*8*8, CHW) of a solid 8×8
// image of colour c as a Hugging Face image processor computes them:
// x = float32(v · RescaleFactor), then (x − mean)/std in float32. Resizing
// and cropping a solid image does not change its pixels.
func NormalizedPixels(c Color, mean, std [3]float32) []float32 {
	out := make([]float32, 0, PixelCount)
	for ch, v := range [3]uint8{c.R, c.G, c.B} {
		x := float32(float64(v) * RescaleFactor)
		n := (x - mean[ch]) / std[ch]
		for range ImageSize * ImageSize {
			out = append(out, n)
		}
	}
	return out
}

// CLIPPixels returns NormalizedPixels with the CLIP mean and std (tiny-clip
// and tiny-image).
func CLIPPixels(c Color) []float32 { return NormalizedPixels(c, CLIPImageMean, CLIPImageStd) }

// SigLIPPixels returns NormalizedPixels with the SigLIP mean and std 0.5.
func SigLIPPixels(c Color) []float32 { return NormalizedPixels(c, SigLIPImageMean, SigLIPImageStd) }

// Additional image files, besides images/<colour>.png for RetrievalImages.
const (
	// RGBAImage is a solid red 8×8 PNG stored with an alpha channel (colour
	// type 6); alpha is 255 everywhere, so it decodes to the same pixels as
	// red.png whatever the alpha handling.
	RGBAImage = "red-rgba.png"
	// GIFImage is a solid blue 8×8 paletted GIF.
	GIFImage = "blue.gif"
	// StripesImage is 12 wide × 10 high: vertical stripes two pixels wide,
	// red, green, blue, red, green, blue from left to right.
	StripesImage = "stripes-12x10.png"
	// QuadrantsImage is 10 wide × 12 high: red (top-left), green
	// (top-right), blue (bottom-left), yellow (bottom-right), split at
	// x = 5 and y = 6.
	QuadrantsImage = "quadrants-10x12.png"
)

var (
	red    = color.NRGBA{255, 0, 0, 255}
	green  = color.NRGBA{0, 255, 0, 255}
	blue   = color.NRGBA{0, 0, 255, 255}
	yellow = color.NRGBA{255, 255, 0, 255}
)

func newImage(w, h int, f func(x, y int) color.NRGBA) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, f(x, y))
		}
	}
	return img
}

func solid(c Color) *image.NRGBA {
	return newImage(ImageSize, ImageSize, func(int, int) color.NRGBA { return color.NRGBA{c.R, c.G, c.B, 255} })
}

func imageFiles() map[string][]byte {
	files := map[string][]byte{}
	for _, c := range RetrievalImages {
		files[c.Name+".png"] = encodePNG(solid(c), false)
	}
	files[RGBAImage] = encodePNG(solid(RetrievalImages[0]), true)
	stripes := []color.NRGBA{red, green, blue}
	files[StripesImage] = encodePNG(newImage(12, 10, func(x, _ int) color.NRGBA { return stripes[(x/2)%3] }), false)
	files[QuadrantsImage] = encodePNG(newImage(10, 12, func(x, y int) color.NRGBA {
		return [2][2]color.NRGBA{{red, green}, {blue, yellow}}[y/6][x/5]
	}), false)
	pal := image.NewPaletted(image.Rect(0, 0, ImageSize, ImageSize), color.Palette{color.RGBA{0, 0, 255, 255}, color.RGBA{0, 0, 0, 255}})
	var b bytes.Buffer
	if err := gif.Encode(&b, pal, nil); err != nil {
		panic(err)
	}
	files[GIFImage] = b.Bytes()
	return files
}

// encodePNG writes an 8-bit RGB (or RGBA) PNG with filter 0 and stored
// (uncompressed) deflate blocks, so the bytes do not depend on the Go
// version's compressor.
func encodePNG(img *image.NRGBA, alpha bool) []byte {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	var raw bytes.Buffer
	for y := range h {
		raw.WriteByte(0) // filter: none
		for x := range w {
			c := img.NRGBAAt(x, y)
			raw.Write([]byte{c.R, c.G, c.B})
			if alpha {
				raw.WriteByte(c.A)
			}
		}
	}
	var z bytes.Buffer
	zw, err := zlib.NewWriterLevel(&z, zlib.NoCompression)
	if err != nil {
		panic(err)
	}
	zw.Write(raw.Bytes())
	zw.Close()

	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&out, binary.BigEndian, uint32(len(data)))
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.Write(&out, binary.BigEndian, crc.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8] = 8 // bit depth
	ihdr[9] = 2 // truecolour
	if alpha {
		ihdr[9] = 6 // truecolour with alpha
	}
	chunk("IHDR", ihdr)
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// PatternPixels returns a deterministic non-constant image (3*8*8, CHW)
// with value ((37·i + 11·seed) mod 29 − 14)/8 at flat index i, to exercise
// the spatial weights of the vision models.
func PatternPixels(seed int) []float32 {
	out := make([]float32, PixelCount)
	for i := range out {
		out[i] = float32((37*i+11*seed)%29-14) / 8
	}
	return out
}
