package compress

import (
	"context"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
)

// checkMemory checks a fit's allocations against the budget in ctx before
// any is made (SPEC §6.1): they follow from the declared width, which for a
// CSR input can dwarf its data (a width of 3·10⁹ would ask for a dense
// projection of k × 3·10⁹ values), and from the outputs' n × k values.
func checkMemory(ctx context.Context, cfg Config, query, gallery matrix.Matrix) error {
	n, nq, d := int64(gallery.Rows()), int64(query.Rows()), int64(gallery.Cols())
	k := d
	if cfg.NComponents != nil {
		k = int64(*cfg.NComponents)
	}
	var fit int64
	switch cfg.Method {
	case MethodPCA:
		// The gallery densified and centred, then either the covariance
		// (d × d, with its eigenvectors) or the thin SVD's V (min(n,d) × d).
		fit = memory.Sum(memory.Bytes(n, d, 8), memory.Bytes(2, d, d, 8), memory.Bytes(min(n, d), d, 8))
		if !useCovariance(int(min(n, 1<<40)), int(min(d, 1<<40))) {
			fit = memory.Sum(memory.Bytes(n, d, 8), memory.Bytes(2, min(n, d), d, 8))
		}
	case MethodTruncatedSVD:
		l := min(k+oversampling, n, d)
		fit = memory.Sum(memory.Bytes(4, memory.Sum(n, d), l, 8), memory.Bytes(2, l, d, 8))
		if !gallery.Sparse() {
			fit = memory.Sum(fit, memory.Bytes(n, d, 8))
		}
	case MethodGaussianRandomProjection:
		fit = memory.Bytes(2, k, d, 8) // the matrix and its transpose
	case MethodSparseRandomProjection:
		fit = memory.Bytes(d, 48) // per-column entry lists (two slice headers each)
	case MethodPrefixTruncate, MethodQuantize:
		return memory.Check(ctx, "Compression "+cfg.Method+" (outputs)", outputBytes(cfg, query, gallery, k))
	default:
		return nil
	}
	out := memory.Bytes(memory.Sum(n, nq), k, 8)
	return memory.Check(ctx, "Compression "+cfg.Method+" (fit and outputs)", memory.Sum(fit, out))
}

// outputBytes is what prefix truncation and quantisation hold: their outputs
// (float32 codes for quantisation; float64 rows plus their final element
// type for a dense prefix) or, for CSR inputs, at most the input's entries
// with their indices.
func outputBytes(cfg Config, query, gallery matrix.Matrix, k int64) int64 {
	var total int64
	for _, m := range []matrix.Matrix{query, gallery} {
		rows := int64(m.Rows())
		if c, ok := m.(*matrix.CSR); ok {
			total = memory.Sum(total, memory.Bytes(int64(c.NNZ()), 16), memory.Bytes(rows+1, 8))
			continue
		}
		if cfg.Method == MethodQuantize {
			total = memory.Sum(total, memory.Bytes(rows, int64(m.Cols()), 4))
			continue
		}
		total = memory.Sum(total, memory.Bytes(rows, k, int64(8+outputDType(cfg, m).Size())))
	}
	return total
}
