package compress

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// FitSide is the endpoint every compressor is fitted on (SPEC §8.2).
const FitSide = "gallery"

// PrefixWarning is added when prefix_truncate runs without
// assume_matryoshka (SPEC §8.3).
const PrefixWarning = "prefix_truncate without assume_matryoshka is a generic prefix diagnostic"

// SkipWarning is the warning of the n_components ≥ width no-op (SPEC §8.4).
func SkipWarning(k, width int) string {
	return fmt.Sprintf("Requested n_components=%d is greater than or equal to the original dimension %d; skipping compression.", k, width)
}

// Result is a compressed query/gallery pair.
type Result struct {
	Query, Gallery matrix.Matrix
	// Metadata is the compression_metadata object of SPEC §8.4, built from
	// JSON-compatible values only.
	Metadata map[string]any
	// Warnings are the compression warnings (also in Metadata["warnings"]).
	Warnings []string
}

// Recipe is the compressor recipe recorded in the metadata: the config's
// AsMap plus, for the randomised methods, the generator name.
func (c Config) Recipe() map[string]any {
	if !c.IsEnabled() {
		return map[string]any{"method": MethodNone, "enabled": false}
	}
	m := c.AsMap()
	switch c.Method {
	case MethodTruncatedSVD, MethodGaussianRandomProjection:
		m["generator"] = generatorNormal
	case MethodSparseRandomProjection:
		m["generator"] = generatorUniform
	}
	return m
}

// Apply fits the compressor of cfg on the gallery and applies the same
// fitted state to both endpoints (SPEC §8). Disabled configurations and the
// n_components ≥ width no-op return the input matrices themselves.
func Apply(ctx context.Context, cfg Config, query, gallery matrix.Matrix) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if query == nil || gallery == nil {
		return nil, errors.New("compress: both query and gallery embeddings are required")
	}
	if !cfg.IsEnabled() {
		// The scorer reports a width mismatch of an uncompressed pair with
		// its own message (SPEC §12), so none does not check widths.
		md := metadata(false, MethodNone, gallery)
		md["recipe"] = cfg.Recipe()
		return &Result{Query: query, Gallery: gallery, Metadata: md, Warnings: []string{}}, nil
	}
	width := gallery.Cols()
	if query.Cols() != width {
		return nil, fmt.Errorf("Paired embeddings must have the same feature dimension: query has %d columns, gallery has %d", query.Cols(), width)
	}
	if cfg.NComponents != nil && *cfg.NComponents >= width {
		w := SkipWarning(*cfg.NComponents, width)
		md := metadata(true, cfg.Method, gallery)
		md["warnings"] = []any{w}
		md["recipe"] = cfg.Recipe()
		return &Result{Query: query, Gallery: gallery, Metadata: md, Warnings: []string{w}}, nil
	}
	for _, s := range []struct {
		name string
		m    matrix.Matrix
	}{{"query", query}, {"gallery", gallery}} {
		if _, ok := s.m.(*matrix.CSR); s.m.Sparse() && !ok {
			return nil, fmt.Errorf("compress: unsupported sparse matrix type %T for the %s embeddings", s.m, s.name)
		}
		if r, c, bad := matrix.FirstNonFinite(s.m); bad {
			return nil, fmt.Errorf("compress: %s embeddings must contain only finite numeric values (row %d, column %d)", s.name, r, c)
		}
	}
	if err := checkMemory(ctx, cfg, query, gallery); err != nil { // before any fit allocation (SPEC §6.1)
		return nil, err
	}
	var (
		out *output
		err error
	)
	switch cfg.Method {
	case MethodPCA:
		out, err = applyPCA(ctx, cfg, query, gallery)
	case MethodTruncatedSVD:
		out, err = applyTruncatedSVD(ctx, cfg, query, gallery)
	case MethodGaussianRandomProjection:
		k := *cfg.NComponents
		var wt []float64
		if err = interruptible(ctx, func() error { wt = transpose(gaussianMatrix(cfg.RandomState, k, width, true), k, width); return nil }); err == nil {
			out, err = applyLinear(ctx, cfg, &linearMap{k: k, d: width, wt: wt}, query, gallery)
		}
	case MethodSparseRandomProjection:
		k := *cfg.NComponents
		out, err = applyLinear(ctx, cfg, &linearMap{k: k, d: width, sp: newSparseProjection(cfg.RandomState, k, width)}, query, gallery)
	case MethodPrefixTruncate:
		out, err = applyPrefix(ctx, cfg, query, gallery)
	case MethodQuantize:
		out, err = applyQuantize(ctx, cfg, query, gallery)
	default:
		err = fmt.Errorf("compress: method %q is not implemented", cfg.Method)
	}
	if err != nil {
		return nil, err
	}

	md := metadata(true, cfg.Method, gallery)
	md["applied"] = true
	md["compressed_dim"] = out.gallery.Cols()
	md["output_sparse"] = out.gallery.Sparse()
	md["dtype"] = out.gallery.DType().String()
	// Gallery bytes as stored by the method against the float32 baseline,
	// independent of the source's element type (see BaselineElementBytes).
	encoded := encodedGalleryBytes(cfg, out.gallery)
	md["resident_bytes"] = encoded
	md["compression_ratio"] = float64(baselineBytes(gallery)) / float64(max(encoded, 1))
	warnings := out.warnings
	if warnings == nil {
		warnings = []string{}
	}
	ws := make([]any, len(warnings))
	for i, w := range warnings {
		ws[i] = w
	}
	md["warnings"] = ws
	md["recipe"] = cfg.Recipe()
	for k, v := range out.extras {
		md[k] = v
	}
	return &Result{Query: out.query, Gallery: out.gallery, Metadata: md, Warnings: warnings}, nil
}

// output is what a method produces.
type output struct {
	query, gallery matrix.Matrix
	extras         map[string]any
	warnings       []string
}

// metadata returns the fields of SPEC §8.4 shared by every column of the
// table, filled for an unchanged gallery.
func metadata(enabled bool, method string, g matrix.Matrix) map[string]any {
	return map[string]any{
		"enabled":        enabled,
		"method":         method,
		"applied":        false,
		"original_dim":   g.Cols(),
		"compressed_dim": g.Cols(),
		"input_sparse":   g.Sparse(),
		"output_sparse":  g.Sparse(),
		"dtype":          g.DType().String(),
		"warnings":       []any{},
		"fit_side":       FitSide,
	}
}

// checkSamples enforces k ≤ n_gallery for the fitted decompositions.
func checkSamples(k int, g matrix.Matrix) error {
	if n := g.Rows(); k > n {
		return fmt.Errorf("cannot fit n_components=%d from only %d fit-side samples", k, n)
	}
	return nil
}

// varianceExtras are the pca/truncated_svd metadata extras.
func varianceExtras(ratio []float64) map[string]any {
	list := make([]any, len(ratio))
	total := 0.0
	for i, r := range ratio {
		list[i] = r
		total += r
	}
	return map[string]any{
		"explained_variance_ratio": list,
		"explained_variance_total": total,
		"resolved_n_components":    len(ratio),
	}
}

func applyPCA(ctx context.Context, cfg Config, query, gallery matrix.Matrix) (*output, error) {
	if query.Sparse() || gallery.Sparse() {
		return nil, errors.New("pca requires dense embeddings; use truncated_svd or a random projection")
	}
	k, preserve := 0, 0.0
	if cfg.NComponents != nil {
		k = *cfg.NComponents
		if err := checkSamples(k, gallery); err != nil {
			return nil, err
		}
	} else {
		if gallery.Rows() == 0 {
			return nil, errors.New("compress: cannot fit pca from 0 fit-side samples")
		}
		preserve = *cfg.PreserveVariance
	}
	fit, err := fitPCA(ctx, gallery, k, preserve)
	if err != nil {
		return nil, err
	}
	k = len(fit.ratio)
	lm := &linearMap{k: k, d: gallery.Cols(), wt: transpose(fit.components, k, gallery.Cols()), mean: fit.mean}
	if cfg.Whiten {
		lm.divisor = make([]float64, k)
		for j, v := range fit.variance {
			lm.divisor[j] = math.Sqrt(v) // v = 0 leaves the column unscaled
		}
	}
	out, err := applyLinear(ctx, cfg, lm, query, gallery)
	if err != nil {
		return nil, err
	}
	out.extras = varianceExtras(fit.ratio)
	return out, nil
}

func applyTruncatedSVD(ctx context.Context, cfg Config, query, gallery matrix.Matrix) (*output, error) {
	k, d := *cfg.NComponents, gallery.Cols()
	if err := checkSamples(k, gallery); err != nil {
		return nil, err
	}
	v, err := fitTruncatedSVD(ctx, gallery, k, cfg.RandomState)
	if err != nil {
		return nil, err
	}
	lm := &linearMap{k: k, d: d, wt: transpose(v, k, d)}
	g, err := lm.apply(ctx, gallery)
	if err != nil {
		return nil, err
	}
	// Explained variance as scikit-learn reports it: the variance of each
	// projected gallery column over the total variance of the gallery.
	n := gallery.Rows()
	ratio := make([]float64, k)
	total := 0.0
	for _, v := range columnVariances(gallery) {
		total += v
	}
	if total > 0 {
		for j, v := range columnVariances(denseView{n: n, d: k, data: g}) {
			ratio[j] = v / total
		}
	}
	q, err := lm.apply(ctx, query)
	if err != nil {
		return nil, err
	}
	out, err := denseOutputs(cfg, query, gallery, q, g, k)
	if err != nil {
		return nil, err
	}
	out.extras = varianceExtras(ratio)
	return out, nil
}

// applyLinear maps both endpoints through lm to dense outputs.
func applyLinear(ctx context.Context, cfg Config, lm *linearMap, query, gallery matrix.Matrix) (*output, error) {
	g, err := lm.apply(ctx, gallery)
	if err != nil {
		return nil, err
	}
	q, err := lm.apply(ctx, query)
	if err != nil {
		return nil, err
	}
	return denseOutputs(cfg, query, gallery, q, g, lm.k)
}

// denseOutputs stores the float64 results of both endpoints in their output
// element types.
func denseOutputs(cfg Config, query, gallery matrix.Matrix, q, g []float64, k int) (*output, error) {
	gm, err := newDense("gallery", gallery.Rows(), k, g, outputDType(cfg, gallery))
	if err != nil {
		return nil, err
	}
	qm, err := newDense("query", query.Rows(), k, q, outputDType(cfg, query))
	if err != nil {
		return nil, err
	}
	return &output{query: qm, gallery: gm}, nil
}

// denseView is a float64 row-major matrix for columnVariances.
type denseView struct {
	n, d int
	data []float64
}

// columnVariances returns the population variance (ddof 0) of every column:
// the sum of squared deviations from the column mean, over n. CSR columns
// are handled without densifying (implicit zeros deviate by the mean).
func columnVariances(m any) []float64 {
	var n, d int
	var mean, ss []float64
	switch t := m.(type) {
	case denseView:
		n, d = t.n, t.d
		mean, ss = make([]float64, d), make([]float64, d)
		for i := 0; i < n; i++ {
			for j, v := range t.data[i*d : (i+1)*d] {
				mean[j] += v
			}
		}
		for j := range mean {
			mean[j] /= float64(n)
		}
		for i := 0; i < n; i++ {
			for j, v := range t.data[i*d : (i+1)*d] {
				ss[j] += (v - mean[j]) * (v - mean[j])
			}
		}
	case *matrix.CSR:
		n, d = t.Rows(), t.Cols()
		mean, ss = make([]float64, d), make([]float64, d)
		count := make([]int, d)
		var vals []float64
		for i := 0; i < n; i++ {
			var idx []int32
			idx, vals = t.RowEntries(i, vals)
			for e, c := range idx {
				mean[c] += vals[e]
				count[c]++
			}
		}
		for j := range mean {
			mean[j] /= float64(n)
		}
		for i := 0; i < n; i++ {
			var idx []int32
			idx, vals = t.RowEntries(i, vals)
			for e, c := range idx {
				ss[c] += (vals[e] - mean[c]) * (vals[e] - mean[c])
			}
		}
		for j := range ss {
			ss[j] += float64(n-count[j]) * mean[j] * mean[j]
		}
	case matrix.Matrix:
		n, d = t.Rows(), t.Cols()
		data := make([]float64, n*d)
		for i := 0; i < n; i++ {
			t.RowFloat64(i, data[i*d:(i+1)*d])
		}
		return columnVariances(denseView{n: n, d: d, data: data})
	}
	for j := range ss {
		if n > 0 {
			ss[j] /= float64(n)
		}
	}
	return ss
}

func applyPrefix(ctx context.Context, cfg Config, query, gallery matrix.Matrix) (*output, error) {
	k := *cfg.NComponents
	out := &output{extras: map[string]any{"assume_matryoshka": cfg.AssumeMatryoshka}}
	if !cfg.AssumeMatryoshka {
		out.warnings = []string{PrefixWarning}
	}
	var err error
	if out.gallery, err = prefix(ctx, cfg, "gallery", gallery, k); err != nil {
		return nil, err
	}
	if out.query, err = prefix(ctx, cfg, "query", query, k); err != nil {
		return nil, err
	}
	return out, nil
}

// prefix keeps the first k columns of m; a CSR matrix stays CSR.
func prefix(ctx context.Context, cfg Config, side string, m matrix.Matrix, k int) (matrix.Matrix, error) {
	n, d := m.Rows(), m.Cols()
	t := outputDType(cfg, m)
	c, sparse := m.(*matrix.CSR)
	if !sparse {
		data := make([]float64, n*k)
		row := make([]float64, d)
		for i := 0; i < n; i++ {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			m.RowFloat64(i, row)
			copy(data[i*k:(i+1)*k], row[:k])
		}
		return newDense(side, n, k, data, t)
	}
	if t == matrix.Float16 {
		return nil, configErr("dtype", "CompressionConfig.dtype float16 cannot store the sparse %s output of prefix_truncate; use float32 or float64", side)
	}
	indptr := make([]int64, n+1)
	var indices []int32
	var vals []float64
	var buf []float64
	for i := 0; i < n; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var idx []int32
		idx, buf = c.RowEntries(i, buf)
		for e, col := range idx {
			if int(col) >= k {
				break // indices are sorted
			}
			indices = append(indices, col)
			vals = append(vals, buf[e])
		}
		indptr[i+1] = int64(len(indices))
	}
	if t == matrix.Float64 {
		return matrix.NewCSR64(n, k, indptr, indices, vals)
	}
	v32 := make([]float32, len(vals))
	for e, v := range vals {
		f := float32(v)
		if math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("compress: %s value %v cannot be represented in float32", side, v)
		}
		v32[e] = f
	}
	return matrix.NewCSR32(n, k, indptr, indices, v32)
}

func applyQuantize(ctx context.Context, cfg Config, query, gallery matrix.Matrix) (*output, error) {
	precision := *cfg.Precision
	n := gallery.Rows()
	out := &output{extras: map[string]any{
		"precision":     precision,
		"encoded_dtype": precision,
		"scoring_dtype": "float32",
	}}
	var err error
	if precision == PrecisionFloat16 {
		out.extras["quantization_mode"] = "cast"
		if out.gallery, err = castFloat16(ctx, "gallery", gallery); err != nil {
			return nil, err
		}
		if out.query, err = castFloat16(ctx, "query", query); err != nil {
			return nil, err
		}
	} else {
		if query.Sparse() || gallery.Sparse() {
			return nil, fmt.Errorf("compress: quantize %s requires dense embeddings; use quantize:float16 for sparse embeddings", precision)
		}
		if n == 0 {
			return nil, fmt.Errorf("compress: cannot fit quantize %s from 0 fit-side samples", precision)
		}
		q, err := fitQuantizer(ctx, precision, gallery)
		if err != nil {
			return nil, err
		}
		if out.gallery, err = q.apply(ctx, "gallery", gallery); err != nil {
			return nil, err
		}
		if out.query, err = q.apply(ctx, "query", query); err != nil {
			return nil, err
		}
		out.extras["quantization_mode"] = "symmetric_absmax"
		if precision == PrecisionUint8 {
			out.extras["quantization_mode"] = "affine_minmax"
		}
	}
	// The codes plus the parameters that reproduce the decoding; the same
	// number as resident_bytes (see BaselineElementBytes).
	out.extras["estimated_encoded_bytes"] = encodedGalleryBytes(cfg, out.gallery)
	return out, nil
}
