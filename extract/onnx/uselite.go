package onnx

import (
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/tokenize"
)

// USELiteVocabFile is the tokenizer file of a Universal Sentence Encoder
// Lite model directory (written by `vertebrae models prepare`): the
// SentencePiece pieces and scores of the TF.js model's vocab.json, read by
// [tokenize.LoadUSELite]. An onnx_text model directory without
// tokenizer.json uses it instead.
const USELiteVocabFile = "sentencepiece_vocab.json"

// sparseLayout names, in recipes, the text input layout of models fed
// token coordinates instead of a padded matrix.
const sparseLayout = "sparse_indices_values"

// loadTokenizerFile loads a tokenizer.json, or a USE-lite vocabulary by its
// file name.
func loadTokenizerFile(path string) (*tokenize.Tokenizer, error) {
	if filepath.Base(path) == USELiteVocabFile {
		return tokenize.LoadUSELite(path)
	}
	return tokenize.Load(path)
}
