package matrix

import (
	"context"
	"fmt"
	"io"
	"unsafe"
)

// fileRowsKey is the Memo key of a read-only matrix's backing file.
type fileRowsKey struct{}

// fileRows is where a read-only matrix's elements are stored: r holds them
// row-major, little-endian, from byte offset off.
type fileRows struct {
	r   io.ReaderAt
	off int64
}

// SetFileRows records that m's read-only storage is a mapping of r whose
// elements (row-major, little-endian, m's element type) start at byte off:
// ReadStridedRows then reads a strided selection of m's rows from r in
// blocks instead of through the mapping. Page faults on a mapping cost more
// than a copy, and a modulo shard of narrow rows touches every page of the
// file. The caller must keep r open, and its bytes equal to the mapping's,
// as long as m is used. It does nothing unless m's storage is read-only
// (a mapping) and the host little-endian (elsewhere the file's bytes are
// not the memory's). It returns m.
func (m *Dense) SetFileRows(r io.ReaderAt, off int64) *Dense {
	if r != nil && off >= 0 && m.readOnly && hostLittleEndian {
		m.Memo(fileRowsKey{}, func() any { return fileRows{r: r, off: off} })
	}
	return m
}

// fileRowsOf returns m's backing file, if SetFileRows recorded one.
func (m *Dense) fileRowsOf() (fileRows, bool) {
	if m.memo == nil {
		return fileRows{}, false
	}
	v, ok := m.memo.Load(fileRowsKey{})
	if !ok {
		return fileRows{}, false
	}
	f, ok := v.(fileRows)
	return f, ok
}

// HasFileRows reports whether m's rows can be read from its backing file
// (see SetFileRows).
func (m *Dense) HasFileRows() bool {
	_, ok := m.fileRowsOf()
	return ok
}

// stridedReadSpan is about how many bytes ReadStridedRows reads per call
// (a variable for tests): small enough for the buffer to stay in a core's
// cache between the read and the copy of its rows (measured: 256 KiB
// spans cost less than 4 MiB ones; the syscalls are few either way).
var stridedReadSpan = 256 << 10

// ReadStridedRows is StridedRows that, for a dense matrix with a backing
// file (SetFileRows), reads the rows from the file in blocks of about 256 KiB
// (or row by row when the stride spans more than that) instead of through
// the mapping. The values are the same bytes either way, so the result is
// bit-identical to StridedRows'. Other matrices go to StridedRows.
func ReadStridedRows(m Matrix, start, stride, n int) (Matrix, error) {
	d, ok := m.(*Dense)
	if !ok {
		return StridedRows(m, start, stride, n)
	}
	f, ok := d.fileRowsOf()
	if !ok || n == 0 || d.cols == 0 {
		return StridedRows(m, start, stride, n)
	}
	if n < 0 || stride < 1 || start < 0 || start+(n-1)*stride >= m.Rows() {
		return StridedRows(m, start, stride, n) // its error
	}
	out := newDenseOf(d.dtype, n, d.cols)
	if _, err := readStrided(f, out.bytes(), nil, d.dtype.Size()*d.cols, start, stride, n); err != nil {
		return nil, err
	}
	return out, nil
}

// newDenseOf allocates a rows×cols matrix of dtype.
func newDenseOf(dtype DType, rows, cols int) *Dense {
	m := &Dense{rows: rows, cols: cols, dtype: dtype}
	switch dtype {
	case Float16:
		m.f16 = make([]uint16, rows*cols)
	case Float32:
		m.f32 = make([]float32, rows*cols)
	default:
		m.dtype = Float64
		m.f64 = make([]float64, rows*cols)
	}
	return m
}

// bytes is the memory of m's elements (host byte order).
func (m *Dense) bytes() []byte {
	switch m.dtype {
	case Float16:
		return asBytes(m.f16)
	case Float32:
		return asBytes(m.f32)
	}
	return asBytes(m.f64)
}

// firstRows is a view of m's first n rows sharing storage (no finiteness
// or memo carried over).
func (m *Dense) firstRows(n int) *Dense {
	c := &Dense{rows: n, cols: m.cols, dtype: m.dtype}
	switch m.dtype {
	case Float16:
		c.f16 = m.f16[: n*m.cols : n*m.cols]
	case Float32:
		c.f32 = m.f32[: n*m.cols : n*m.cols]
	default:
		c.f64 = m.f64[: n*m.cols : n*m.cols]
	}
	return c
}

// StridedFile is rows start, start+stride, …, start+(n-1)·stride of a
// dense matrix with a backing file (SetFileRows), not read until asked
// for: Batches reads them from the file in blocks into one reused buffer,
// so a modulo shard of a large mapped table is written out without ever
// being held (or its pages faulted in) whole. Its rows are bit-identical
// to StridedRows'.
type StridedFile struct {
	m                  *Dense
	f                  fileRows
	start, stride, num int
}

// NewStridedFile returns the lazy strided rows of m when m is dense with a
// backing file and the rows lie inside it (n ≥ 1); ok is false otherwise.
func NewStridedFile(m Matrix, start, stride, n int) (s *StridedFile, ok bool) {
	d, isDense := m.(*Dense)
	if !isDense || d.cols < 1 || n < 1 || stride < 1 || start < 0 || start+(n-1)*stride >= m.Rows() {
		return nil, false
	}
	f, ok := d.fileRowsOf()
	if !ok {
		return nil, false
	}
	return &StridedFile{m: d, f: f, start: start, stride: stride, num: n}, true
}

// Rows implements Matrix.
func (s *StridedFile) Rows() int { return s.num }

// Cols implements Matrix.
func (s *StridedFile) Cols() int { return s.m.cols }

// DType implements Matrix.
func (s *StridedFile) DType() DType { return s.m.dtype }

// Sparse implements Matrix.
func (s *StridedFile) Sparse() bool { return false }

// RowFloat64 implements Matrix (row i, read through the mapping).
func (s *StridedFile) RowFloat64(i int, dst []float64) {
	s.m.RowFloat64(s.start+i*s.stride, dst)
}

// Dense reads every row into a new matrix (ReadStridedRows).
func (s *StridedFile) Dense() (*Dense, error) {
	m, err := ReadStridedRows(s.m, s.start, s.stride, s.num)
	if err != nil {
		return nil, err
	}
	return m.(*Dense), nil
}

// Batches calls yield with consecutive batches of at most per rows, in
// order, each read from the file into the same buffer: a batch is valid
// only until yield returns. It returns ctx's error once ctx is done
// (checked before each batch) and yield's first error.
func (s *StridedFile) Batches(ctx context.Context, per int, yield func(*Dense) error) error {
	per = max(1, min(per, s.num))
	out := newDenseOf(s.m.dtype, per, s.m.cols)
	rb := s.m.dtype.Size() * s.m.cols
	var buf []byte
	for i0 := 0; i0 < s.num; i0 += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := min(per, s.num-i0)
		b := out.firstRows(c)
		var err error
		if buf, err = readStrided(s.f, b.bytes(), buf, rb, s.start+i0*s.stride, s.stride, c); err != nil {
			return err
		}
		if err := yield(b); err != nil {
			return err
		}
	}
	return nil
}

func asBytes[T uint16 | float32 | float64](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

// readStrided fills out with rows start, start+stride, … (rb bytes each)
// of f: each read covers k of them (the rows in between are read and
// dropped), k chosen so one read is about stridedReadSpan bytes. buf, if
// large enough, is the read buffer; the one used is returned for reuse.
func readStrided(f fileRows, out, buf []byte, rb, start, stride, n int) ([]byte, error) {
	step := rb * stride
	k := max(1, stridedReadSpan/step) // rows per read
	if need := ((min(k, n)-1)*stride + 1) * rb; k > 1 && n > 1 && len(buf) < need {
		buf = make([]byte, need)
	}
	for i0 := 0; i0 < n; i0 += k {
		c := min(k, n-i0)
		at := f.off + int64(start+i0*stride)*int64(rb)
		if c == 1 {
			if err := readFull(f.r, out[i0*rb:(i0+1)*rb], at); err != nil {
				return buf, err
			}
			continue
		}
		b := buf[:((c-1)*stride+1)*rb]
		if err := readFull(f.r, b, at); err != nil {
			return buf, err
		}
		for i := range c {
			copy(out[(i0+i)*rb:(i0+i+1)*rb], b[i*step:i*step+rb])
		}
	}
	return buf, nil
}

func readFull(r io.ReaderAt, b []byte, at int64) error {
	n, err := r.ReadAt(b, at)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF // the file was truncated after it was mapped
	}
	name := "the mapped file"
	if f, ok := r.(interface{ Name() string }); ok {
		name = f.Name()
	}
	return fmt.Errorf("%s: reading rows at byte %d: %w", name, at, err)
}
