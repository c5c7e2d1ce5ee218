package onnx

import (
	"fmt"
	"math"
)

// pool reduces a [rows, seq, hidden] output to [rows, hidden]. Mean pooling
// averages the positions whose mask is non-zero (all positions when mask is
// nil), accumulating in float64 in position order.
func pool(data []float32, rows, seq, hidden int, mode string, mask []int64) ([]float32, error) {
	out := make([]float32, rows*hidden)
	acc := make([]float64, hidden)
	for r := 0; r < rows; r++ {
		base := data[r*seq*hidden : (r+1)*seq*hidden]
		dst := out[r*hidden : (r+1)*hidden]
		switch mode {
		case PoolCLS:
			copy(dst, base[:hidden])
		case PoolMean:
			clear(acc)
			n := 0
			for s := 0; s < seq; s++ {
				if mask != nil && mask[r*seq+s] == 0 {
					continue
				}
				n++
				for h, v := range base[s*hidden : (s+1)*hidden] {
					acc[h] += float64(v)
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("row %d has no unmasked positions to mean-pool", r)
			}
			for h := range dst {
				dst[h] = float32(acc[h] / float64(n))
			}
		default:
			return nil, fmt.Errorf("pooling %q is not cls or mean", mode)
		}
	}
	return out, nil
}

// normalizeRows scales each row to unit L2 norm (norm computed in float64);
// an all-zero row stays zero.
func normalizeRows(data []float32, cols int) {
	for r := 0; r+cols <= len(data); r += cols {
		row := data[r : r+cols]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		if ss == 0 {
			continue
		}
		inv := 1 / math.Sqrt(ss)
		for i, v := range row {
			row[i] = float32(float64(v) * inv)
		}
	}
}
