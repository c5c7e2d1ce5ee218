package matrix

import (
	"encoding/binary"
	"io"
	"math"
	"unsafe"
)

// hostLittleEndian is true on every platform Go supports but a few
// big-endian ones (s390x, ppc64, mips).
var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// writeLE writes the elements of v as little-endian bytes: on little-endian
// hosts the memory itself, in one call; elsewhere element by element.
func writeLE[T uint16 | int32 | int64 | float32 | float64](w io.Writer, v []T) error {
	if len(v) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(v[0]))
	if hostLittleEndian {
		_, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*size))
		return err
	}
	buf := make([]byte, 0, 64<<10)
	for _, x := range v {
		switch t := any(x).(type) {
		case uint16:
			buf = binary.LittleEndian.AppendUint16(buf, t)
		case int32:
			buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
		case int64:
			buf = binary.LittleEndian.AppendUint64(buf, uint64(t))
		case float32:
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(t))
		case float64:
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(t))
		}
		if len(buf) >= 64<<10-8 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

// WriteLE writes the matrix's elements, row-major, as little-endian bytes of
// its element type (the layout of .npy files and of content digests).
func (m *Dense) WriteLE(w io.Writer) error {
	switch m.dtype {
	case Float16:
		return writeLE(w, m.f16)
	case Float32:
		return writeLE(w, m.f32)
	}
	return writeLE(w, m.f64)
}

// WriteDataLE writes the stored values as little-endian bytes.
func (m *CSR) WriteDataLE(w io.Writer) error {
	if m.dtype == Float32 {
		return writeLE(w, m.f32)
	}
	return writeLE(w, m.f64)
}

// WriteIndicesLE writes the column indices as little-endian int32.
func (m *CSR) WriteIndicesLE(w io.Writer) error { return writeLE(w, m.indices) }

// WriteIndptrLE writes the row pointers as little-endian int64.
func (m *CSR) WriteIndptrLE(w io.Writer) error { return writeLE(w, m.indptr) }
