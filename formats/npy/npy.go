package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/x448/float16"
)

// readFile reads path, reporting failures as a *formats.Error. The
// *fs.PathError is unwrapped so the path is not printed twice; errors.Is
// against fs.ErrNotExist still works through the errno.
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &formats.Error{Path: path, Msg: "cannot read file", Err: err}
	}
	return data, nil
}

func fileError(path string, err error) error {
	return &formats.Error{Path: path, Err: err}
}

// ReadMatrix reads a 2-D float16/float32/float64 .npy file (SPEC §6.4.1).
func ReadMatrix(path string) (*matrix.Dense, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeMatrix(path, data)
}

// DecodeMatrix decodes a 2-D float .npy file held in data into a C-order
// matrix of the same element type (float16 stays float16). Zero rows are
// allowed and values are not checked for finiteness: the dataset does both,
// with better context. path is used only in messages.
func DecodeMatrix(path string, data []byte) (*matrix.Dense, error) {
	h, off, err := ParseHeader(data)
	if err != nil {
		return nil, fileError(path, err)
	}
	if len(h.Shape) != 2 {
		return nil, formats.Errorf(path, "must be a 2D array; got shape %s", h.ShapeString())
	}
	f, err := decodeFloats(h, data[off:])
	if err != nil {
		return nil, fileError(path, err)
	}
	m, err := f.dense()
	if err != nil {
		return nil, &formats.Error{Path: path, Msg: "malformed npy file", Err: err}
	}
	return m, nil
}

// Floats is a float array decoded in C order and kept in its element type:
// exactly one of F16 (IEEE binary16 bits), F32 and F64 is set, per DType.
type Floats struct {
	Shape []int
	DType matrix.DType
	F16   []uint16
	F32   []float32
	F64   []float64
}

// Len is the number of elements.
func (f *Floats) Len() int {
	switch f.DType {
	case matrix.Float16:
		return len(f.F16)
	case matrix.Float32:
		return len(f.F32)
	}
	return len(f.F64)
}

func (f *Floats) dense() (*matrix.Dense, error) {
	rows, cols := f.Shape[0], f.Shape[1]
	switch f.DType {
	case matrix.Float16:
		return matrix.NewDense16(rows, cols, f.F16)
	case matrix.Float32:
		return matrix.NewDense32(rows, cols, f.F32)
	}
	return matrix.NewDense64(rows, cols, f.F64)
}

// DecodeFloats decodes a float .npy file of any shape without widening, for
// readers (such as sparse data arrays) that want the stored element type.
func DecodeFloats(path string, data []byte) (*Floats, error) {
	h, off, err := ParseHeader(data)
	if err != nil {
		return nil, fileError(path, err)
	}
	f, err := decodeFloats(h, data[off:])
	if err != nil {
		return nil, fileError(path, err)
	}
	return f, nil
}

func decodeFloats(h Header, body []byte) (*Floats, error) {
	et, n, err := checkData(h, body)
	if err != nil {
		return nil, err
	}
	if et.Kind != 'f' {
		return nil, fmt.Errorf("%w %q (want float16, float32 or float64)", ErrUnsupportedDType, h.Descr)
	}
	f := &Floats{Shape: h.Shape}
	bo := et.order()
	switch et.Size {
	case 2:
		f.DType = matrix.Float16
		f.F16 = decode(body, h, n, 2, bo.Uint16)
	case 4:
		f.DType = matrix.Float32
		f.F32 = decode(body, h, n, 4, func(b []byte) float32 { return math.Float32frombits(bo.Uint32(b)) })
	default:
		f.DType = matrix.Float64
		f.F64 = decode(body, h, n, 8, func(b []byte) float64 { return math.Float64frombits(bo.Uint64(b)) })
	}
	return f, nil
}

// checkData parses the descriptor and makes sure body holds every element
// the shape calls for, before any allocation.
func checkData(h Header, body []byte) (ElemType, int, error) {
	et, err := ParseDescr(h.Descr)
	if err != nil {
		return ElemType{}, 0, err
	}
	n, err := h.NumElements()
	if err != nil {
		return ElemType{}, 0, err
	}
	need, err := dataSize(n, et.Size, h.Shape)
	if err != nil {
		return ElemType{}, 0, err
	}
	if need > len(body) {
		return ElemType{}, 0, fmt.Errorf("%w: shape %s of %s needs %d data bytes, only %d present",
			ErrTruncated, h.ShapeString(), h.Descr, need, len(body))
	}
	if need < len(body) {
		return ElemType{}, 0, trailing(h, need, len(body))
	}
	return et, n, nil
}

// decode converts n elements of size bytes each into a C-order slice,
// transposing Fortran-order data on the fly so no second copy is needed.
func decode[T any](body []byte, h Header, n, size int, conv func([]byte) T) []T {
	out := make([]T, n)
	if n == 0 {
		return out // also avoids looping over a huge dimension next to a zero one
	}
	shape := h.Shape
	if !h.Fortran || len(shape) < 2 {
		for i := range out {
			out[i] = conv(body[i*size : i*size+size])
		}
		return out
	}
	if len(shape) == 2 {
		rows, cols := shape[0], shape[1]
		k := 0
		for j := 0; j < cols; j++ {
			for i := 0; i < rows; i++ {
				out[i*cols+j] = conv(body[k : k+size])
				k += size
			}
		}
		return out
	}
	// General N-D: walk the file in Fortran order (axis 0 fastest) while
	// tracking the matching C-order offset.
	strides := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		strides[d] = s
		s *= shape[d]
	}
	idx := make([]int, len(shape))
	off := 0
	for k := 0; k < n; k++ {
		out[off] = conv(body[k*size : k*size+size])
		for d := range shape {
			idx[d]++
			off += strides[d]
			if idx[d] < shape[d] {
				break
			}
			off -= strides[d] * shape[d]
			idx[d] = 0
		}
	}
	return out
}

// Array is a generic decoded array (relevance matrices, label vectors) in C
// order. Kind selects the populated slice:
//
//	'f' float16/32/64      → Floats
//	'i' signed integers    → Ints
//	'u' unsigned integers  → Ints (values above MaxInt64 are rejected)
//	'b' bool               → Ints (0 or 1)
//	'U' fixed-width UTF-32 → Strings (trailing NULs stripped)
type Array struct {
	Shape   []int
	Kind    byte
	Descr   string // the descriptor as stored, for messages
	Floats  []float64
	Ints    []int64
	Strings []string
}

// Len is the number of elements.
func (a *Array) Len() int {
	switch a.Kind {
	case 'f':
		return len(a.Floats)
	case 'U':
		return len(a.Strings)
	}
	return len(a.Ints)
}

// ReadArray reads a .npy file of a numeric, bool or Unicode dtype.
func ReadArray(path string) (*Array, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeArray(path, data)
}

// DecodeArray decodes a .npy file of a numeric, bool or Unicode dtype held
// in data; other dtypes fail with "unsupported dtype". path is used only in
// messages.
func DecodeArray(path string, data []byte) (*Array, error) {
	h, off, err := ParseHeader(data)
	if err != nil {
		return nil, fileError(path, err)
	}
	a, err := decodeArray(h, data[off:])
	if err != nil {
		return nil, fileError(path, err)
	}
	return a, nil
}

func decodeArray(h Header, body []byte) (*Array, error) {
	et, n, err := checkData(h, body)
	if err != nil {
		return nil, err
	}
	a := &Array{Shape: h.Shape, Kind: et.Kind, Descr: h.Descr}
	bo := et.order()
	switch et.Kind {
	case 'f':
		switch et.Size {
		case 2:
			a.Floats = decode(body, h, n, 2, func(b []byte) float64 {
				return float64(float16.Frombits(bo.Uint16(b)).Float32())
			})
		case 4:
			a.Floats = decode(body, h, n, 4, func(b []byte) float64 {
				return float64(math.Float32frombits(bo.Uint32(b)))
			})
		default:
			a.Floats = decode(body, h, n, 8, func(b []byte) float64 {
				return math.Float64frombits(bo.Uint64(b))
			})
		}
	case 'i':
		a.Ints = decode(body, h, n, et.Size, intConv(et.Size, bo, true))
	case 'u':
		if et.Size == 8 {
			var bad uint64
			a.Ints = decode(body, h, n, 8, func(b []byte) int64 {
				v := bo.Uint64(b)
				if v > math.MaxInt64 && bad == 0 {
					bad = v
				}
				return int64(v)
			})
			if bad != 0 {
				return nil, fmt.Errorf("%w: uint64 value %d exceeds the int64 range", ErrUnsupportedDType, bad)
			}
		} else {
			a.Ints = decode(body, h, n, et.Size, intConv(et.Size, bo, false))
		}
	case 'b':
		a.Ints = decode(body, h, n, 1, func(b []byte) int64 {
			if b[0] != 0 {
				return 1
			}
			return 0
		})
	case 'U':
		var bad uint32
		invalid := false
		a.Strings = decode(body, h, n, et.Size, func(b []byte) string {
			s, r, ok := utf32String(b, bo)
			if !ok && !invalid {
				bad, invalid = r, true
			}
			return s
		})
		if invalid {
			return nil, fmt.Errorf("%w: string element holds invalid code point U+%04X", ErrMalformed, bad)
		}
	default:
		return nil, fmt.Errorf("%w %q", ErrUnsupportedDType, h.Descr)
	}
	return a, nil
}

func intConv(size int, bo binary.ByteOrder, signed bool) func([]byte) int64 {
	switch {
	case size == 1 && signed:
		return func(b []byte) int64 { return int64(int8(b[0])) }
	case size == 1:
		return func(b []byte) int64 { return int64(b[0]) }
	case size == 2 && signed:
		return func(b []byte) int64 { return int64(int16(bo.Uint16(b))) }
	case size == 2:
		return func(b []byte) int64 { return int64(bo.Uint16(b)) }
	case size == 4 && signed:
		return func(b []byte) int64 { return int64(int32(bo.Uint32(b))) }
	case size == 4:
		return func(b []byte) int64 { return int64(bo.Uint32(b)) }
	}
	return func(b []byte) int64 { return int64(bo.Uint64(b)) }
}

// utf32String decodes one fixed-width UTF-32 element, dropping trailing
// NULs as numpy does. On an invalid code point it returns that code point
// and ok=false.
func utf32String(b []byte, bo binary.ByteOrder) (s string, bad uint32, ok bool) {
	end := len(b)
	for end >= 4 && bo.Uint32(b[end-4:end]) == 0 {
		end -= 4
	}
	var sb strings.Builder
	sb.Grow(end / 4)
	for i := 0; i < end; i += 4 {
		u := bo.Uint32(b[i : i+4])
		r := rune(u)
		if u > utf8.MaxRune || !utf8.ValidRune(r) {
			return "", u, false
		}
		sb.WriteRune(r)
	}
	return sb.String(), 0, true
}

// WriteDense writes m as numpy's np.save would: little-endian, C order,
// format 1.0 with the data 64-byte aligned.
func WriteDense(w io.Writer, m *matrix.Dense) error {
	h := Header{Descr: "<f" + fmt.Sprint(m.DType().Size()), Shape: []int{m.Rows(), m.Cols()}}
	if err := WriteHeader(w, h); err != nil {
		return err
	}
	switch m.DType() {
	case matrix.Float16:
		return writeElems(w, m.Float16Bits(), 2, binary.LittleEndian.PutUint16)
	case matrix.Float32:
		return writeElems(w, m.Float32Data(), 4, func(b []byte, v float32) {
			binary.LittleEndian.PutUint32(b, math.Float32bits(v))
		})
	case matrix.Float64:
		return writeElems(w, m.Float64Data(), 8, func(b []byte, v float64) {
			binary.LittleEndian.PutUint64(b, math.Float64bits(v))
		})
	}
	return fmt.Errorf("npy: cannot write matrix of dtype %v", m.DType())
}

// WriteFloat64 writes a C-order '<f8' array of the given shape.
func WriteFloat64(w io.Writer, shape []int, data []float64) error {
	if err := writeHeaderFor(w, "<f8", shape, len(data)); err != nil {
		return err
	}
	return writeElems(w, data, 8, func(b []byte, v float64) {
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	})
}

// WriteFloat32 writes a C-order '<f4' array of the given shape.
func WriteFloat32(w io.Writer, shape []int, data []float32) error {
	if err := writeHeaderFor(w, "<f4", shape, len(data)); err != nil {
		return err
	}
	return writeElems(w, data, 4, func(b []byte, v float32) {
		binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	})
}

// WriteInt64 writes a C-order '<i8' array of the given shape.
func WriteInt64(w io.Writer, shape []int, data []int64) error {
	if err := writeHeaderFor(w, "<i8", shape, len(data)); err != nil {
		return err
	}
	return writeElems(w, data, 8, func(b []byte, v int64) {
		binary.LittleEndian.PutUint64(b, uint64(v))
	})
}

// WriteInt32 writes a C-order '<i4' array of the given shape.
func WriteInt32(w io.Writer, shape []int, data []int32) error {
	if err := writeHeaderFor(w, "<i4", shape, len(data)); err != nil {
		return err
	}
	return writeElems(w, data, 4, func(b []byte, v int32) {
		binary.LittleEndian.PutUint32(b, uint32(v))
	})
}

// WriteStrings writes a 1-D '<U<n>' array, n being the longest string in
// code points (at least 1, as numpy uses for empty strings). Strings must be
// valid UTF-8 and must not end in NUL, which the format cannot represent.
func WriteStrings(w io.Writer, s []string) error {
	width := 1
	for i, v := range s {
		if !utf8.ValidString(v) {
			return fmt.Errorf("npy: string %d is not valid UTF-8", i)
		}
		if strings.HasSuffix(v, "\x00") {
			return fmt.Errorf("npy: string %d ends in NUL, which .npy cannot store", i)
		}
		width = max(width, utf8.RuneCountInString(v))
	}
	if width > math.MaxInt/4 {
		return errors.New("npy: strings too long")
	}
	h := Header{Descr: fmt.Sprintf("<U%d", width), Shape: []int{len(s)}}
	if err := WriteHeader(w, h); err != nil {
		return err
	}
	return writeElems(w, s, 4*width, func(b []byte, v string) {
		clear(b)
		i := 0
		for _, r := range v {
			binary.LittleEndian.PutUint32(b[i:], uint32(r))
			i += 4
		}
	})
}

func writeHeaderFor(w io.Writer, descr string, shape []int, n int) error {
	want, err := numElements(shape)
	if err != nil {
		return err
	}
	if want != n {
		return fmt.Errorf("npy: shape %s needs %d values, got %d", shapeRepr(shape), want, n)
	}
	return WriteHeader(w, Header{Descr: descr, Shape: shape})
}

// writeElems encodes data in chunks so large arrays need no second copy.
func writeElems[T any](w io.Writer, data []T, size int, put func([]byte, T)) error {
	const chunk = 1 << 16
	per := max(1, chunk/size)
	buf := make([]byte, min(len(data), per)*size)
	for len(data) > 0 {
		k := min(len(data), per)
		b := buf[:k*size]
		for i, v := range data[:k] {
			put(b[i*size:(i+1)*size], v)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		data = data[k:]
	}
	return nil
}

func trailing(h Header, need, have int) error {
	return fmt.Errorf("%w: shape %s of %s needs %d data bytes, the file holds %d (%d more)",
		ErrTrailing, h.ShapeString(), h.Descr, need, have, have-need)
}
