package tinymodels

import (
	"github.com/vertebrae-eval/vertebrae/internal/onnxpb"
)

// Tiny-text (BERT-style WordPiece) constants.
const (
	TextPadID = 0
	TextUnkID = 1
	TextCLSID = 2
	TextSEPID = 3
	// TextMaxLength is the truncation max_length of tiny-text/tokenizer.json.
	TextMaxLength = 12
)

// buildTextVocab returns the WordPiece vocabulary by id.
func buildTextVocab() []string {
	v := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	seen := map[string]bool{}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			v = append(v, t)
		}
	}
	for _, w := range captionWords {
		add(w)
	}
	for _, w := range []string{"the", "is", "this", "and", "##s", "##ed", "##ing", ".", ",", "!", "?", "'", "-"} {
		add(w)
	}
	for r := 'a'; r <= 'z'; r++ {
		add(string(r))
	}
	for r := 'a'; r <= 'z'; r++ {
		add("##" + string(r))
	}
	for r := '0'; r <= '9'; r++ {
		add(string(r))
	}
	return v
}

var textVocabulary = buildTextVocab()

// TextVocabSize is the number of rows of the tiny-text token embedding.
var TextVocabSize = len(textVocabulary)

// TextTokenID returns the id of a tiny-text WordPiece token such as "##s".
func TextTokenID(token string) (int64, bool) {
	for id, t := range textVocabulary {
		if t == token {
			return int64(id), true
		}
	}
	return 0, false
}

// TextExpectedTokens are designed tokenizations of tiny-text/tokenizer.json
// (with [CLS]/[SEP], no padding).
var TextExpectedTokens = map[string][]string{
	"a photo of a red square": {"[CLS]", "a", "photo", "of", "a", "red", "square", "[SEP]"},
	"Red squares!":            {"[CLS]", "red", "square", "##s", "!", "[SEP]"},
	"The BLUE circle, again.": {"[CLS]", "the", "blue", "circle", ",", "a", "##g", "##a", "##i", "##n", ".", "[SEP]"},
	// Truncated to TextMaxLength: ten words, then [SEP].
	"a photo of a green square and a yellow circle and a red square": {
		"[CLS]", "a", "photo", "of", "a", "green", "square", "and", "a", "yellow", "circle", "[SEP]",
	},
	// strip_accents null follows lowercase: "über" becomes "uber".
	"über": {"[CLS]", "u", "##b", "##e", "##r", "[SEP]"},
	// "@" and CJK characters are not in the vocabulary.
	"x@y 日本": {"[CLS]", "x", "[UNK]", "y", "[UNK]", "[UNK]", "[SEP]"},
}

// TextExpectedIDs returns the ids of TextExpectedTokens[text].
func TextExpectedIDs(text string) []int64 {
	toks, ok := TextExpectedTokens[text]
	if !ok {
		panic("tinymodels: no designed tokenization for " + text)
	}
	ids := make([]int64, len(toks))
	for i, t := range toks {
		id, ok := TextTokenID(t)
		if !ok {
			panic("tinymodels: token not in the tiny-text vocabulary: " + t)
		}
		ids[i] = id
	}
	return ids
}

// TextTokenEmbedding returns E [TextVocabSize, 4] with
// E[id][k] = ((3·id + 5·k) mod 11 − 5)/8.
func TextTokenEmbedding() [][]float32 {
	return matrix(TextVocabSize, Dim, func(id, k int) float32 {
		return float32((3*id+5*k)%11-5) / 8
	})
}

// TextTypeEmbedding returns T [2, 4].
func TextTypeEmbedding() [][]float32 {
	return [][]float32{
		{1.0 / 16, 0, -1.0 / 16, 1.0 / 4},
		{-1.0 / 4, 1.0 / 8, 0, -1.0 / 16},
	}
}

// TextHidden is the reference last_hidden_state of tiny-text:
// E[input_ids] + T[token_type_ids]. The attention mask does not enter.
func TextHidden(ids, types [][]int64) [][][]float64 {
	e, t := TextTokenEmbedding(), TextTypeEmbedding()
	out := make([][][]float64, len(ids))
	for b, seq := range ids {
		for l, id := range seq {
			row := make([]float64, Dim)
			for k := range row {
				row[k] = float64(e[id][k]) + float64(t[types[b][l]][k])
			}
			out[b] = append(out[b], row)
		}
	}
	return out
}

// TextModel returns tiny-text/model.onnx. attention_mask is a declared
// input that the graph does not use (as in exports whose embeddings ignore
// it); callers must still feed it.
func TextModel() onnxpb.Model {
	n := onnxpb.Node
	return model("tiny_text", onnxpb.Graph{
		Nodes: []onnxpb.NodeProto{
			n("Gather", []string{"token_embedding", "input_ids"}, []string{"tokens"}, onnxpb.IntAttr("axis", 0)),
			n("Gather", []string{"token_type_embedding", "token_type_ids"}, []string{"types"}, onnxpb.IntAttr("axis", 0)),
			n("Add", []string{"tokens", "types"}, []string{"last_hidden_state"}),
		},
		Initializers: []onnxpb.Tensor{
			weights("token_embedding", TextTokenEmbedding()),
			weights("token_type_embedding", TextTypeEmbedding()),
		},
		Inputs: []onnxpb.ValueInfo{
			onnxpb.Input("input_ids", onnxpb.Int64, batchSeq...),
			onnxpb.Input("attention_mask", onnxpb.Int64, batchSeq...),
			onnxpb.Input("token_type_ids", onnxpb.Int64, batchSeq...),
		},
		Outputs: []onnxpb.ValueInfo{onnxpb.Output("last_hidden_state", onnxpb.Float, batchSeqDim...)},
	})
}

// TextTokenizerJSON returns tiny-text/tokenizer.json (BERT WordPiece).
func TextTokenizerJSON() []byte {
	vocab := newObject()
	for id, t := range textVocabulary {
		vocab.set(t, id)
	}
	var added []any
	for id, t := range textVocabulary[:5] {
		added = append(added, addedToken(id, t, false))
	}
	return jsonFile(obj(
		"version", "1.0",
		"truncation", obj("direction", "Right", "max_length", TextMaxLength, "strategy", "LongestFirst", "stride", 0),
		"padding", nil,
		"added_tokens", added,
		"normalizer", obj("type", "BertNormalizer", "clean_text", true, "handle_chinese_chars", true,
			"strip_accents", nil, "lowercase", true),
		"pre_tokenizer", obj("type", "BertPreTokenizer"),
		"post_processor", obj("type", "BertProcessing",
			"sep", []any{"[SEP]", TextSEPID}, "cls", []any{"[CLS]", TextCLSID}),
		"decoder", obj("type", "WordPiece", "prefix", "##", "cleanup", true),
		"model", obj("type", "WordPiece", "unk_token", "[UNK]", "continuing_subword_prefix", "##",
			"max_input_chars_per_word", 100, "vocab", vocab),
	))
}

// TextSTModel returns tiny-text-st/model.onnx: tiny-text with the mean
// pooling inside the graph, as sentence-transformers exports have it — an
// extra sentence_embedding output = Σ mask·last_hidden_state / Σ mask.
func TextSTModel() onnxpb.Model {
	n := onnxpb.Node
	m := TextModel()
	g := m.Graph
	g.Name = "tiny_text_st"
	g.Nodes = append(g.Nodes,
		n("Cast", []string{"attention_mask"}, []string{"mask_f"}, onnxpb.IntAttr("to", int64(onnxpb.Float))),
		n("Unsqueeze", []string{"mask_f", "axes_2"}, []string{"mask_3d"}),
		n("Mul", []string{"last_hidden_state", "mask_3d"}, []string{"masked"}),
		n("ReduceSum", []string{"masked", "axes_1"}, []string{"summed"}, onnxpb.IntAttr("keepdims", 0)),
		n("ReduceSum", []string{"mask_3d", "axes_1"}, []string{"count"}, onnxpb.IntAttr("keepdims", 0)),
		n("Div", []string{"summed", "count"}, []string{"sentence_embedding"}),
	)
	g.Initializers = append(g.Initializers,
		onnxpb.Int64Tensor("axes_1", []int64{1}, []int64{1}),
		onnxpb.Int64Tensor("axes_2", []int64{1}, []int64{2}),
	)
	g.Outputs = append(g.Outputs, onnxpb.Output("sentence_embedding", onnxpb.Float, batchDim...))
	m.Graph = g
	return m
}
