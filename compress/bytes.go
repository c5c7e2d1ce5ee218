package compress

import "github.com/vertebrae-eval/vertebrae/matrix"

// BaselineElementBytes is the element width of the uncompressed reference
// gallery (float32), whatever the element type of the source.
//
// Gallery bytes: the one definition of size used by compression_metadata
// (resident_bytes, compression_ratio, estimated_encoded_bytes), by the
// report's compression table ("gallery bytes", "ratio") and by the
// compression frontier's x axis.
//
// The bytes of a gallery are the bytes of its values as the compression
// method stores them, computed from the gallery's shape and the compression
// configuration only, never from the element type of the source file:
//
//   - uncompressed (method none, disabled, or the n_components ≥ width
//     no-op): float32, rows × dim × 4 (the baseline of every ratio);
//   - pca, truncated_svd, gaussian/sparse random projection, prefix_truncate:
//     rows × k × w, where w is the width of the configured dtype (float16 2,
//     float32 4, float64 8) and 4 (float32) when no dtype is configured;
//   - quantize float16: rows × dim × 2;
//   - quantize int8: rows × dim × 1 codes + dim float64 scales (8 × dim);
//   - quantize uint8: rows × dim × 1 codes + dim float64 minimums and
//     ranges (16 × dim);
//   - a CSR gallery (sparse input, sparse prefix_truncate or float16 output)
//     stores w bytes per value, a 4-byte column index per value and an
//     8-byte row pointer per row plus one: w·nnz + 4·nnz + 8·(rows + 1),
//     with w = 4 for the uncompressed baseline.
//
// compression_ratio = baseline bytes / gallery bytes. So a float64 (or
// float16) source gives exactly the bytes and ratio of a float32 source with
// the same shape: quantize int8 of n × d values is always
// 4·n·d / (n·d + 8·d), never twice that.
const BaselineElementBytes = 4

// elementBytes is the stored element width of a floating-point method's
// output: the configured dtype, else the float32 baseline.
func elementBytes(dtype *string) int {
	if dtype == nil {
		return BaselineElementBytes
	}
	switch *dtype {
	case "float16":
		return 2
	case "float64":
		return 8
	}
	return 4
}

// storedBytes is the size of m with elem bytes per stored value: dense
// rows × cols × elem; CSR values, 4-byte column indices and 8-byte row
// pointers.
func storedBytes(m matrix.Matrix, elem int) int {
	if c, ok := m.(*matrix.CSR); ok {
		nnz := c.NNZ()
		return elem*nnz + 4*nnz + 8*(c.Rows()+1)
	}
	return m.Rows() * m.Cols() * elem
}

// baselineBytes is the size of the uncompressed gallery g stored as float32.
func baselineBytes(g matrix.Matrix) int {
	return storedBytes(g, BaselineElementBytes)
}

// encodedGalleryBytes is the size of the compressed gallery out as stored by
// the method of cfg (see the definition above).
func encodedGalleryBytes(cfg Config, out matrix.Matrix) int {
	if cfg.Method == MethodQuantize && cfg.Precision != nil {
		n, d := out.Rows(), out.Cols()
		switch *cfg.Precision {
		case PrecisionFloat16:
			return storedBytes(out, 2)
		case PrecisionInt8:
			return n*d + 8*d // codes + one float64 scale per dimension
		case PrecisionUint8:
			return n*d + 16*d // codes + float64 minimum and range per dimension
		}
	}
	return storedBytes(out, elementBytes(cfg.DType))
}

// GalleryBytes returns the gallery bytes of a result from its
// compression_metadata and gallery row count, as the report table and the
// compression frontier show them: resident_bytes when compression was
// applied; otherwise the float32 baseline nGallery × compressed_dim × 4 of a
// dense gallery. ok is false when the metadata holds no byte count (an
// uncompressed sparse gallery, or metadata without the fields). Numbers may
// be ints (fresh metadata) or float64 (metadata read back from JSON).
func GalleryBytes(md map[string]any, nGallery int) (bytes int, ok bool) {
	if applied, _ := md["applied"].(bool); applied {
		v, ok := wholeNumber(md["resident_bytes"])
		return v, ok && v > 0
	}
	if sparse, _ := md["output_sparse"].(bool); sparse {
		return 0, false
	}
	dim, ok := wholeNumber(md["compressed_dim"])
	if !ok {
		return 0, false
	}
	v := nGallery * dim * BaselineElementBytes
	return v, v > 0
}

// Ratio returns the compression ratio shown next to GalleryBytes:
// compression_ratio when compression was applied, 1 for an uncompressed
// gallery with a byte count, ok false otherwise.
func Ratio(md map[string]any, nGallery int) (ratio float64, ok bool) {
	if applied, _ := md["applied"].(bool); applied {
		r, ok := md["compression_ratio"].(float64)
		return r, ok && r > 0
	}
	if _, ok := GalleryBytes(md, nGallery); ok {
		return 1, true
	}
	return 0, false
}

// wholeNumber reads a JSON-compatible non-negative integer.
func wholeNumber(v any) (int, bool) {
	switch t := v.(type) {
	case int:
		return t, t >= 0
	case int64:
		return int(t), t >= 0
	case float64:
		if t >= 0 && t == float64(int64(t)) && t < 1<<62 {
			return int(t), true
		}
	}
	return 0, false
}
