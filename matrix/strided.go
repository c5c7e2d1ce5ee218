package matrix

import "fmt"

// StridedRows copies rows start, start+stride, …, start+(n-1)·stride of a
// Dense or CSR matrix into a new matrix of the same kind and element type.
// Values are copied without conversion, so each row equals, bit for bit,
// the corresponding RowSlice (a modulo shard gathers its rows this way).
func StridedRows(m Matrix, start, stride, n int) (Matrix, error) {
	if n < 0 || stride < 1 || start < 0 || (n > 0 && start+(n-1)*stride >= m.Rows()) {
		return nil, fmt.Errorf("rows %d to %d every %d are outside a %d-row matrix", start, start+(n-1)*stride, stride, m.Rows())
	}
	cols := m.Cols()
	switch t := m.(type) {
	case *Dense:
		switch t.dtype {
		case Float16:
			return NewDense16(n, cols, stridedDense(t.f16, cols, start, stride, n))
		case Float32:
			return NewDense32(n, cols, stridedDense(t.f32, cols, start, stride, n))
		}
		return NewDense64(n, cols, stridedDense(t.f64, cols, start, stride, n))
	case *CSR:
		indptr := make([]int64, 1, n+1)
		var nnz int64
		for i := range n {
			r := start + i*stride
			nnz += t.indptr[r+1] - t.indptr[r]
		}
		indices := make([]int32, 0, nnz)
		f32, f64 := []float32{}, []float64{}
		if t.dtype == Float32 {
			f32 = make([]float32, 0, nnz)
		} else {
			f64 = make([]float64, 0, nnz)
		}
		for i := range n {
			r := start + i*stride
			lo, hi := t.indptr[r], t.indptr[r+1]
			indices = append(indices, t.indices[lo:hi]...)
			if t.dtype == Float32 {
				f32 = append(f32, t.f32[lo:hi]...)
			} else {
				f64 = append(f64, t.f64[lo:hi]...)
			}
			indptr = append(indptr, int64(len(indices)))
		}
		if t.dtype == Float32 {
			return NewCSR32(n, cols, indptr, indices, f32)
		}
		return NewCSR64(n, cols, indptr, indices, f64)
	}
	return nil, fmt.Errorf("cannot gather rows of a %T", m)
}

func stridedDense[T uint16 | float32 | float64](data []T, cols, start, stride, n int) []T {
	out := make([]T, 0, n*cols)
	for i := range n {
		r := start + i*stride
		out = append(out, data[r*cols:(r+1)*cols]...)
	}
	return out
}
