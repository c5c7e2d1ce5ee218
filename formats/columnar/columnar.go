package columnar

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Options chooses the columns to read.
type Options struct {
	// Column names the embedding column; "" selects the only eligible one.
	Column string
	// IDColumn names the column holding row IDs; "" reads no IDs.
	IDColumn string
}

// Table is what a reader returns.
type Table struct {
	Matrix *matrix.Dense
	IDs    []string // nil without Options.IDColumn
}

// chooseHint is appended to column-choice errors so CLI users know the fix.
const chooseHint = "choose one with --queries-tensor/--gallery-tensor"

// selection is the outcome of matching Options against a schema.
type selection struct {
	emb, id int // top-level field indices; id is -1 without an ID column
	dtype   matrix.DType
	fixed   int // FixedSizeList length, or -1 for variable-length lists
}

// selectColumns resolves opts against the schema's top-level fields.
func selectColumns(path string, sc *arrow.Schema, opts Options) (selection, error) {
	fields := sc.Fields()
	sel := selection{emb: -1, id: -1, fixed: -1}
	if opts.IDColumn != "" {
		i, err := fieldIndex(path, fields, opts.IDColumn)
		if err != nil {
			return sel, err
		}
		if !idType(fields[i].Type) {
			return sel, formats.Errorf(path, "ID column %q has unsupported type %s; need strings or integers", opts.IDColumn, fields[i].Type)
		}
		sel.id = i
	}
	if opts.Column != "" {
		i, err := fieldIndex(path, fields, opts.Column)
		if err != nil {
			return sel, err
		}
		sel.emb = i
	} else {
		var cands, lists []int
		for i, f := range fields {
			if i == sel.id {
				continue
			}
			if _, ok := listElem(f.Type); ok {
				lists = append(lists, i)
				if _, err := elemDType(f.Type); err == nil {
					cands = append(cands, i)
				}
			}
		}
		switch {
		case len(cands) == 1:
			sel.emb = cands[0]
		case len(cands) > 1:
			return sel, formats.Errorf(path, "several embedding columns (%s); %s", describe(fields, cands), chooseHint)
		case len(lists) == 1:
			// A lone list column of the wrong element type is the intended
			// one: report its dtype rather than "no embedding column".
			sel.emb = lists[0]
		default:
			all := make([]int, len(fields))
			for i := range all {
				all[i] = i
			}
			return sel, formats.Errorf(path, "no embedding column (a fixed-size list or list of float16, float32 or float64) among columns %s; %s", describe(fields, all), chooseHint)
		}
	}
	f := fields[sel.emb]
	dt, err := elemDType(f.Type)
	if err != nil {
		return sel, formats.Errorf(path, "column %q: %v", f.Name, err)
	}
	sel.dtype = dt
	if t, ok := f.Type.(*arrow.FixedSizeListType); ok {
		if t.Len() < 0 {
			return sel, formats.Errorf(path, "malformed file: column %q has list size %d", f.Name, t.Len())
		}
		sel.fixed = int(t.Len())
	}
	return sel, nil
}

func fieldIndex(path string, fields []arrow.Field, name string) (int, error) {
	found := -1
	for i, f := range fields {
		if f.Name == name {
			if found >= 0 {
				return -1, formats.Errorf(path, "column %q appears more than once", name)
			}
			found = i
		}
	}
	if found < 0 {
		all := make([]string, len(fields))
		for i, f := range fields {
			all[i] = strconv.Quote(f.Name)
		}
		return -1, formats.Errorf(path, "no column %q; columns: %s", name, strings.Join(all, ", "))
	}
	return found, nil
}

func describe(fields []arrow.Field, idx []int) string {
	parts := make([]string, len(idx))
	for k, i := range idx {
		parts[k] = fmt.Sprintf("%q (%s)", fields[i].Name, fields[i].Type)
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// listElem returns the element type of the list kinds we read. List views
// are excluded: their rows need not be contiguous.
func listElem(t arrow.DataType) (arrow.DataType, bool) {
	switch t := t.(type) {
	case *arrow.FixedSizeListType:
		return t.Elem(), true
	case *arrow.ListType:
		return t.Elem(), true
	case *arrow.LargeListType:
		return t.Elem(), true
	}
	return nil, false
}

func elemDType(t arrow.DataType) (matrix.DType, error) {
	elem, ok := listElem(t)
	if !ok {
		return 0, fmt.Errorf("unsupported dtype %s (need a fixed-size list or list of float16, float32 or float64)", t)
	}
	switch elem.ID() {
	case arrow.FLOAT16:
		return matrix.Float16, nil
	case arrow.FLOAT32:
		return matrix.Float32, nil
	case arrow.FLOAT64:
		return matrix.Float64, nil
	}
	return 0, fmt.Errorf("unsupported dtype %s (list elements must be float16, float32 or float64)", elem)
}

func idType(t arrow.DataType) bool {
	if d, ok := t.(*arrow.DictionaryType); ok {
		t = d.ValueType
	}
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW,
		arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// sink accumulates record batches into the preallocated output.
type sink struct {
	path    string
	sel     selection
	embName string
	idName  string
	rows    int // declared by the file's metadata
	// maxValues bounds rows*width: the values the file can hold.
	maxValues int64
	width     int // -1 until the first row is seen
	n         int // rows copied so far
	f16       []uint16
	f32       []float32
	f64       []float64
	ids       []string
}

// newSink prepares to receive rows rows. Every row takes some bytes in a
// valid file and every element is stored, so the data bounds the row count
// by maxRows and the element count by maxValues: checking both keeps forged
// metadata from sizing absurd allocations.
func newSink(path string, sc *arrow.Schema, sel selection, rows, maxRows, maxValues int64) (*sink, error) {
	if rows < 0 || rows > maxRows || int64(int(rows)) != rows {
		return nil, formats.Errorf(path, "malformed file: metadata declares %d rows, the data can hold at most %d", rows, maxRows)
	}
	s := &sink{path: path, sel: sel, embName: sc.Field(sel.emb).Name, rows: int(rows), width: -1, maxValues: maxValues}
	if sel.fixed == 0 && rows > 0 {
		return nil, formats.Errorf(path, "column %q: rows have no values (fixed-size lists of size 0)", s.embName)
	}
	if sel.id >= 0 {
		s.idName = sc.Field(sel.id).Name
	}
	return s, nil
}

// alloc sizes the output once the width is known.
func (s *sink) alloc(width int) error {
	if width > 0 && s.rows > math.MaxInt/width/s.sel.dtype.Size() {
		return formats.Errorf(s.path, "malformed file: %d rows of %d values is too large", s.rows, width)
	}
	s.width = width
	if s.sel.id >= 0 {
		s.ids = make([]string, 0, s.rows)
	}
	n := s.rows * width
	if int64(n) > s.maxValues {
		// Fewer values than rows×width: some row is null or short (found
		// while copying) or the metadata lies (caught by the copy bound).
		n = int(s.maxValues)
	}
	switch s.sel.dtype {
	case matrix.Float16:
		s.f16 = make([]uint16, n)
	case matrix.Float32:
		s.f32 = make([]float32, n)
	default:
		s.f64 = make([]float64, n)
	}
	return nil
}

// add copies one batch whose embedding column is at position emb and ID
// column (if any) at position id.
func (s *sink) add(rec arrow.RecordBatch, emb, id int) error {
	k := int(rec.NumRows())
	if k == 0 {
		return nil
	}
	if k > s.rows-s.n {
		return formats.Errorf(s.path, "malformed file: more rows than the %d its metadata declares", s.rows)
	}
	col := rec.Column(emb)
	if col.Len() != k {
		return formats.Errorf(s.path, "malformed file: column lengths disagree")
	}
	if err := s.addEmbeddings(col); err != nil {
		return err
	}
	if id >= 0 {
		if err := s.addIDs(rec.Column(id), k); err != nil {
			return err
		}
	}
	s.n += k
	return nil
}

func (s *sink) addEmbeddings(col arrow.Array) error {
	name := s.embName
	list, ok := col.(array.ListLike)
	if !ok {
		return formats.Errorf(s.path, "column %q: unsupported dtype %s", name, col.DataType())
	}
	k := list.Len()
	if s.width < 0 {
		w := s.sel.fixed
		if w < 0 && list.IsValid(0) {
			lo, hi := list.ValueOffsets(0)
			if w = int(hi - lo); w < 0 {
				return formats.Errorf(s.path, "malformed file: column %q list offsets decrease", name)
			}
		}
		if w >= 0 {
			if err := s.alloc(w); err != nil {
				return err
			}
		}
	}
	// Check rows in order so the first offending row is the one named.
	vals := list.ListValues()
	nulls := vals.NullN() > 0
	for i := range k {
		if list.IsNull(i) {
			return formats.Errorf(s.path, "column %q: row %d is null", name, s.n+i)
		}
		lo, hi := list.ValueOffsets(i)
		if got := int(hi - lo); got != s.width {
			return formats.Errorf(s.path, "column %q: rows have different lengths: row %d has %d values, row 0 has %d", name, s.n+i, got, s.width)
		}
		if lo < 0 || hi > int64(vals.Len()) {
			return formats.Errorf(s.path, "malformed file: column %q list offsets out of range", name)
		}
		for j := int(lo); nulls && j < int(hi); j++ {
			if vals.IsNull(j) {
				return formats.Errorf(s.path, "column %q: row %d has a null element at position %d", name, s.n+i, j-int(lo))
			}
		}
	}
	// Consecutive list rows are contiguous in the child, so with every
	// length checked the batch is one run of k*width values.
	lo, _ := list.ValueOffsets(0)
	start, end := int(lo), int(lo)+k*s.width
	off := s.n * s.width
	if off+k*s.width > max(len(s.f16), len(s.f32), len(s.f64)) {
		return formats.Errorf(s.path, "malformed file: column %q holds more values than its metadata declares", name)
	}
	switch v := vals.(type) {
	case *array.Float16:
		dst := s.f16[off : off+k*s.width]
		for j, x := range v.Values()[start:end] {
			dst[j] = x.Uint16()
		}
	case *array.Float32:
		copy(s.f32[off:], v.Float32Values()[start:end])
	case *array.Float64:
		copy(s.f64[off:], v.Float64Values()[start:end])
	default:
		return formats.Errorf(s.path, "column %q: unsupported dtype %s", name, vals.DataType())
	}
	return nil
}

func (s *sink) addIDs(col arrow.Array, k int) error {
	if col.Len() != k {
		return formats.Errorf(s.path, "malformed file: column lengths disagree")
	}
	for i := range k {
		if col.IsNull(i) {
			return formats.Errorf(s.path, "ID column %q: row %d is null", s.idName, s.n+i)
		}
	}
	if d, ok := col.(*array.Dictionary); ok {
		dict := d.Dictionary()
		idx := make([]int, k)
		for i := range k {
			idx[i] = d.GetValueIndex(i)
			if idx[i] < 0 || idx[i] >= dict.Len() {
				return formats.Errorf(s.path, "malformed file: ID column %q dictionary index out of range", s.idName)
			}
			if dict.IsNull(idx[i]) {
				return formats.Errorf(s.path, "ID column %q: row %d is null", s.idName, s.n+i)
			}
		}
		s.appendIDs(k, func(i int) string { return idString(dict, idx[i]) })
		return nil
	}
	s.appendIDs(k, func(i int) string { return idString(col, i) })
	return nil
}

// appendIDs copies the batch's IDs into one fresh string: arrow's string
// values alias the batch buffers, which are released (or unmapped) after.
func (s *sink) appendIDs(k int, get func(int) string) {
	vals := make([]string, k)
	total := 0
	for i := range vals {
		vals[i] = get(i)
		total += len(vals[i])
	}
	var b strings.Builder
	b.Grow(total)
	for _, v := range vals {
		b.WriteString(v)
	}
	blob := b.String()
	for _, v := range vals {
		s.ids = append(s.ids, blob[:len(v)])
		blob = blob[len(v):]
	}
}

// idString renders value i of a string or integer array (integers in decimal).
func idString(a arrow.Array, i int) string {
	switch a := a.(type) {
	case interface{ Value(int) string }: // String, LargeString, StringView
		return a.Value(i)
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Uint8:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10)
	}
	panic(fmt.Sprintf("columnar: unexpected ID array %T", a)) // idType admits no other
}

// finish checks the row count against the metadata and builds the Table.
func (s *sink) finish() (*Table, error) {
	if s.n != s.rows {
		return nil, formats.Errorf(s.path, "malformed file: metadata declares %d rows, found %d", s.rows, s.n)
	}
	if s.width < 0 { // no rows: a variable-length list has no width
		if err := s.alloc(max(s.sel.fixed, 0)); err != nil {
			return nil, err
		}
	}
	var (
		m   *matrix.Dense
		err error
	)
	switch s.sel.dtype {
	case matrix.Float16:
		m, err = matrix.NewDense16(s.rows, s.width, s.f16)
	case matrix.Float32:
		m, err = matrix.NewDense32(s.rows, s.width, s.f32)
	default:
		m, err = matrix.NewDense64(s.rows, s.width, s.f64)
	}
	if err != nil {
		return nil, &formats.Error{Path: s.path, Msg: "malformed file", Err: err}
	}
	return &Table{Matrix: m, IDs: s.ids}, nil
}

// libError wraps an arrow/parquet library error: end-of-data errors mean a
// cut-short file, anything else a corrupt one.
func libError(path, kind string, err error) error {
	msg := "malformed " + kind + " file"
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		msg = "truncated " + kind + " file"
	}
	return &formats.Error{Path: path, Msg: msg, Err: err}
}

// recoverMalformed turns a panic in the arrow/parquet decoders (they trust
// lengths and offsets in corrupt input) into an error naming the file.
func recoverMalformed(path, kind string, t **Table, err *error) {
	if r := recover(); r != nil {
		*t = nil
		*err = formats.Errorf(path, "malformed %s file (decoder panic: %v)", kind, r)
	}
}

// openError reports a file that cannot be opened or read, without repeating
// the path that formats.Error already prints.
func openError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &formats.Error{Path: path, Msg: "cannot read file", Err: err}
}

func readAll(path string) ([]byte, func() error, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, openError(path, err)
	}
	return data, func() error { return nil }, nil
}
