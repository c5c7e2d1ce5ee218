package columnar

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// eachChunk calls fn with records of at most chunk rows (<= 0: all rows)
// covering m and ids, and once with an empty record when m has no rows.
// Each record is built afresh rather than sliced: the Parquet writer
// ignores the slice offset of fixed-size list arrays (arrow-go v18.8.0).
func eachChunk(column string, m *matrix.Dense, idColumn string, ids []string, chunk int, fixedSize bool, fn func(arrow.RecordBatch) error) error {
	if idColumn != "" && len(ids) != m.Rows() {
		return fmt.Errorf("columnar: %d IDs for %d rows", len(ids), m.Rows())
	}
	rows := m.Rows()
	if chunk <= 0 {
		chunk = max(rows, 1)
	}
	// One list type for every chunk: int32 offsets unless they overflow.
	kind := listKind
	switch {
	case fixedSize:
		kind = fixedKind
	case int64(rows)*int64(m.Cols()) > math.MaxInt32:
		kind = largeKind
	}
	for lo := 0; lo < rows || lo == 0; lo += chunk {
		hi := min(lo+chunk, rows)
		sub, err := rowRange(m, lo, hi)
		if err != nil {
			return err
		}
		var part []string
		if idColumn != "" {
			part = ids[lo:hi]
		}
		rec, err := buildRecord(column, sub, idColumn, part, kind)
		if err != nil {
			return err
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// rowRange returns rows [lo, hi) of m, sharing its storage.
func rowRange(m *matrix.Dense, lo, hi int) (*matrix.Dense, error) {
	c := m.Cols()
	switch m.DType() {
	case matrix.Float16:
		return matrix.NewDense16(hi-lo, c, m.Float16Bits()[lo*c:hi*c])
	case matrix.Float32:
		return matrix.NewDense32(hi-lo, c, m.Float32Data()[lo*c:hi*c])
	case matrix.Float64:
		return matrix.NewDense64(hi-lo, c, m.Float64Data()[lo*c:hi*c])
	}
	return nil, fmt.Errorf("columnar: unsupported dtype %s", m.DType())
}

// The list types the writers use for the embedding column.
const (
	listKind = iota
	largeKind
	fixedKind
)

// buildRecord wraps m (without copying its values) and ids as one record
// whose embedding column has the given list kind.
func buildRecord(column string, m *matrix.Dense, idColumn string, ids []string, kind int) (arrow.RecordBatch, error) {
	if column == "" {
		return nil, fmt.Errorf("columnar: empty embedding column name")
	}
	rows, cols := m.Rows(), m.Cols()
	var (
		elem arrow.DataType
		raw  []byte
	)
	switch m.DType() {
	case matrix.Float16:
		elem, raw = arrow.FixedWidthTypes.Float16, arrow.Uint16Traits.CastToBytes(m.Float16Bits())
	case matrix.Float32:
		elem, raw = arrow.PrimitiveTypes.Float32, arrow.Float32Traits.CastToBytes(m.Float32Data())
	case matrix.Float64:
		elem, raw = arrow.PrimitiveTypes.Float64, arrow.Float64Traits.CastToBytes(m.Float64Data())
	default:
		return nil, fmt.Errorf("columnar: unsupported dtype %s", m.DType())
	}
	child := array.NewData(elem, rows*cols, []*memory.Buffer{nil, memory.NewBufferBytes(raw)}, nil, 0, 0)
	defer child.Release()

	var (
		typ  arrow.DataType
		bufs []*memory.Buffer
	)
	switch kind {
	case fixedKind:
		if cols > math.MaxInt32 {
			return nil, fmt.Errorf("columnar: width %d too large for a fixed-size list", cols)
		}
		typ, bufs = arrow.FixedSizeListOfNonNullable(int32(cols), elem), []*memory.Buffer{nil}
	case listKind:
		off := make([]int32, rows+1)
		for i := range off {
			off[i] = int32(i * cols)
		}
		typ = arrow.ListOfNonNullable(elem)
		bufs = []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(off))}
	default:
		off := make([]int64, rows+1)
		for i := range off {
			off[i] = int64(i * cols)
		}
		typ = arrow.LargeListOfNonNullable(elem)
		bufs = []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(off))}
	}
	list := array.NewData(typ, rows, bufs, []arrow.ArrayData{child}, 0, 0)
	defer list.Release()

	fields := []arrow.Field{{Name: column, Type: typ}}
	arrs := []arrow.Array{array.MakeFromData(list)}
	if idColumn != "" {
		if len(ids) != rows {
			arrs[0].Release()
			return nil, fmt.Errorf("columnar: %d IDs for %d rows", len(ids), rows)
		}
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.AppendValues(ids, nil)
		fields = append(fields, arrow.Field{Name: idColumn, Type: arrow.BinaryTypes.String})
		arrs = append(arrs, b.NewArray())
		b.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(rows))
	for _, a := range arrs {
		a.Release()
	}
	return rec, nil
}
