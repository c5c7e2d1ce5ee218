package npy

import (
	"unsafe"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// MapMatrix opens a 2-D float .npy file without copying it when it can: a
// little-endian, C-order float16/float32/float64 file is memory-mapped
// read-only and the matrix views the mapping, so resident memory is only
// what the scorer touches. Other layouts (big-endian, Fortran order) are
// decoded into memory as ReadMatrix does. close releases the mapping; the
// matrix must not be used after it. A mapped matrix keeps the file open
// and reads strided rows from it in blocks (matrix.ReadStridedRows, see
// Dense.SetFileRows) rather than through the mapping.
func MapMatrix(path string) (m *matrix.Dense, close func() error, err error) {
	data, f, unmap, err := mapFileKeep(path, true)
	if err != nil {
		return nil, nil, err
	}
	m, mapped, err := viewMatrix(path, data)
	if err == nil && mapped && f != nil && len(data) > 0 {
		// The elements are the mapping's last bytes (viewMatrix refuses
		// trailing data), so they start at the file's size minus theirs.
		m.SetFileRows(f, int64(len(data)-m.Rows()*m.Cols()*m.DType().Size()))
	}
	if err != nil || !mapped {
		if uerr := unmap(); err == nil && uerr != nil {
			err = &formats.Error{Path: path, Msg: "cannot unmap file", Err: uerr}
		}
		if err != nil {
			return nil, nil, err
		}
		return m, func() error { return nil }, nil
	}
	return m, unmap, nil
}

// viewMatrix returns a matrix aliasing data when the layout allows it
// (mapped=true), else a decoded copy.
func viewMatrix(path string, data []byte) (*matrix.Dense, bool, error) {
	h, off, err := ParseHeader(data)
	if err != nil {
		return nil, false, fileError(path, err)
	}
	if len(h.Shape) != 2 {
		return nil, false, formats.Errorf(path, "must be a 2D array; got shape %s", h.ShapeString())
	}
	et, err := h.ElemType()
	if err != nil || et.Kind != 'f' || et.BigEndian || h.Fortran || !hostLittleEndian() {
		m, err := DecodeMatrix(path, data)
		return m, false, err
	}
	size, err := h.DataSize()
	if err != nil {
		return nil, false, fileError(path, err)
	}
	body := data[off:]
	if len(body) < size {
		m, err := DecodeMatrix(path, data) // reports "truncated"
		return m, false, err
	}
	if len(body) > size {
		return nil, false, fileError(path, trailing(h, size, len(body)))
	}
	rows, cols := h.Shape[0], h.Shape[1]
	n := rows * cols
	if n == 0 || uintptr(unsafe.Pointer(&body[0]))%uintptr(et.Size) != 0 {
		m, err := DecodeMatrix(path, data)
		return m, false, err
	}
	var m *matrix.Dense
	switch et.Size {
	case 2:
		m, err = matrix.NewDense16(rows, cols, unsafe.Slice((*uint16)(unsafe.Pointer(&body[0])), n))
	case 4:
		m, err = matrix.NewDense32(rows, cols, unsafe.Slice((*float32)(unsafe.Pointer(&body[0])), n))
	case 8:
		m, err = matrix.NewDense64(rows, cols, unsafe.Slice((*float64)(unsafe.Pointer(&body[0])), n))
	default:
		m, err := DecodeMatrix(path, data)
		return m, false, err
	}
	if err != nil {
		return nil, false, &formats.Error{Path: path, Msg: "malformed npy file", Err: err}
	}
	return m.ReadOnly(), true, nil
}

func hostLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
