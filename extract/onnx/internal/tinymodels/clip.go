package tinymodels

import (
	"github.com/vertebrae-eval/vertebrae/internal/onnxpb"
)

// CLIP special tokens.
const (
	CLIPStartToken = "<|startoftext|>"
	CLIPEndToken   = "<|endoftext|>"
	// CLIPMaxLength is text_config.max_position_embeddings of tiny-clip.
	CLIPMaxLength = 16
)

// CLIP image preprocessing constants (preprocessor_config.json of tiny-clip
// and tiny-image).
var (
	CLIPImageMean = [3]float32{0.48145466, 0.4578275, 0.40821073}
	CLIPImageStd  = [3]float32{0.26862954, 0.26130258, 0.27577711}
)

// clipWordOrder is the order in which the merge chains of the caption words
// are emitted. "green" precedes "red" so that the merge "g r" outranks
// "r e" inside "green".
var clipWordOrder = []string{"photo", "of", "green", "red", "blue", "yellow", "purple", "square", "circle"}

// byteLevelAlphabet returns the 256 bytes in GPT-2/CLIP vocabulary order and
// the printable rune each byte maps to.
func byteLevelAlphabet() (order []byte, enc [256]rune) {
	printable := [256]bool{}
	add := func(lo, hi rune) {
		for r := lo; r <= hi; r++ {
			printable[r] = true
			order = append(order, byte(r))
			enc[r] = r
		}
	}
	add('!', '~')
	add('¡', '¬')
	add('®', 'ÿ')
	n := rune(0)
	for b := 0; b < 256; b++ {
		if !printable[b] {
			order = append(order, byte(b))
			enc[b] = 256 + n
			n++
		}
	}
	return order, enc
}

type clipVocab struct {
	tokens []string // by id
	ids    map[string]int
	merges [][2]string
}

func (v *clipVocab) add(tok string) int {
	if id, ok := v.ids[tok]; ok {
		return id
	}
	v.ids[tok] = len(v.tokens)
	v.tokens = append(v.tokens, tok)
	return v.ids[tok]
}

// buildCLIPVocab lays out the vocabulary like openai/clip-vit-base-patch32:
// 256 byte-level characters, their "</w>" variants, the merge results in
// merge order, then <|startoftext|> and <|endoftext|>.
func buildCLIPVocab() *clipVocab {
	v := &clipVocab{ids: map[string]int{}}
	order, enc := byteLevelAlphabet()
	for _, b := range order {
		v.add(string(enc[b]))
	}
	for _, b := range order {
		v.add(string(enc[b]) + "</w>")
	}
	for _, w := range clipWordOrder {
		syms := make([]string, 0, len(w))
		for _, r := range w {
			syms = append(syms, string(r))
		}
		syms[len(syms)-1] += "</w>"
		cur := syms[0]
		for _, s := range syms[1:] {
			v.merges = append(v.merges, [2]string{cur, s})
			cur += s
			v.add(cur)
		}
	}
	v.add(CLIPStartToken)
	v.add(CLIPEndToken)
	return v
}

var clipVocabulary = buildCLIPVocab()

// CLIPVocabSize is the number of rows of the tiny-clip token embedding.
var CLIPVocabSize = len(clipVocabulary.tokens)

// CLIPTokenID returns the id of a tiny-clip vocabulary entry such as
// "red</w>" or "<|endoftext|>".
func CLIPTokenID(token string) (int64, bool) {
	id, ok := clipVocabulary.ids[token]
	return int64(id), ok
}

// CLIPExpectedIDs returns the designed token ids of a caption made only of
// captionWords ("a photo of a red square"): <|startoftext|>, one token per
// word, <|endoftext|>, without padding.
func CLIPExpectedIDs(caption string) []int64 {
	ids := []int64{int64(clipVocabulary.ids[CLIPStartToken])}
	for _, w := range words(caption) {
		id, ok := clipVocabulary.ids[w+"</w>"]
		if !ok {
			panic("tinymodels: word not in the tiny-clip vocabulary: " + w)
		}
		ids = append(ids, int64(id))
	}
	return append(ids, int64(clipVocabulary.ids[CLIPEndToken]))
}

// CLIPTokenEmbedding returns E [CLIPVocabSize, 4] of the tiny-clip text
// model. Colour words hold their chroma target mapped back through
// CLIPTextProjection (scaled so that the projected word is target/4); every
// other token holds generic(id).
func CLIPTokenEmbedding() [][]float32 {
	return matrix(CLIPVocabSize, Dim, func(id, k int) float32 {
		tok := clipVocabulary.tokens[id]
		if len(tok) > 4 && tok[len(tok)-4:] == "</w>" {
			if t, ok := colorTarget(tok[:len(tok)-4]); ok {
				// Wt maps hidden 0→embed 1, 1→2, 2→0 with factor 2.
				h := [4]float32{t[1] / 2, t[2] / 2, t[0] / 2, 0}
				return h[k]
			}
		}
		return generic(id)[k]
	})
}

// CLIPTextProjection returns Wt [4, 4] (rows: hidden, columns: embedding):
// a scaled permutation of the chromatic dimensions and ½ on the fourth.
func CLIPTextProjection() [][]float32 {
	w := matrix(Dim, Dim, func(int, int) float32 { return 0 })
	w[0][1], w[1][2], w[2][0], w[3][3] = 2, 2, 2, 0.5
	return w
}

// CLIPVisionProjection returns Wv [192, 4] of image_embeds: the chroma
// contrasts of the channel means in columns 0..2 and, in column 3, the
// zero-sum spatial pattern ±(x+1)(c+1)/256 (+ for the top half, − for the
// bottom half), which is 0 for solid images.
func CLIPVisionProjection() [][]float32 {
	return chromaWeights(func(c, y, x int) float32 {
		v := float32((x+1)*(c+1)) / 256
		if y >= 4 {
			v = -v
		}
		return v
	})
}

// CLIPVisionPoolerWeights returns Wp [192, 4] of pooler_output:
// (mean R, mean G, mean B, (mean R + mean G)/2) of the normalized pixels.
func CLIPVisionPoolerWeights() [][]float32 {
	return matrix(PixelCount, Dim, func(r, k int) float32 {
		c := r / 64
		switch {
		case k < 3 && k == c:
			return 1.0 / 64
		case k == 3 && c < 2:
			return 1.0 / 128
		}
		return 0
	})
}

// CLIPTextHidden is the reference last_hidden_state: E[input_ids].
func CLIPTextHidden(ids [][]int64) [][][]float64 {
	e := CLIPTokenEmbedding()
	out := make([][][]float64, len(ids))
	for b, seq := range ids {
		for _, id := range seq {
			out[b] = append(out[b], row64(e[id]))
		}
	}
	return out
}

// CLIPText is the reference text_embeds: the attention-mask-weighted mean
// of E[input_ids], projected by CLIPTextProjection.
func CLIPText(ids, mask [][]int64) [][]float64 {
	e, wt := CLIPTokenEmbedding(), CLIPTextProjection()
	out := make([][]float64, len(ids))
	for b, seq := range ids {
		mean := make([]float64, Dim)
		n := 0.0
		for l, id := range seq {
			m := float64(mask[b][l])
			for k := range mean {
				mean[k] += m * float64(e[id][k])
			}
			n += m
		}
		for k := range mean {
			mean[k] /= n
		}
		out[b] = project(mean, wt)
	}
	return out
}

// CLIPVision is the reference image_embeds: Flatten(pixel_values) @ Wv.
// Each image is 3*8*8 float32 values in CHW order.
func CLIPVision(pixels [][]float32) [][]float64 {
	w := CLIPVisionProjection()
	out := make([][]float64, len(pixels))
	for b, p := range pixels {
		out[b] = projectPixels(p, w)
	}
	return out
}

// CLIPVisionPooled is the reference pooler_output of the tiny-clip vision
// model: Flatten(pixel_values) @ Wp.
func CLIPVisionPooled(pixels [][]float32) [][]float64 {
	w := CLIPVisionPoolerWeights()
	out := make([][]float64, len(pixels))
	for b, p := range pixels {
		out[b] = projectPixels(p, w)
	}
	return out
}

var (
	batchSeq    = []onnxpb.Dim{onnxpb.Sym("batch"), onnxpb.Sym("sequence")}
	batchSeqDim = []onnxpb.Dim{onnxpb.Sym("batch"), onnxpb.Sym("sequence"), onnxpb.Fixed(Dim)}
	batchDim    = []onnxpb.Dim{onnxpb.Sym("batch"), onnxpb.Fixed(Dim)}
	batchImage  = []onnxpb.Dim{onnxpb.Sym("batch"), onnxpb.Fixed(Channels), onnxpb.Fixed(ImageSize), onnxpb.Fixed(ImageSize)}
)

func weights(name string, m [][]float32) onnxpb.Tensor {
	return onnxpb.FloatTensor(name, []int64{int64(len(m)), int64(len(m[0]))}, flat(m))
}

func model(name string, g onnxpb.Graph) onnxpb.Model {
	g.Name = name
	return onnxpb.Model{ProducerName: "vertebrae-tinymodels", Graph: g}
}

// CLIPTextModel returns tiny-clip/onnx/text_model.onnx.
func CLIPTextModel() onnxpb.Model {
	n := onnxpb.Node
	return model("tiny_clip_text", onnxpb.Graph{
		Nodes: []onnxpb.NodeProto{
			n("Gather", []string{"token_embedding", "input_ids"}, []string{"last_hidden_state"}, onnxpb.IntAttr("axis", 0)),
			n("Cast", []string{"attention_mask"}, []string{"mask_f"}, onnxpb.IntAttr("to", int64(onnxpb.Float))),
			n("Unsqueeze", []string{"mask_f", "axes_2"}, []string{"mask_3d"}),
			n("Mul", []string{"last_hidden_state", "mask_3d"}, []string{"masked"}),
			n("ReduceSum", []string{"masked", "axes_1"}, []string{"summed"}, onnxpb.IntAttr("keepdims", 0)),
			n("ReduceSum", []string{"mask_3d", "axes_1"}, []string{"count"}, onnxpb.IntAttr("keepdims", 0)),
			n("Div", []string{"summed", "count"}, []string{"mean"}),
			n("MatMul", []string{"mean", "text_projection"}, []string{"text_embeds"}),
		},
		Initializers: []onnxpb.Tensor{
			weights("token_embedding", CLIPTokenEmbedding()),
			weights("text_projection", CLIPTextProjection()),
			onnxpb.Int64Tensor("axes_1", []int64{1}, []int64{1}),
			onnxpb.Int64Tensor("axes_2", []int64{1}, []int64{2}),
		},
		Inputs: []onnxpb.ValueInfo{
			onnxpb.Input("input_ids", onnxpb.Int64, batchSeq...),
			onnxpb.Input("attention_mask", onnxpb.Int64, batchSeq...),
		},
		Outputs: []onnxpb.ValueInfo{
			onnxpb.Output("text_embeds", onnxpb.Float, batchDim...),
			onnxpb.Output("last_hidden_state", onnxpb.Float, batchSeqDim...),
		},
	})
}

// CLIPVisionModel returns tiny-clip/onnx/vision_model.onnx.
func CLIPVisionModel() onnxpb.Model {
	n := onnxpb.Node
	return model("tiny_clip_vision", onnxpb.Graph{
		Nodes: []onnxpb.NodeProto{
			n("Flatten", []string{"pixel_values"}, []string{"flat"}, onnxpb.IntAttr("axis", 1)),
			n("MatMul", []string{"flat", "visual_projection"}, []string{"image_embeds"}),
			n("MatMul", []string{"flat", "pooler_weights"}, []string{"pooler_output"}),
		},
		Initializers: []onnxpb.Tensor{
			weights("visual_projection", CLIPVisionProjection()),
			weights("pooler_weights", CLIPVisionPoolerWeights()),
		},
		Inputs: []onnxpb.ValueInfo{onnxpb.Input("pixel_values", onnxpb.Float, batchImage...)},
		Outputs: []onnxpb.ValueInfo{
			onnxpb.Output("image_embeds", onnxpb.Float, batchDim...),
			onnxpb.Output("pooler_output", onnxpb.Float, batchDim...),
		},
	})
}

func addedToken(id int, content string, normalized bool) *orderedObject {
	return obj("id", id, "content", content, "single_word", false, "lstrip", false,
		"rstrip", false, "normalized", normalized, "special", true)
}

// CLIPTokenizerJSON returns tiny-clip/tokenizer.json, structured like the
// tokenizer.json of openai/clip-vit-base-patch32 (without unk token,
// truncation or padding).
func CLIPTokenizerJSON() []byte {
	v := clipVocabulary
	vocab := newObject()
	for id, tok := range v.tokens {
		vocab.set(tok, id)
	}
	merges := make([]string, len(v.merges))
	for i, m := range v.merges {
		merges[i] = m[0] + " " + m[1]
	}
	sot, eot := v.ids[CLIPStartToken], v.ids[CLIPEndToken]
	return jsonFile(obj(
		"version", "1.0",
		"truncation", nil,
		"padding", nil,
		"added_tokens", []any{addedToken(sot, CLIPStartToken, true), addedToken(eot, CLIPEndToken, true)},
		"normalizer", obj("type", "Sequence", "normalizers", []any{
			obj("type", "NFC"),
			obj("type", "Replace", "pattern", obj("Regex", `\s+`), "content", " "),
			obj("type", "Lowercase"),
		}),
		"pre_tokenizer", obj("type", "Sequence", "pretokenizers", []any{
			obj("type", "Split",
				"pattern", obj("Regex", `'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+`),
				"behavior", "Removed", "invert", true),
			obj("type", "ByteLevel", "add_prefix_space", false, "trim_offsets", true, "use_regex", false),
		}),
		"post_processor", obj("type", "RobertaProcessing",
			"sep", []any{CLIPEndToken, eot}, "cls", []any{CLIPStartToken, sot},
			"trim_offsets", false, "add_prefix_space", false),
		"decoder", obj("type", "ByteLevel", "add_prefix_space", true, "trim_offsets", true, "use_regex", true),
		"model", obj("type", "BPE", "dropout", nil, "unk_token", nil,
			"continuing_subword_prefix", "", "end_of_word_suffix", "</w>",
			"fuse_unk", false, "byte_fallback", false, "ignore_merges", false,
			"vocab", vocab, "merges", merges),
	))
}

func clipTokenizerConfig() []byte {
	return jsonFile(obj(
		"tokenizer_class", "CLIPTokenizer",
		"bos_token", CLIPStartToken,
		"eos_token", CLIPEndToken,
		"pad_token", CLIPEndToken,
		"unk_token", CLIPEndToken,
		"do_lower_case", true,
		"clean_up_tokenization_spaces", false,
	))
}

func clipPreprocessorConfig() []byte {
	return jsonFile(obj(
		"image_processor_type", "CLIPImageProcessor",
		"do_resize", true,
		"size", obj("shortest_edge", ImageSize),
		"resample", 3,
		"do_center_crop", true,
		"crop_size", obj("height", ImageSize, "width", ImageSize),
		"do_rescale", true,
		"rescale_factor", 0.00392156862745098,
		"do_normalize", true,
		"image_mean", CLIPImageMean,
		"image_std", CLIPImageStd,
		"do_convert_rgb", true,
	))
}

func clipConfig() []byte {
	return jsonFile(obj(
		"model_type", "clip",
		"architectures", []string{"CLIPModel"},
		"projection_dim", Dim,
		"text_config", obj(
			"model_type", "clip_text_model",
			"vocab_size", CLIPVocabSize,
			"hidden_size", Dim,
			"max_position_embeddings", CLIPMaxLength,
			"bos_token_id", clipVocabulary.ids[CLIPStartToken],
			"eos_token_id", clipVocabulary.ids[CLIPEndToken],
			"pad_token_id", clipVocabulary.ids[CLIPEndToken],
		),
		"vision_config", obj(
			"model_type", "clip_vision_model",
			"hidden_size", Dim,
			"image_size", ImageSize,
			"num_channels", Channels,
			"patch_size", 4,
		),
	))
}
