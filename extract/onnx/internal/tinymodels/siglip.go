package tinymodels

import (
	"github.com/vertebrae-eval/vertebrae/internal/onnxpb"
)

// SigLIP special tokens and length.
const (
	SigLIPPadToken = "<pad>"
	SigLIPEOSToken = "</s>"
	SigLIPUnkToken = "<unk>"
	// SigLIPMaxLength is the fixed padded length of tiny-siglip
	// (tokenizer padding Fixed(16), text_config.max_position_embeddings).
	SigLIPMaxLength = 16
	// SigLIPPadID is the padding id; as in the real SigLIP tokenizer the
	// padding token is "</s>".
	SigLIPPadID = 1
)

// SigLIP image preprocessing constants (tiny-siglip preprocessor_config.json).
var (
	SigLIPImageMean = [3]float32{0.5, 0.5, 0.5}
	SigLIPImageStd  = [3]float32{0.5, 0.5, 0.5}
)

const metaspace = "▁"

type unigramPiece struct {
	piece string
	score float64
}

// buildSigLIPVocab returns the Unigram vocabulary: <pad>, </s>, <unk>, the
// "▁"-prefixed caption words, "▁", then single characters so that any
// lowercase ASCII text tokenizes without <unk>.
func buildSigLIPVocab() []unigramPiece {
	v := []unigramPiece{{SigLIPPadToken, 0}, {SigLIPEOSToken, 0}, {SigLIPUnkToken, 0}}
	for _, w := range captionWords {
		v = append(v, unigramPiece{metaspace + w, -2})
	}
	v = append(v, unigramPiece{metaspace, -3})
	for _, r := range "abcdefghijklmnopqrstuvwxyz0123456789.,!?'-" {
		v = append(v, unigramPiece{string(r), -4})
	}
	return v
}

var sigLIPVocabulary = buildSigLIPVocab()

// SigLIPVocabSize is the number of rows of the tiny-siglip token embedding.
var SigLIPVocabSize = len(sigLIPVocabulary)

// SigLIPTokenID returns the id of a tiny-siglip piece such as "▁red".
func SigLIPTokenID(piece string) (int64, bool) {
	for id, p := range sigLIPVocabulary {
		if p.piece == piece {
			return int64(id), true
		}
	}
	return 0, false
}

// SigLIPExpectedIDs returns the designed ids of a caption made only of
// captionWords: one "▁word" piece per word, "</s>", then "</s>" padding up
// to SigLIPMaxLength.
func SigLIPExpectedIDs(caption string) []int64 {
	var ids []int64
	for _, w := range words(caption) {
		id, ok := SigLIPTokenID(metaspace + w)
		if !ok {
			panic("tinymodels: word not in the tiny-siglip vocabulary: " + w)
		}
		ids = append(ids, id)
	}
	for len(ids) < SigLIPMaxLength {
		ids = append(ids, SigLIPPadID)
	}
	return ids
}

// SigLIPPositionIDs returns position_ids 0..n-1 for each of batch rows.
func SigLIPPositionIDs(batch, n int) [][]int64 {
	out := make([][]int64, batch)
	for b := range out {
		for i := 0; i < n; i++ {
			out[b] = append(out[b], int64(i))
		}
	}
	return out
}

// SigLIPTokenEmbedding returns E [SigLIPVocabSize, 4]. Colour words hold
// their chroma target mapped back through SigLIPTextProjection; every other
// piece holds generic(id).
func SigLIPTokenEmbedding() [][]float32 {
	return matrix(SigLIPVocabSize, Dim, func(id, k int) float32 {
		p := sigLIPVocabulary[id].piece
		if len(p) > len(metaspace) && p[:len(metaspace)] == metaspace {
			if t, ok := colorTarget(p[len(metaspace):]); ok {
				// Wt maps hidden 1→embed 0, 2→1, 0→2 with factor 2.
				h := [4]float32{t[2] / 2, t[0] / 2, t[1] / 2, 0}
				return h[k]
			}
		}
		return generic(id)[k]
	})
}

// SigLIPPositionEmbedding returns P [16, 4]: achromatic rows
// (p, p, p, q) with p = (pos mod 5 − 2)/16 and q = (pos mod 3 + 1)/32.
func SigLIPPositionEmbedding() [][]float32 {
	return matrix(SigLIPMaxLength, Dim, func(pos, k int) float32 {
		if k < 3 {
			return float32(pos%5-2) / 16
		}
		return float32(pos%3+1) / 32
	})
}

// SigLIPTextProjection returns Wt [4, 4]: a scaled permutation of the
// chromatic dimensions and 1 on the fourth.
func SigLIPTextProjection() [][]float32 {
	w := matrix(Dim, Dim, func(int, int) float32 { return 0 })
	w[1][0], w[2][1], w[0][2], w[3][3] = 2, 2, 2, 1
	return w
}

// SigLIPVisionProjection returns Wv [192, 4]: chroma contrasts in columns
// 0..2 and, in column 3, the zero-sum spatial pattern ±(y+1)(c+1)/256
// (+ for the left half, − for the right half).
func SigLIPVisionProjection() [][]float32 {
	return chromaWeights(func(c, y, x int) float32 {
		v := float32((y+1)*(c+1)) / 256
		if x >= 4 {
			v = -v
		}
		return v
	})
}

// SigLIPText is the reference pooler_output of the tiny-siglip text model:
// the mean over ALL positions of E[input_ids] + P[position_ids], projected
// by SigLIPTextProjection.
func SigLIPText(ids, pos [][]int64) [][]float64 {
	e, p, wt := SigLIPTokenEmbedding(), SigLIPPositionEmbedding(), SigLIPTextProjection()
	out := make([][]float64, len(ids))
	for b, seq := range ids {
		mean := make([]float64, Dim)
		for l, id := range seq {
			for k := range mean {
				mean[k] += float64(e[id][k]) + float64(p[pos[b][l]][k])
			}
		}
		for k := range mean {
			mean[k] /= float64(len(seq))
		}
		out[b] = project(mean, wt)
	}
	return out
}

// SigLIPVision is the reference pooler_output of the tiny-siglip vision
// model: Flatten(pixel_values) @ Wv.
func SigLIPVision(pixels [][]float32) [][]float64 {
	w := SigLIPVisionProjection()
	out := make([][]float64, len(pixels))
	for b, px := range pixels {
		out[b] = projectPixels(px, w)
	}
	return out
}

// SigLIPTextModel returns tiny-siglip/text_model.onnx.
func SigLIPTextModel() onnxpb.Model {
	n := onnxpb.Node
	return model("tiny_siglip_text", onnxpb.Graph{
		Nodes: []onnxpb.NodeProto{
			n("Gather", []string{"token_embedding", "input_ids"}, []string{"tokens"}, onnxpb.IntAttr("axis", 0)),
			n("Gather", []string{"position_embedding", "position_ids"}, []string{"positions"}, onnxpb.IntAttr("axis", 0)),
			n("Add", []string{"tokens", "positions"}, []string{"hidden"}),
			n("ReduceMean", []string{"hidden"}, []string{"mean"}, onnxpb.IntsAttr("axes", 1), onnxpb.IntAttr("keepdims", 0)),
			n("MatMul", []string{"mean", "text_projection"}, []string{"pooler_output"}),
		},
		Initializers: []onnxpb.Tensor{
			weights("token_embedding", SigLIPTokenEmbedding()),
			weights("position_embedding", SigLIPPositionEmbedding()),
			weights("text_projection", SigLIPTextProjection()),
		},
		Inputs: []onnxpb.ValueInfo{
			onnxpb.Input("input_ids", onnxpb.Int64, batchSeq...),
			onnxpb.Input("position_ids", onnxpb.Int64, batchSeq...),
		},
		Outputs: []onnxpb.ValueInfo{onnxpb.Output("pooler_output", onnxpb.Float, batchDim...)},
	})
}

// SigLIPVisionModel returns tiny-siglip/vision_model.onnx.
func SigLIPVisionModel() onnxpb.Model {
	n := onnxpb.Node
	return model("tiny_siglip_vision", onnxpb.Graph{
		Nodes: []onnxpb.NodeProto{
			n("Flatten", []string{"pixel_values"}, []string{"flat"}, onnxpb.IntAttr("axis", 1)),
			n("MatMul", []string{"flat", "visual_projection"}, []string{"pooler_output"}),
		},
		Initializers: []onnxpb.Tensor{weights("visual_projection", SigLIPVisionProjection())},
		Inputs:       []onnxpb.ValueInfo{onnxpb.Input("pixel_values", onnxpb.Float, batchImage...)},
		Outputs:      []onnxpb.ValueInfo{onnxpb.Output("pooler_output", onnxpb.Float, batchDim...)},
	})
}

// SigLIPTokenizerJSON returns tiny-siglip/tokenizer.json: a Unigram model
// with whitespace collapsing and lowercasing, Metaspace pre-tokenization,
// "$A </s>" post-processing, fixed padding to 16 with "</s>" and
// truncation to 16.
func SigLIPTokenizerJSON() []byte {
	vocab := make([]any, len(sigLIPVocabulary))
	for i, p := range sigLIPVocabulary {
		vocab[i] = []any{p.piece, p.score}
	}
	eos := func(typeID int) *orderedObject {
		return obj("SpecialToken", obj("id", SigLIPEOSToken, "type_id", typeID))
	}
	seq := func(id string, typeID int) *orderedObject {
		return obj("Sequence", obj("id", id, "type_id", typeID))
	}
	return jsonFile(obj(
		"version", "1.0",
		"truncation", obj("direction", "Right", "max_length", SigLIPMaxLength, "strategy", "LongestFirst", "stride", 0),
		"padding", obj("strategy", obj("Fixed", SigLIPMaxLength), "direction", "Right",
			"pad_to_multiple_of", nil, "pad_id", SigLIPPadID, "pad_type_id", 0, "pad_token", SigLIPEOSToken),
		"added_tokens", []any{
			addedToken(0, SigLIPPadToken, false),
			addedToken(1, SigLIPEOSToken, false),
			addedToken(2, SigLIPUnkToken, false),
		},
		"normalizer", obj("type", "Sequence", "normalizers", []any{
			obj("type", "Replace", "pattern", obj("Regex", `\s+`), "content", " "),
			obj("type", "Lowercase"),
		}),
		"pre_tokenizer", obj("type", "Metaspace", "replacement", metaspace, "prepend_scheme", "always", "split", true),
		"post_processor", obj("type", "TemplateProcessing",
			"single", []any{seq("A", 0), eos(0)},
			"pair", []any{seq("A", 0), eos(0), seq("B", 0), eos(0)},
			"special_tokens", obj(SigLIPEOSToken, obj("id", SigLIPEOSToken, "ids", []int{1}, "tokens", []string{SigLIPEOSToken})),
		),
		"decoder", obj("type", "Metaspace", "replacement", metaspace, "prepend_scheme", "always", "split", true),
		"model", obj("type", "Unigram", "unk_id", 2, "vocab", vocab, "byte_fallback", false),
	))
}

func sigLIPPreprocessorConfig() []byte {
	return jsonFile(obj(
		"image_processor_type", "SiglipImageProcessor",
		"do_resize", true,
		"size", obj("height", ImageSize, "width", ImageSize),
		"resample", 2,
		"do_center_crop", false,
		"do_rescale", true,
		"rescale_factor", 0.00392156862745098,
		"do_normalize", true,
		"image_mean", SigLIPImageMean,
		"image_std", SigLIPImageStd,
		"do_convert_rgb", true,
	))
}

func sigLIPConfig() []byte {
	return jsonFile(obj(
		"model_type", "siglip",
		"architectures", []string{"SiglipModel"},
		"text_config", obj(
			"model_type", "siglip_text_model",
			"vocab_size", SigLIPVocabSize,
			"hidden_size", Dim,
			"max_position_embeddings", SigLIPMaxLength,
			"pad_token_id", SigLIPPadID,
			"eos_token_id", SigLIPPadID,
		),
		"vision_config", obj(
			"model_type", "siglip_vision_model",
			"hidden_size", Dim,
			"image_size", ImageSize,
			"num_channels", Channels,
			"patch_size", 4,
		),
	))
}
