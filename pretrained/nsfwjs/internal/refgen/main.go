package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/demo"
	"github.com/vertebrae-eval/vertebrae/extract/onnx/imageprep"
	"github.com/vertebrae-eval/vertebrae/internal/atomicfile"
)

const side = 224

var photos = []string{"astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg"}

func main() {
	skimage := flag.String("skimage", "", "skimage/data directory (python3-skimage)")
	npy := flag.String("npy", "", "write the images as a uint8 [n,224,224,3] .npy here")
	out := flag.String("out", "pretrained/nsfwjs/testdata/images", "PNG output directory")
	flag.Parse()
	if err := run(*skimage, *npy, *out); err != nil {
		fmt.Fprintln(os.Stderr, "refgen:", err)
		os.Exit(1)
	}
}

func run(skimage, npy, out string) error {
	if skimage == "" || npy == "" {
		return fmt.Errorf("-skimage and -npy are required")
	}
	prep, err := imageprep.ParseConfig([]byte(`{"do_resize": true, "size": {"height": 224, "width": 224}, "resample": 2,
		"do_rescale": false, "do_normalize": false}`), "refgen")
	if err != nil {
		return err
	}
	data, err := demo.Load()
	if err != nil {
		return err
	}
	type src struct {
		name string
		img  image.Image
		gray bool
	}
	var srcs []src
	for i := range 8 {
		g := &image.Gray{Pix: data.QueryImages[i], Stride: demo.ImageSide, Rect: image.Rect(0, 0, demo.ImageSide, demo.ImageSide)}
		srcs = append(srcs, src{fmt.Sprintf("%02d-fashion-%s.png", i, data.QueryIDs[i]), g, true})
	}
	for i, p := range photos {
		img, err := imageprep.DecodeFile(filepath.Join(skimage, p))
		if err != nil {
			return err
		}
		base := p[:len(p)-len(filepath.Ext(p))]
		srcs = append(srcs, src{fmt.Sprintf("%02d-photo-%s.png", 8+i, base), img, false})
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var all []byte
	for _, s := range srcs {
		chw, h, w, err := prep.Tensor(s.img)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		if h != side || w != side {
			return fmt.Errorf("%s: resized to %dx%d", s.name, w, h)
		}
		plane := side * side
		var img image.Image
		if s.gray {
			g := image.NewGray(image.Rect(0, 0, side, side))
			for i := range plane {
				g.Pix[i] = uint8(chw[i])
			}
			img = g
		} else {
			rgba := image.NewNRGBA(image.Rect(0, 0, side, side))
			for i := range plane {
				for c := range 3 {
					rgba.Pix[4*i+c] = uint8(chw[c*plane+i])
				}
				rgba.Pix[4*i+3] = 255
			}
			img = rgba
		}
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(out, s.name), buf.Bytes()); err != nil {
			return err
		}
		for i := range plane { // NHWC for TF.js
			for c := range 3 {
				all = append(all, uint8(chw[c*plane+i]))
			}
		}
		fmt.Println(s.name)
	}
	return atomicfile.Write(npy, npyUint8(all, len(srcs), side, side, 3))
}

// npyUint8 is a NumPy v1.0 .npy file of a C-order uint8 array.
func npyUint8(data []byte, shape ...int) []byte {
	header := fmt.Sprintf("{'descr': '|u1', 'fortran_order': False, 'shape': (%d, %d, %d, %d), }", shape[0], shape[1], shape[2], shape[3])
	for (10+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	var b []byte
	b = append(b, "\x93NUMPY\x01\x00"...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	b = append(b, header...)
	return append(b, data...)
}
