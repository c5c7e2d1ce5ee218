package main

import (
	"encoding/json"
	"flag"
	"log"
	"os"
	"path/filepath"
	"sort"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/internal/tinymodels"
)

type tensor struct {
	Type string `json:"type"` // "int64" or "float32"
	Dims []int  `json:"dims"`
	Data []any  `json:"data"`
}

type modelCase struct {
	Model    string            `json:"model"`
	Inputs   map[string]tensor `json:"inputs"`
	Expected map[string]tensor `json:"expected"`
}

type tokenizerCase struct {
	Dir  string  `json:"dir"`
	Text string  `json:"text"`
	IDs  []int64 `json:"ids"`
}

func ints(rows [][]int64) tensor {
	t := tensor{Type: "int64", Dims: []int{len(rows), len(rows[0])}}
	for _, r := range rows {
		for _, v := range r {
			t.Data = append(t.Data, v)
		}
	}
	return t
}

func images(rows [][]float32) tensor {
	t := tensor{Type: "float32", Dims: []int{len(rows), tinymodels.Channels, tinymodels.ImageSize, tinymodels.ImageSize}}
	for _, r := range rows {
		for _, v := range r {
			t.Data = append(t.Data, v)
		}
	}
	return t
}

func floats2(rows [][]float64) tensor {
	t := tensor{Type: "float32", Dims: []int{len(rows), len(rows[0])}}
	for _, r := range rows {
		for _, v := range r {
			t.Data = append(t.Data, v)
		}
	}
	return t
}

func floats3(rows [][][]float64) tensor {
	t := tensor{Type: "float32", Dims: []int{len(rows), len(rows[0]), len(rows[0][0])}}
	for _, r := range rows {
		for _, c := range r {
			for _, v := range c {
				t.Data = append(t.Data, v)
			}
		}
	}
	return t
}

func pad(ids []int64, n int, with int64) ([]int64, []int64) {
	mask := make([]int64, n)
	out := make([]int64, n)
	for i := range out {
		out[i] = with
		if i < len(ids) {
			out[i], mask[i] = ids[i], 1
		}
	}
	return out, mask
}

func main() {
	dir := flag.String("testdata", "extract/onnx/testdata", "testdata directory")
	flag.Parse()
	root, err := filepath.Abs(*dir)
	if err != nil {
		log.Fatal(err)
	}
	path := func(p string) string { return filepath.Join(root, filepath.FromSlash(p)) }
	colors := tinymodels.RetrievalImages

	// tiny-clip text: a full caption and a shorter one padded with
	// <|endoftext|> and attention_mask 0.
	eot, _ := tinymodels.CLIPTokenID(tinymodels.CLIPEndToken)
	id0, m0 := pad(tinymodels.CLIPExpectedIDs(tinymodels.RetrievalTexts[0]), 8, eot)
	id1, m1 := pad(tinymodels.CLIPExpectedIDs("a purple circle"), 8, eot)
	clipIDs, clipMask := [][]int64{id0, id1}, [][]int64{m0, m1}
	clipPix := [][]float32{tinymodels.CLIPPixels(colors[0]), tinymodels.PatternPixels(1)}

	sigIDs := [][]int64{tinymodels.SigLIPExpectedIDs(tinymodels.RetrievalTexts[0]), tinymodels.SigLIPExpectedIDs(tinymodels.RetrievalTexts[4])}
	sigPos := tinymodels.SigLIPPositionIDs(2, tinymodels.SigLIPMaxLength)
	sigPix := [][]float32{tinymodels.SigLIPPixels(colors[2]), tinymodels.PatternPixels(2)}

	t0, tm0 := pad(tinymodels.TextExpectedIDs("a photo of a red square"), 8, tinymodels.TextPadID)
	t1, tm1 := pad(tinymodels.TextExpectedIDs("Red squares!"), 8, tinymodels.TextPadID)
	textIDs, textMask := [][]int64{t0, t1}, [][]int64{tm0, tm1}
	textTypes := [][]int64{{0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 1, 1, 1, 0, 0}}

	imgPix := [][]float32{tinymodels.CLIPPixels(colors[3]), tinymodels.PatternPixels(3)}

	out := struct {
		Models     []modelCase     `json:"models"`
		Tokenizers []tokenizerCase `json:"tokenizers"`
	}{
		Models: []modelCase{
			{path("tiny-clip/onnx/text_model.onnx"),
				map[string]tensor{"input_ids": ints(clipIDs), "attention_mask": ints(clipMask)},
				map[string]tensor{
					"text_embeds":       floats2(tinymodels.CLIPText(clipIDs, clipMask)),
					"last_hidden_state": floats3(tinymodels.CLIPTextHidden(clipIDs)),
				}},
			{path("tiny-clip/onnx/vision_model.onnx"),
				map[string]tensor{"pixel_values": images(clipPix)},
				map[string]tensor{
					"image_embeds":  floats2(tinymodels.CLIPVision(clipPix)),
					"pooler_output": floats2(tinymodels.CLIPVisionPooled(clipPix)),
				}},
			{path("tiny-siglip/text_model.onnx"),
				map[string]tensor{"input_ids": ints(sigIDs), "position_ids": ints(sigPos)},
				map[string]tensor{"pooler_output": floats2(tinymodels.SigLIPText(sigIDs, sigPos))}},
			{path("tiny-siglip/vision_model.onnx"),
				map[string]tensor{"pixel_values": images(sigPix)},
				map[string]tensor{"pooler_output": floats2(tinymodels.SigLIPVision(sigPix))}},
			{path("tiny-text/model.onnx"),
				map[string]tensor{"input_ids": ints(textIDs), "attention_mask": ints(textMask), "token_type_ids": ints(textTypes)},
				map[string]tensor{"last_hidden_state": floats3(tinymodels.TextHidden(textIDs, textTypes))}},
			{path("tiny-image/model.onnx"),
				map[string]tensor{"pixel_values": images(imgPix)},
				map[string]tensor{
					"last_hidden_state": floats3(tinymodels.ImageHidden(imgPix)),
					"pooler_output":     floats2(tinymodels.ImagePooled(imgPix)),
				}},
		},
	}
	for _, text := range tinymodels.RetrievalTexts {
		out.Tokenizers = append(out.Tokenizers,
			tokenizerCase{path("tiny-clip"), text, tinymodels.CLIPExpectedIDs(text)},
			tokenizerCase{path("tiny-siglip"), text, tinymodels.SigLIPExpectedIDs(text)},
		)
	}
	// Normalization: case and runs of whitespace do not matter.
	messy := "  A  Photo of a\tRED   square"
	out.Tokenizers = append(out.Tokenizers,
		tokenizerCase{path("tiny-clip"), messy, tinymodels.CLIPExpectedIDs(tinymodels.RetrievalTexts[0])},
		tokenizerCase{path("tiny-siglip"), "A Photo of a RED square", tinymodels.SigLIPExpectedIDs(tinymodels.RetrievalTexts[0])},
	)
	texts := make([]string, 0, len(tinymodels.TextExpectedTokens))
	for text := range tinymodels.TextExpectedTokens {
		texts = append(texts, text)
	}
	sort.Strings(texts)
	for _, text := range texts {
		out.Tokenizers = append(out.Tokenizers, tokenizerCase{path("tiny-text"), text, tinymodels.TextExpectedIDs(text)})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		log.Fatal(err)
	}
}
