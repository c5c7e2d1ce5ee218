package rank

import (
	"fmt"
	"math"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// prepared holds one endpoint in the working precision, packed row-major.
type prepared struct {
	rows, cols int
	f64        []float64
	f32        []float32
}

// prepare converts (dot, squared_l2) or normalises (cosine) an endpoint as
// SPEC §4.1 prescribes. endpoint is "Query" or "Gallery".
func prepare(m matrix.Matrix, ids []string, endpoint string, sim Similarity, prec Precision) (*prepared, error) {
	n, d := m.Rows(), m.Cols()
	p := &prepared{rows: n, cols: d}
	if sim == Cosine {
		return p, p.normalise(m, ids, endpoint, prec)
	}
	if prec == Float64 {
		if dm, ok := m.(*matrix.Dense); ok && dm.DType() == matrix.Float64 {
			p.f64 = dm.Float64Data() // exact already: no working copy needed
			return p, nil
		}
		p.f64 = make([]float64, n*d)
		for i := 0; i < n; i++ {
			m.RowFloat64(i, p.f64[i*d:(i+1)*d])
		}
		return p, nil
	}
	if dm, ok := m.(*matrix.Dense); ok && dm.DType() == matrix.Float32 {
		p.f32 = dm.Float32Data()
		return p, nil
	}
	p.f32 = make([]float32, n*d)
	row := make([]float64, d)
	for i := 0; i < n; i++ {
		m.RowFloat64(i, row)
		out := p.f32[i*d : (i+1)*d]
		for j, v := range row {
			f := float32(v)
			if math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("%s embeddings: value at row %d (ID %s), column %d cannot be represented in float32", endpoint, i, msgfmt.Quote(ids[i]), j)
			}
			out[j] = f
		}
	}
	return p, nil
}

// normalise implements SPEC §4.1 step 3 and the zero-norm rule.
func (p *prepared) normalise(m matrix.Matrix, ids []string, endpoint string, prec Precision) error {
	n, d := p.rows, p.cols
	row := make([]float64, d)
	var zero []int
	if prec == Float64 {
		p.f64 = make([]float64, n*d)
	} else {
		p.f32 = make([]float32, n*d)
	}
	for i := 0; i < n; i++ {
		m.RowFloat64(i, row)
		var mx float64
		for _, v := range row {
			mx = math.Max(mx, math.Abs(v))
		}
		if mx == 0 {
			zero = append(zero, i)
			continue
		}
		var acc float64
		for _, v := range row {
			y := v / mx
			acc = math.FMA(y, y, acc)
		}
		norm := mx * math.Sqrt(acc)
		if prec == Float64 {
			out := p.f64[i*d : (i+1)*d]
			for j, v := range row {
				out[j] = v / norm
			}
		} else {
			out := p.f32[i*d : (i+1)*d]
			for j, v := range row {
				out[j] = float32(v / norm)
			}
		}
	}
	if len(zero) > 0 {
		return &Error{Msg: ZeroNormMessage(endpoint, zero, ids)}
	}
	return nil
}

// ZeroNormMessage renders the exact layout of SPEC §4.1 step 4.
func ZeroNormMessage(endpoint string, rows []int, ids []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s embeddings contain %d zero-norm row(s): ", endpoint, len(rows))
	for k, i := range rows {
		if k == msgfmt.PreviewLimit {
			b.WriteString(", ...")
			break
		}
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "index %d (ID %s)", i, msgfmt.Quote(ids[i]))
	}
	b.WriteString(". Cosine similarity is undefined for zero-norm embeddings.")
	return b.String()
}
