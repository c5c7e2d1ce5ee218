package capi

import (
	"fmt"
	"unsafe"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// DType is the element type of a caller's array.
type DType int32

const (
	Float32 DType = 1
	Float64 DType = 2
	Float16 DType = 3 // IEEE 754 binary16 bits
)

func (t DType) size() int64 {
	switch t {
	case Float32:
		return 4
	case Float64:
		return 8
	case Float16:
		return 2
	}
	return 0
}

// Array is a caller-owned row-major matrix: Rows × Cols elements of DType,
// row i starting RowStride bytes after row i−1. The memory must stay valid
// and unchanged for the whole call.
type Array struct {
	Data      unsafe.Pointer
	Rows      int64
	Cols      int64
	RowStride int64 // bytes; 0 means Cols × element size
	DType     DType
}

// Matrix views a as a read-only dense matrix without copying when its
// rows are contiguous (RowStride = Cols × element size); padded rows are
// gathered once into Go memory. name ("queries", "gallery") names the
// argument in errors.
func (a Array) Matrix(name string) (*matrix.Dense, error) {
	size := a.DType.size()
	switch {
	case size == 0:
		return nil, usagef("%s: unsupported element type code %d (1 = float32, 2 = float64, 3 = float16)", name, a.DType)
	case a.Rows < 0 || a.Cols < 0:
		return nil, usagef("%s: negative shape (%d, %d)", name, a.Rows, a.Cols)
	case a.Rows > 0 && a.Cols > 0 && a.Data == nil:
		return nil, usagef("%s: null data pointer for shape (%d, %d)", name, a.Rows, a.Cols)
	}
	row := a.Cols * size
	stride := a.RowStride
	if stride == 0 {
		stride = row
	}
	if stride < row {
		return nil, usagef("%s: row stride %d bytes is shorter than a row (%d × %d bytes); pass a C-contiguous array", name, stride, a.Cols, size)
	}
	if a.Rows > 0 && a.Cols > 0 && a.Rows > (1<<62)/stride {
		return nil, usagef("%s: shape (%d, %d) is too large", name, a.Rows, a.Cols)
	}
	rows, cols := int(a.Rows), int(a.Cols)
	n := rows * cols
	var m *matrix.Dense
	var err error
	switch {
	case n == 0:
		m, err = empty(a.DType, rows, cols)
	case stride == row:
		m, err = view(a.DType, a.Data, rows, cols, n)
	default:
		m, err = gather(a.DType, a.Data, rows, cols, stride)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Read-only: the evaluation shares the caller's memory instead of
	// cloning it, and remembers its finiteness scan and norms.
	return m.ReadOnly(), nil
}

func empty(t DType, rows, cols int) (*matrix.Dense, error) {
	switch t {
	case Float32:
		return matrix.NewDense32(rows, cols, nil)
	case Float16:
		return matrix.NewDense16(rows, cols, nil)
	}
	return matrix.NewDense64(rows, cols, nil)
}

// view wraps contiguous caller memory: no copy.
func view(t DType, p unsafe.Pointer, rows, cols, n int) (*matrix.Dense, error) {
	switch t {
	case Float32:
		return matrix.NewDense32(rows, cols, unsafe.Slice((*float32)(p), n))
	case Float16:
		return matrix.NewDense16(rows, cols, unsafe.Slice((*uint16)(p), n))
	}
	return matrix.NewDense64(rows, cols, unsafe.Slice((*float64)(p), n))
}

// gather copies padded rows into one contiguous Go slice.
func gather(t DType, p unsafe.Pointer, rows, cols int, stride int64) (*matrix.Dense, error) {
	rowAt := func(i int) unsafe.Pointer { return unsafe.Add(p, int64(i)*stride) }
	switch t {
	case Float32:
		out := make([]float32, rows*cols)
		for i := range rows {
			copy(out[i*cols:(i+1)*cols], unsafe.Slice((*float32)(rowAt(i)), cols))
		}
		return matrix.NewDense32(rows, cols, out)
	case Float16:
		out := make([]uint16, rows*cols)
		for i := range rows {
			copy(out[i*cols:(i+1)*cols], unsafe.Slice((*uint16)(rowAt(i)), cols))
		}
		return matrix.NewDense16(rows, cols, out)
	}
	out := make([]float64, rows*cols)
	for i := range rows {
		copy(out[i*cols:(i+1)*cols], unsafe.Slice((*float64)(rowAt(i)), cols))
	}
	return matrix.NewDense64(rows, cols, out)
}
