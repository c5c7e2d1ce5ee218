package tinymodels

import (
	"github.com/vertebrae-eval/vertebrae/internal/onnxpb"
)

// ImagePatches is the number of "patches" of tiny-image: the four 4×4
// quadrants in row-major order (top-left, top-right, bottom-left,
// bottom-right).
const ImagePatches = 4

// ImagePoolMatrix returns Pool [64, 4]: Pool[y*8+x][q] = 1/16 when pixel
// (y, x) lies in quadrant q = 2·(y/4) + x/4, else 0.
func ImagePoolMatrix() [][]float32 {
	return matrix(ImageSize*ImageSize, ImagePatches, func(p, q int) float32 {
		y, x := p/ImageSize, p%ImageSize
		if 2*(y/4)+x/4 == q {
			return 1.0 / 16
		}
		return 0
	})
}

// ImageChannelMatrix returns M [3, 4], mapping a quadrant's channel means
// to its hidden state.
func ImageChannelMatrix() [][]float32 {
	return [][]float32{
		{1, 0, 0.5, -0.25},
		{0, 1, 0.5, 0.25},
		{0.25, -0.25, 0, 1},
	}
}

// ImageHidden is the reference last_hidden_state of tiny-image:
// hidden[q][k] = Σ_c mean(channel c over quadrant q) · M[c][k].
func ImageHidden(pixels [][]float32) [][][]float64 {
	m := ImageChannelMatrix()
	out := make([][][]float64, len(pixels))
	for b, px := range pixels {
		if len(px) != PixelCount {
			panic("tinymodels: image must have 3*8*8 values")
		}
		out[b] = make([][]float64, ImagePatches)
		for q := range out[b] {
			means := make([]float64, Channels)
			for c := range means {
				for y := 4 * (q / 2); y < 4*(q/2)+4; y++ {
					for x := 4 * (q % 2); x < 4*(q%2)+4; x++ {
						means[c] += float64(px[c*64+y*8+x])
					}
				}
				means[c] /= 16
			}
			out[b][q] = project(means, m)
		}
	}
	return out
}

// ImagePooled is the reference pooler_output of tiny-image: the mean of
// the four patch states.
func ImagePooled(pixels [][]float32) [][]float64 {
	hidden := ImageHidden(pixels)
	out := make([][]float64, len(hidden))
	for b, h := range hidden {
		out[b] = make([]float64, Dim)
		for _, row := range h {
			for k, v := range row {
				out[b][k] += v / ImagePatches
			}
		}
	}
	return out
}

// ImageModel returns tiny-image/model.onnx.
func ImageModel() onnxpb.Model {
	n := onnxpb.Node
	return model("tiny_image", onnxpb.Graph{
		Nodes: []onnxpb.NodeProto{
			n("Reshape", []string{"pixel_values", "channels_shape"}, []string{"channels"}),
			n("MatMul", []string{"channels", "quadrant_pool"}, []string{"quadrant_means"}),
			n("Transpose", []string{"quadrant_means"}, []string{"patches"}, onnxpb.IntsAttr("perm", 0, 2, 1)),
			n("MatMul", []string{"patches", "channel_mix"}, []string{"last_hidden_state"}),
			n("ReduceMean", []string{"last_hidden_state"}, []string{"pooler_output"}, onnxpb.IntsAttr("axes", 1), onnxpb.IntAttr("keepdims", 0)),
		},
		Initializers: []onnxpb.Tensor{
			onnxpb.Int64Tensor("channels_shape", []int64{3}, []int64{0, Channels, ImageSize * ImageSize}),
			weights("quadrant_pool", ImagePoolMatrix()),
			weights("channel_mix", ImageChannelMatrix()),
		},
		Inputs: []onnxpb.ValueInfo{onnxpb.Input("pixel_values", onnxpb.Float, batchImage...)},
		Outputs: []onnxpb.ValueInfo{
			onnxpb.Output("last_hidden_state", onnxpb.Float, onnxpb.Sym("batch"), onnxpb.Fixed(ImagePatches), onnxpb.Fixed(Dim)),
			onnxpb.Output("pooler_output", onnxpb.Float, batchDim...),
		},
	})
}
