package extract

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Centered is a same-modality extractor with an unsupervised fit (SPEC
// §9.2 step 3): Fit takes the gallery endpoint's column means, Encode
// subtracts them from every embedding row of both endpoints (float64
// output). Each output row depends only on its own input row and the
// fitted means, so it is streaming-safe, and its fitted state serialises
// (StatefulFitter): a distributed plan fits it once on the gallery and the
// shard workers load that state instead of fitting (SPEC §11.2).
type Centered struct {
	ExtractorName string
	mean          []float64 // nil until fitted
}

func (c *Centered) Name() string        { return c.ExtractorName }
func (c *Centered) Type() string        { return "centered" }
func (c *Centered) StreamingSafe() bool { return true }
func (c *Centered) Modality() string    { return ModalityEmbeddings }

// Recipe implements Extractor. The output is a pure function of the
// dataset's embedding inputs, which the dataset identity covers, so the
// recipe carries a cache identity (SPEC §9.5).
func (c *Centered) Recipe() map[string]any {
	return map[string]any{"name": c.ExtractorName, "extractor_type": "centered", "cache_identity": "vertebrae/centered/v1"}
}

func (c *Centered) rows(side string, items retrieval.Items) (matrix.Matrix, error) {
	e, ok := items.(retrieval.EmbeddingItems)
	if !ok || e.Matrix() == nil {
		return nil, fmt.Errorf("Extractor %s does not support retrieval modality %s", c.ExtractorName, items.Modality())
	}
	return e.Matrix(), nil
}

// Fit implements Fitter: the column means of the gallery rows, summed in
// row order in float64.
func (c *Centered) Fit(_ context.Context, gallery retrieval.Items) error {
	m, err := c.rows("gallery", gallery)
	if err != nil {
		return err
	}
	n, d := m.Rows(), m.Cols()
	if n < 1 {
		return fmt.Errorf("Extractor %s: cannot fit on an empty gallery", c.ExtractorName)
	}
	sum, row := make([]float64, d), make([]float64, d)
	for i := range n {
		m.RowFloat64(i, row)
		for j, v := range row {
			sum[j] += v
		}
	}
	for j := range sum {
		sum[j] /= float64(n)
	}
	c.mean = sum
	return nil
}

// Encode implements Encoder.
func (c *Centered) Encode(_ context.Context, b Batch) (matrix.Matrix, error) {
	if c.mean == nil {
		return nil, fmt.Errorf("Extractor %s: Encode before Fit (or UnmarshalState)", c.ExtractorName)
	}
	m, err := c.rows(b.Side, b.Items)
	if err != nil {
		return nil, err
	}
	d := len(c.mean)
	if m.Cols() != d {
		return nil, fmt.Errorf("Extractor %s: %s rows have %d columns, the fitted gallery %d", c.ExtractorName, b.Side, m.Cols(), d)
	}
	out := make([]float64, m.Rows()*d)
	for i := range m.Rows() {
		row := out[i*d : (i+1)*d]
		m.RowFloat64(i, row)
		for j := range row {
			row[j] -= c.mean[j]
		}
	}
	return matrix.NewDense64(m.Rows(), d, out)
}

// centeredMagic starts the fitted state (version 1): then the width and
// the means, little-endian float64 bit patterns.
var centeredMagic = []byte("VTBCENT1")

// MarshalState implements StatefulFitter.
func (c *Centered) MarshalState() ([]byte, error) {
	if c.mean == nil {
		return nil, fmt.Errorf("Extractor %s: no fitted state (Fit first)", c.ExtractorName)
	}
	b := append([]byte(nil), centeredMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(c.mean)))
	for _, v := range c.mean {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b, nil
}

// UnmarshalState implements StatefulFitter.
func (c *Centered) UnmarshalState(state []byte) error {
	bad := fmt.Errorf("Extractor %s: invalid fitted state", c.ExtractorName)
	if !bytes.HasPrefix(state, centeredMagic) || len(state) < len(centeredMagic)+8 {
		return bad
	}
	rest := state[len(centeredMagic):]
	d := binary.LittleEndian.Uint64(rest)
	rest = rest[8:]
	if d < 1 || d != uint64(len(rest)/8) || len(rest)%8 != 0 {
		return bad
	}
	mean := make([]float64, d)
	for j := range mean {
		mean[j] = math.Float64frombits(binary.LittleEndian.Uint64(rest[8*j:]))
		if math.IsNaN(mean[j]) || math.IsInf(mean[j], 0) {
			return bad
		}
	}
	c.mean = mean
	return nil
}
