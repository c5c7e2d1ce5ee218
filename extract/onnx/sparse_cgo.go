//go:build cgo

package onnx

import (
	"context"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/extract/onnx/tokenize"
)

// The sparse text layout is the input signature of the Universal Sentence
// Encoder Lite graph (converted by package extract/onnx/tfjs): the tokens of
// a batch as coordinates indices [n_tokens, 2] = (row, position) and their
// IDs values [n_tokens], both int64, padding dropped. The model pads
// internally to the batch's longest row and returns one row per sentence up
// to the largest row index present.

// isSparseInput reports a model whose inputs are exactly indices and values.
func isSparseInput(ins []TensorInfo) bool {
	if len(ins) != 2 {
		return false
	}
	idx, ok1 := findInfo(ins, "indices")
	val, ok2 := findInfo(ins, "values")
	return ok1 && ok2 && idx.Type == "int64" && val.Type == "int64" && len(idx.Shape) == 2 && len(val.Shape) == 1
}

func (t *textTower) sparseTower(output, pooling string, defaults ...string) (*textTower, error) {
	t.sparse = true
	t.opts.Padding = tokenize.PadMaxLength
	out, err := selectOutput(t.sess.Outputs(), output, pooling, defaults...)
	if err != nil {
		return nil, fmt.Errorf("text model: %w", err)
	}
	if len(out.Shape) != 2 {
		return nil, fmt.Errorf("text model output %s must be 2-D [batch, dim] with sparse inputs", out)
	}
	t.output = out
	return t, nil
}

// batchIndependent is false for the sparse layout with batches of more than
// one row: the model pads to the longest row of the batch, so a row's
// output can change in the last bits with its batch (not streaming-safe,
// SPEC §9.4).
func (t *textTower) batchIndependent() bool { return !t.sparse || t.batch == 1 }

// runSparse feeds one tokenised batch as coordinates. A one-token sentinel
// row is appended so that the model returns a row for every sentence, even
// for empty trailing texts (which have no coordinates); its output is
// dropped. Rows are independent in the model (attention is masked per row),
// so the sentinel does not change the others.
func (t *textTower) runSparse(ctx context.Context, enc tokenize.Encoded) ([]float32, int, error) {
	var idx, val []int64
	for r := range enc.Rows {
		for j := range enc.Len {
			if enc.AttentionMask[r*enc.Len+j] != 0 {
				idx = append(idx, int64(r), int64(j))
				val = append(val, enc.IDs[r*enc.Len+j])
			}
		}
	}
	idx = append(idx, int64(enc.Rows), 0)
	val = append(val, 0)
	n := int64(len(val))
	out, err := t.sess.Run(ctx, []Feed{
		{Name: "indices", Shape: []int64{n, 2}, Int64: idx},
		{Name: "values", Shape: []int64{n}, Int64: val},
	}, t.output.Name)
	if err != nil {
		return nil, 0, err
	}
	if len(out.Shape) != 2 || int(out.Shape[0]) != enc.Rows+1 {
		return nil, 0, fmt.Errorf("output %s has shape %v for %d inputs (+1 sentinel)", out.Name, out.Shape, enc.Rows)
	}
	w := int(out.Shape[1])
	data := out.Data[:enc.Rows*w]
	return data, w, nil
}
