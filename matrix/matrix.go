package matrix

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/x448/float16"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
)

// DType is the element type of a matrix.
type DType int

// Element types. BFloat16 input is widened to Float32 by the readers (SPEC §2.1.1).
const (
	Float16 DType = iota + 1
	Float32
	Float64
)

// String returns the numpy-style name ("float16", "float32", "float64").
func (t DType) String() string {
	switch t {
	case Float16:
		return "float16"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("dtype(%d)", int(t))
}

// Size is the element size in bytes.
func (t DType) Size() int {
	switch t {
	case Float16:
		return 2
	case Float32:
		return 4
	case Float64:
		return 8
	}
	return 0
}

// ParseDType parses a dtype name as written by String.
func ParseDType(s string) (DType, error) {
	switch s {
	case "float16":
		return Float16, nil
	case "float32":
		return Float32, nil
	case "float64":
		return Float64, nil
	}
	return 0, fmt.Errorf("unsupported dtype %q", s)
}

// Matrix is a read-only 2-D embedding matrix. Implementations are safe for
// concurrent readers.
type Matrix interface {
	Rows() int
	Cols() int
	DType() DType
	// Sparse reports whether the matrix is stored in CSR form.
	Sparse() bool
	// RowFloat64 writes row i, widened to float64, into dst[:Cols()].
	RowFloat64(i int, dst []float64)
}

// ErrShape reports an inconsistent shape or storage length.
var ErrShape = errors.New("matrix: inconsistent shape")

// Dense is a row-major dense matrix. Exactly one of the storage slices is
// used, selected by the dtype.
type Dense struct {
	rows, cols int
	dtype      DType
	f16        []uint16 // IEEE binary16 bit patterns
	f32        []float32
	f64        []float64
	readOnly   bool // storage cannot be modified by anyone (mapped file)
	// finite, set only on read-only storage, records that a full scan found
	// no NaN or ±Inf. The check of SPEC §4.9 runs at load, at dataset
	// construction and before scoring; values that cannot change need one
	// scan of a large mapped file, not three.
	finite *atomic.Bool
	memo   *sync.Map // read-only storage only: see Memo
}

// NewDense64 wraps data (rows*cols values, row-major) without copying.
func NewDense64(rows, cols int, data []float64) (*Dense, error) {
	if err := checkShape(rows, cols, len(data)); err != nil {
		return nil, err
	}
	return &Dense{rows: rows, cols: cols, dtype: Float64, f64: data}, nil
}

// NewDense32 wraps data (rows*cols values, row-major) without copying.
func NewDense32(rows, cols int, data []float32) (*Dense, error) {
	if err := checkShape(rows, cols, len(data)); err != nil {
		return nil, err
	}
	return &Dense{rows: rows, cols: cols, dtype: Float32, f32: data}, nil
}

// NewDense16 wraps IEEE binary16 bit patterns without copying.
func NewDense16(rows, cols int, bits []uint16) (*Dense, error) {
	if err := checkShape(rows, cols, len(bits)); err != nil {
		return nil, err
	}
	return &Dense{rows: rows, cols: cols, dtype: Float16, f16: bits}, nil
}

// FromRows builds a float64 matrix from a slice of equal-length rows (copied).
func FromRows(rows [][]float64) (*Dense, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: no rows", ErrShape)
	}
	cols := len(rows[0])
	data := make([]float64, 0, len(rows)*cols)
	for i, r := range rows {
		if len(r) != cols {
			return nil, fmt.Errorf("%w: row %d has %d values, row 0 has %d", ErrShape, i, len(r), cols)
		}
		data = append(data, r...)
	}
	return NewDense64(len(rows), cols, data)
}

func checkShape(rows, cols, n int) error {
	if rows < 0 || cols < 0 {
		return fmt.Errorf("%w: negative shape (%d, %d)", ErrShape, rows, cols)
	}
	if rows*cols != n || (cols != 0 && n/cols != rows) {
		return fmt.Errorf("%w: shape (%d, %d) needs %d values, got %d", ErrShape, rows, cols, rows*cols, n)
	}
	return nil
}

func (m *Dense) Rows() int    { return m.rows }
func (m *Dense) Cols() int    { return m.cols }
func (m *Dense) DType() DType { return m.dtype }
func (m *Dense) Sparse() bool { return false }

// At returns element (i, j) widened to float64.
func (m *Dense) At(i, j int) float64 {
	k := i*m.cols + j
	switch m.dtype {
	case Float16:
		return float64(float16.Frombits(m.f16[k]).Float32())
	case Float32:
		return float64(m.f32[k])
	default:
		return m.f64[k]
	}
}

// RowFloat64 implements Matrix.
func (m *Dense) RowFloat64(i int, dst []float64) {
	lo := i * m.cols
	switch m.dtype {
	case Float16:
		for j, b := range m.f16[lo : lo+m.cols] {
			dst[j] = float64(float16.Frombits(b).Float32())
		}
	case Float32:
		for j, v := range m.f32[lo : lo+m.cols] {
			dst[j] = float64(v)
		}
	default:
		copy(dst[:m.cols], m.f64[lo:lo+m.cols])
	}
}

// Float64Data returns the backing slice of a float64 matrix (nil otherwise).
// Callers must not modify it.
func (m *Dense) Float64Data() []float64 { return m.f64 }

// Float32Data returns the backing slice of a float32 matrix (nil otherwise).
// Callers must not modify it.
func (m *Dense) Float32Data() []float32 { return m.f32 }

// Float16Bits returns the backing slice of a float16 matrix (nil otherwise).
// Callers must not modify it.
func (m *Dense) Float16Bits() []uint16 { return m.f16 }

// Clone returns a deep copy (or m itself when its storage is read-only).
func (m *Dense) Clone() *Dense {
	if m.readOnly {
		return m
	}
	c := *m
	c.f16 = append([]uint16(nil), m.f16...)
	c.f32 = append([]float32(nil), m.f32...)
	c.f64 = append([]float64(nil), m.f64...)
	return &c
}

// CSR is a compressed-sparse-row matrix with sorted, unique column indices
// per row. Values are float32 or float64.
type CSR struct {
	rows, cols int
	dtype      DType
	indptr     []int64
	indices    []int32
	f32        []float32
	f64        []float64
}

// NewCSR64 validates and wraps CSR components (not copied). Rows must have
// strictly increasing column indices.
func NewCSR64(rows, cols int, indptr []int64, indices []int32, data []float64) (*CSR, error) {
	if err := checkCSR(rows, cols, indptr, indices, len(data)); err != nil {
		return nil, err
	}
	return &CSR{rows: rows, cols: cols, dtype: Float64, indptr: indptr, indices: indices, f64: data}, nil
}

// NewCSR32 is NewCSR64 for float32 values.
func NewCSR32(rows, cols int, indptr []int64, indices []int32, data []float32) (*CSR, error) {
	if err := checkCSR(rows, cols, indptr, indices, len(data)); err != nil {
		return nil, err
	}
	return &CSR{rows: rows, cols: cols, dtype: Float32, indptr: indptr, indices: indices, f32: data}, nil
}

func checkCSR(rows, cols int, indptr []int64, indices []int32, n int) error {
	if rows < 0 || cols < 0 {
		return fmt.Errorf("%w: negative shape (%d, %d)", ErrShape, rows, cols)
	}
	if len(indptr) != rows+1 {
		return fmt.Errorf("%w: indptr has %d entries, want rows+1 = %d", ErrShape, len(indptr), rows+1)
	}
	if indptr[0] != 0 || indptr[rows] != int64(len(indices)) || len(indices) != n {
		return fmt.Errorf("%w: indptr must start at 0 and end at nnz = %d (indices %d, data %d)", ErrShape, indptr[rows], len(indices), n)
	}
	for r := 0; r < rows; r++ {
		if indptr[r+1] < indptr[r] {
			return fmt.Errorf("%w: indptr decreases at row %d", ErrShape, r)
		}
	}
	for r := 0; r < rows; r++ {
		lo, hi := indptr[r], indptr[r+1]
		prev := int32(-1)
		for _, c := range indices[lo:hi] {
			if c < 0 || int(c) >= cols {
				return fmt.Errorf("%w: row %d has column index %d outside [0, %d)", ErrShape, r, c, cols)
			}
			if c <= prev {
				return fmt.Errorf("%w: row %d has unsorted or duplicate column index %d", ErrShape, r, c)
			}
			prev = c
		}
	}
	return nil
}

func (m *CSR) Rows() int    { return m.rows }
func (m *CSR) Cols() int    { return m.cols }
func (m *CSR) DType() DType { return m.dtype }
func (m *CSR) Sparse() bool { return true }

// NNZ is the number of stored entries.
func (m *CSR) NNZ() int { return len(m.indices) }

// RowEntries returns the column indices of row i and its values widened to
// float64 (appended to vals[:0]).
func (m *CSR) RowEntries(i int, vals []float64) ([]int32, []float64) {
	lo, hi := m.indptr[i], m.indptr[i+1]
	vals = vals[:0]
	if m.dtype == Float32 {
		for _, v := range m.f32[lo:hi] {
			vals = append(vals, float64(v))
		}
	} else {
		vals = append(vals, m.f64[lo:hi]...)
	}
	return m.indices[lo:hi], vals
}

// RowFloat64 implements Matrix (densifies one row).
func (m *CSR) RowFloat64(i int, dst []float64) {
	clear(dst[:m.cols])
	lo, hi := m.indptr[i], m.indptr[i+1]
	for k := lo; k < hi; k++ {
		if m.dtype == Float32 {
			dst[m.indices[k]] = float64(m.f32[k])
		} else {
			dst[m.indices[k]] = m.f64[k]
		}
	}
}

// Components exposes the CSR arrays (read-only).
func (m *CSR) Components() (indptr []int64, indices []int32) { return m.indptr, m.indices }

// FirstNonFinite returns the first (row, col) holding NaN or ±Inf, or ok=false.
func FirstNonFinite(m Matrix) (row, col int, ok bool) {
	switch t := m.(type) {
	case *Dense:
		if t.knownFinite() {
			return 0, 0, false
		}
		var k int
		switch t.dtype {
		case Float16:
			k = firstNonFinite16(t.f16)
		case Float32:
			k = firstNonFinite(t.f32)
		default:
			k = firstNonFinite(t.f64)
		}
		if k >= 0 {
			return k / t.cols, k % t.cols, true
		}
		t.markFinite()
	case *CSR:
		var k int
		if t.dtype == Float32 {
			k = firstNonFinite(t.f32)
		} else {
			k = firstNonFinite(t.f64)
		}
		if k >= 0 {
			r := sort.Search(t.rows, func(r int) bool { return t.indptr[r+1] > int64(k) })
			return r, int(t.indices[k]), true
		}
	default:
		rowBuf := make([]float64, m.Cols())
		for i := 0; i < m.Rows(); i++ {
			m.RowFloat64(i, rowBuf)
			if j := firstNonFinite(rowBuf); j >= 0 {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

// firstNonFinite returns the index of the first NaN or ±Inf, or -1. The
// check of a large mapped endpoint is on the critical path of a run, so
// spans of values are tested with the vector loops of kernel.MaxAbs32 and
// kernel.MaxAbs64 (whose finiteness is exact), and only a span holding a
// non-finite value is searched value by value.
func firstNonFinite[T float32 | float64](v []T) int {
	const span = 4096
	for lo := 0; lo < len(v); lo += span {
		w := v[lo:min(lo+span, len(v))]
		var fin bool
		switch x := any(w).(type) {
		case []float32:
			_, fin = kernel.MaxAbs32(x)
		case []float64:
			_, fin = kernel.MaxAbs64(x)
		}
		if fin {
			continue
		}
		for i, x := range w {
			if x-x != 0 {
				return lo + i
			}
		}
	}
	return -1
}

// firstNonFinite16 does the same on binary16 bit patterns (exponent all ones).
func firstNonFinite16(v []uint16) int {
	for i, b := range v {
		if b&0x7c00 == 0x7c00 {
			return i
		}
	}
	return -1
}

// Float64Data returns the values of a float64 CSR matrix (nil otherwise).
func (m *CSR) Float64Data() []float64 { return m.f64 }

// Float32Data returns the values of a float32 CSR matrix (nil otherwise).
func (m *CSR) Float32Data() []float32 { return m.f32 }

// Clone returns a deep copy.
func (m *CSR) Clone() *CSR {
	c := *m
	c.indptr = append([]int64(nil), m.indptr...)
	c.indices = append([]int32(nil), m.indices...)
	c.f32 = append([]float32(nil), m.f32...)
	c.f64 = append([]float64(nil), m.f64...)
	return &c
}

// RowSlice returns rows [lo, hi) as a view sharing storage.
func (m *Dense) RowSlice(lo, hi int) *Dense {
	c := *m
	c.rows = hi - lo
	if !m.knownFinite() {
		c.finite = nil // a clean scan of these rows says nothing of the others
	}
	c.memo = nil // facts of the whole matrix are not the slice's
	a, b := lo*m.cols, hi*m.cols
	switch m.dtype {
	case Float16:
		c.f16 = m.f16[a:b:b]
	case Float32:
		c.f32 = m.f32[a:b:b]
	default:
		c.f64 = m.f64[a:b:b]
	}
	return &c
}

// RowSlice returns rows [lo, hi) as a new CSR sharing value storage.
func (m *CSR) RowSlice(lo, hi int) *CSR {
	c := *m
	c.rows = hi - lo
	base := m.indptr[lo]
	c.indptr = make([]int64, hi-lo+1)
	for i := range c.indptr {
		c.indptr[i] = m.indptr[lo+i] - base
	}
	end := m.indptr[hi]
	c.indices = m.indices[base:end:end]
	if m.dtype == Float32 {
		c.f32 = m.f32[base:end:end]
	} else {
		c.f64 = m.f64[base:end:end]
	}
	return &c
}

// Clone deep-copies any matrix of this package; other implementations are
// returned as they are (they are expected to be immutable, e.g. mapped files).
func Clone(m Matrix) Matrix {
	switch t := m.(type) {
	case *Dense:
		return t.Clone()
	case *CSR:
		return t.Clone()
	}
	return m
}

// ReadOnly marks m as backed by memory nobody can write (a read-only file
// mapping), so Clone may share it instead of copying. It returns m.
func (m *Dense) ReadOnly() *Dense {
	m.readOnly = true
	if m.finite == nil {
		m.finite = new(atomic.Bool)
	}
	if m.memo == nil {
		m.memo = new(sync.Map)
	}
	return m
}

// knownFinite reports whether an earlier full scan of m's read-only
// storage found only finite values.
func (m *Dense) knownFinite() bool { return m.finite != nil && m.finite.Load() }

// KnownFinite reports whether m's values are known to be finite: its
// storage is read-only and a full scan (FirstNonFinite or
// FirstNonFiniteParallel) found no NaN or ±Inf. A false result says
// nothing; the values may still be finite.
func (m *Dense) KnownFinite() bool { return m.knownFinite() }

// markFinite records a full scan without a non-finite value (read-only
// storage only: anything else may change afterwards).
func (m *Dense) markFinite() {
	if m.finite != nil {
		m.finite.Store(true)
	}
}

// IsReadOnly reports whether m's storage is a read-only mapping (see ReadOnly).
func (m *Dense) IsReadOnly() bool { return m.readOnly }
