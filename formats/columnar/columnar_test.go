package columnar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

type reader func(context.Context, string, Options) (*Table, error)

// format describes one on-disk layout: its extension, how to write a matrix
// and how to write arbitrary record batches.
type format struct {
	name string
	ext  string
	read reader
	// writeMatrix writes with `chunk` rows per row group / batch.
	writeMatrix func(w *bytes.Buffer, m *matrix.Dense, ids []string, chunk int, fixed bool) error
	// writeRecs writes each record as one row group / batch.
	writeRecs func(w *bytes.Buffer, sc *arrow.Schema, recs []arrow.RecordBatch) error
}

var allFormats = []format{
	{
		name: "parquet", ext: ".parquet", read: ReadParquet,
		writeMatrix: func(w *bytes.Buffer, m *matrix.Dense, ids []string, chunk int, fixed bool) error {
			return WriteParquet(w, "emb", m, idName(ids), ids, chunk, fixed)
		},
		writeRecs: func(w *bytes.Buffer, sc *arrow.Schema, recs []arrow.RecordBatch) error {
			fw, err := pqarrow.NewFileWriter(sc, w, parquet.NewWriterProperties(),
				pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
			if err != nil {
				return err
			}
			for _, r := range recs {
				if err := fw.Write(r); err != nil {
					return err
				}
			}
			return fw.Close()
		},
	},
	{
		name: "arrow", ext: ".arrow", read: ReadArrow,
		writeMatrix: func(w *bytes.Buffer, m *matrix.Dense, ids []string, chunk int, fixed bool) error {
			return WriteArrow(w, "emb", m, idName(ids), ids, chunk, fixed)
		},
		writeRecs: func(w *bytes.Buffer, sc *arrow.Schema, recs []arrow.RecordBatch) error {
			fw, err := ipc.NewFileWriter(w, ipc.WithSchema(sc))
			if err != nil {
				return err
			}
			for _, r := range recs {
				if err := fw.Write(r); err != nil {
					return err
				}
			}
			return fw.Close()
		},
	},
	{
		name: "stream", ext: ".ipc", read: ReadArrow,
		writeMatrix: func(w *bytes.Buffer, m *matrix.Dense, ids []string, chunk int, fixed bool) error {
			var sw *ipc.Writer
			err := eachChunk("emb", m, idName(ids), ids, chunk, fixed, func(rec arrow.RecordBatch) error {
				if sw == nil {
					sw = ipc.NewWriter(w, ipc.WithSchema(rec.Schema()))
				}
				return sw.Write(rec)
			})
			if err != nil {
				return err
			}
			return sw.Close()
		},
		writeRecs: func(w *bytes.Buffer, sc *arrow.Schema, recs []arrow.RecordBatch) error {
			sw := ipc.NewWriter(w, ipc.WithSchema(sc))
			for _, r := range recs {
				if err := sw.Write(r); err != nil {
					return err
				}
			}
			return sw.Close()
		},
	},
}

func idName(ids []string) string {
	if ids == nil {
		return ""
	}
	return "id"
}

func writeTemp(t testing.TB, ext string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in"+ext)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// randomMatrix fills a rows×cols matrix with finite values that exercise
// the full bit patterns of the dtype.
func randomMatrix(t testing.TB, dt matrix.DType, rows, cols int, seed uint64) *matrix.Dense {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	n := rows * cols
	var (
		m   *matrix.Dense
		err error
	)
	switch dt {
	case matrix.Float16:
		d := make([]uint16, n)
		for i := range d {
			d[i] = uint16(r.UintN(0x7c00)) | uint16(r.UintN(2))<<15 // finite
		}
		m, err = matrix.NewDense16(rows, cols, d)
	case matrix.Float32:
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(r.NormFloat64()) * float32(math.Pow(10, float64(r.IntN(20)-10)))
		}
		m, err = matrix.NewDense32(rows, cols, d)
	default:
		d := make([]float64, n)
		for i := range d {
			d[i] = math.Float64frombits(r.Uint64()>>2 | uint64(r.UintN(2))<<63)
		}
		m, err = matrix.NewDense64(rows, cols, d)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameMatrix(t *testing.T, got, want *matrix.Dense) {
	t.Helper()
	if got.Rows() != want.Rows() || got.Cols() != want.Cols() || got.DType() != want.DType() {
		t.Fatalf("got %dx%d %s, want %dx%d %s", got.Rows(), got.Cols(), got.DType(), want.Rows(), want.Cols(), want.DType())
	}
	var eq bool
	switch want.DType() {
	case matrix.Float16:
		eq = fmt.Sprint(got.Float16Bits()) == fmt.Sprint(want.Float16Bits())
	case matrix.Float32:
		g, w := got.Float32Data(), want.Float32Data()
		eq = len(g) == len(w)
		for i := range w {
			eq = eq && math.Float32bits(g[i]) == math.Float32bits(w[i])
		}
	default:
		g, w := got.Float64Data(), want.Float64Data()
		eq = len(g) == len(w)
		for i := range w {
			eq = eq && math.Float64bits(g[i]) == math.Float64bits(w[i])
		}
	}
	if !eq {
		t.Fatalf("values differ")
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	const rows, cols = 11, 5
	for _, f := range allFormats {
		for _, dt := range []matrix.DType{matrix.Float16, matrix.Float32, matrix.Float64} {
			for _, fixed := range []bool{true, false} {
				for _, chunk := range []int{0, 1, 4, 11, 100} {
					name := fmt.Sprintf("%s/%s/fixed=%v/chunk=%d", f.name, dt, fixed, chunk)
					t.Run(name, func(t *testing.T) {
						m := randomMatrix(t, dt, rows, cols, uint64(chunk))
						ids := make([]string, rows)
						for i := range ids {
							ids[i] = fmt.Sprintf("doc-%02d-é", i)
						}
						ids[3] = "" // passes through; the dataset rejects it
						var buf bytes.Buffer
						if err := f.writeMatrix(&buf, m, ids, chunk, fixed); err != nil {
							t.Fatal(err)
						}
						p := writeTemp(t, f.ext, buf.Bytes())
						tab, err := f.read(ctx, p, Options{Column: "emb", IDColumn: "id"})
						if err != nil {
							t.Fatal(err)
						}
						sameMatrix(t, tab.Matrix, m)
						if fmt.Sprintf("%q", tab.IDs) != fmt.Sprintf("%q", ids) {
							t.Fatalf("IDs = %q, want %q", tab.IDs, ids)
						}
						// Auto-selection skips the string column; no IDs requested.
						tab, err = f.read(ctx, p, Options{})
						if err != nil {
							t.Fatal(err)
						}
						sameMatrix(t, tab.Matrix, m)
						if tab.IDs != nil {
							t.Fatalf("IDs = %q without IDColumn", tab.IDs)
						}
					})
				}
			}
		}
	}
}

func TestZeroRows(t *testing.T) {
	for _, f := range allFormats {
		for _, fixed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/fixed=%v", f.name, fixed), func(t *testing.T) {
				m, _ := matrix.NewDense32(0, 3, nil)
				var buf bytes.Buffer
				if err := f.writeMatrix(&buf, m, []string{}, 0, fixed); err != nil {
					t.Fatal(err)
				}
				tab, err := f.read(context.Background(), writeTemp(t, f.ext, buf.Bytes()), Options{IDColumn: "id"})
				if err != nil {
					t.Fatal(err)
				}
				wantCols := 0 // a variable-length list carries no width
				if fixed {
					wantCols = 3
				}
				if tab.Matrix.Rows() != 0 || tab.Matrix.Cols() != wantCols || len(tab.IDs) != 0 || tab.IDs == nil {
					t.Fatalf("got %dx%d, IDs %#v", tab.Matrix.Rows(), tab.Matrix.Cols(), tab.IDs)
				}
			})
		}
	}
}

// recs builds record batches for schema sc from per-batch column builders.
func recs(t *testing.T, sc *arrow.Schema, batches ...func(b *array.RecordBuilder)) []arrow.RecordBatch {
	t.Helper()
	out := make([]arrow.RecordBatch, len(batches))
	for i, fill := range batches {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		fill(b)
		out[i] = b.NewRecordBatch()
		b.Release()
		t.Cleanup(out[i].Release)
	}
	return out
}

// appendRows appends float32 list rows; a nil row is a null list and NaN
// marks a null element.
func appendRows(b array.Builder, rows ...[]float32) {
	var vb *array.Float32Builder
	start := func(lb array.Builder) {}
	switch lb := b.(type) {
	case *array.ListBuilder:
		vb = lb.ValueBuilder().(*array.Float32Builder)
		start = func(array.Builder) { lb.Append(true) }
	case *array.FixedSizeListBuilder:
		vb = lb.ValueBuilder().(*array.Float32Builder)
		start = func(array.Builder) { lb.Append(true) }
	}
	for _, r := range rows {
		if r == nil {
			b.AppendNull()
			continue
		}
		start(b)
		for _, v := range r {
			if math.IsNaN(float64(v)) {
				vb.AppendNull()
			} else {
				vb.Append(v)
			}
		}
	}
}

// writeRecsFile writes recs in format f and returns the path.
func writeRecsFile(t *testing.T, f format, sc *arrow.Schema, rs []arrow.RecordBatch) string {
	t.Helper()
	var buf bytes.Buffer
	if err := f.writeRecs(&buf, sc, rs); err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, f.ext, buf.Bytes())
}

func wantErr(t *testing.T, err error, path string, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", frags)
	}
	if !formats.IsInputError(err) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q does not name %s", err, path)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("error %q lacks %q", err, f)
		}
	}
}

var nan = float32(math.NaN())

func TestErrors(t *testing.T) {
	ctx := context.Background()
	f32list := arrow.ListOf(arrow.PrimitiveTypes.Float32)
	f32fixed := arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)
	str := arrow.BinaryTypes.String

	twoRows := func(b *array.RecordBuilder) {
		for i, f := range b.Schema().Fields() {
			switch f.Type.ID() {
			case arrow.LIST:
				if f.Type.(*arrow.ListType).Elem().ID() == arrow.INT32 {
					lb := b.Field(i).(*array.ListBuilder)
					for range 2 {
						lb.Append(true)
						lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{1, 2}, nil)
					}
					continue
				}
				appendRows(b.Field(i), []float32{1, 2}, []float32{3, 4})
			case arrow.FIXED_SIZE_LIST:
				appendRows(b.Field(i), []float32{1, 2}, []float32{3, 4})
			case arrow.STRING:
				b.Field(i).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
			case arrow.INT64:
				b.Field(i).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
			}
		}
	}

	cases := []struct {
		name    string
		fields  []arrow.Field
		batches []func(*array.RecordBuilder)
		opts    Options
		frags   []string
	}{
		{
			name:    "no eligible column",
			fields:  []arrow.Field{{Name: "id", Type: str}, {Name: "n", Type: arrow.PrimitiveTypes.Int64}},
			batches: []func(*array.RecordBuilder){twoRows},
			frags:   []string{"no embedding column", `"id" (utf8)`, `"n" (int64)`, "--queries-tensor/--gallery-tensor"},
		},
		{
			name:    "several eligible columns",
			fields:  []arrow.Field{{Name: "a", Type: f32list}, {Name: "b", Type: f32fixed}},
			batches: []func(*array.RecordBuilder){twoRows},
			frags:   []string{"several embedding columns", `"a"`, `"b"`, "--queries-tensor/--gallery-tensor"},
		},
		{
			name:    "unknown column",
			fields:  []arrow.Field{{Name: "a", Type: f32list}, {Name: "id", Type: str}},
			batches: []func(*array.RecordBuilder){twoRows},
			opts:    Options{Column: "emb"},
			frags:   []string{`no column "emb"`, `columns: "a", "id"`},
		},
		{
			name:    "unknown ID column",
			fields:  []arrow.Field{{Name: "a", Type: f32list}},
			batches: []func(*array.RecordBuilder){twoRows},
			opts:    Options{IDColumn: "id"},
			frags:   []string{`no column "id"`, `columns: "a"`},
		},
		{
			name:    "ID column of lists",
			fields:  []arrow.Field{{Name: "a", Type: f32list}, {Name: "b", Type: f32list}},
			batches: []func(*array.RecordBuilder){twoRows},
			opts:    Options{Column: "a", IDColumn: "b"},
			frags:   []string{`ID column "b" has unsupported type`},
		},
		{
			name:    "int list chosen",
			fields:  []arrow.Field{{Name: "a", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}, {Name: "b", Type: f32list}},
			batches: []func(*array.RecordBuilder){twoRows},
			opts:    Options{Column: "a"},
			frags:   []string{`column "a"`, "unsupported dtype int32"},
		},
		{
			name:    "lone int list",
			fields:  []arrow.Field{{Name: "a", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}, {Name: "id", Type: str}},
			batches: []func(*array.RecordBuilder){twoRows},
			frags:   []string{`column "a"`, "unsupported dtype int32"},
		},
		{
			name:    "string column chosen",
			fields:  []arrow.Field{{Name: "a", Type: f32list}, {Name: "id", Type: str}},
			batches: []func(*array.RecordBuilder){twoRows},
			opts:    Options{Column: "id"},
			frags:   []string{`column "id"`, "unsupported dtype utf8"},
		},
		{
			name:   "null row",
			fields: []arrow.Field{{Name: "a", Type: f32list, Nullable: true}},
			batches: []func(*array.RecordBuilder){
				func(b *array.RecordBuilder) { appendRows(b.Field(0), []float32{1, 2}, []float32{3, 4}) },
				func(b *array.RecordBuilder) { appendRows(b.Field(0), []float32{1, 2}, nil) },
			},
			frags: []string{`column "a": row 3 is null`},
		},
		{
			name:   "null first row",
			fields: []arrow.Field{{Name: "a", Type: f32list, Nullable: true}},
			batches: []func(*array.RecordBuilder){
				func(b *array.RecordBuilder) { appendRows(b.Field(0), nil, []float32{3, 4}) },
			},
			frags: []string{`column "a": row 0 is null`},
		},
		{
			name:   "null fixed row",
			fields: []arrow.Field{{Name: "a", Type: f32fixed, Nullable: true}},
			batches: []func(*array.RecordBuilder){
				func(b *array.RecordBuilder) { appendRows(b.Field(0), []float32{1, 2}, nil) },
			},
			frags: []string{`column "a": row 1 is null`},
		},
		{
			name:   "null element",
			fields: []arrow.Field{{Name: "a", Type: f32list}},
			batches: []func(*array.RecordBuilder){
				func(b *array.RecordBuilder) { appendRows(b.Field(0), []float32{1, 2}) },
				func(b *array.RecordBuilder) { appendRows(b.Field(0), []float32{1, 2}, []float32{3, nan}) },
			},
			frags: []string{`column "a": row 2 has a null element at position 1`},
		},
		{
			name:   "null fixed element",
			fields: []arrow.Field{{Name: "a", Type: f32fixed}},
			batches: []func(*array.RecordBuilder){
				func(b *array.RecordBuilder) { appendRows(b.Field(0), []float32{nan, 2}) },
			},
			frags: []string{`row 0 has a null element at position 0`},
		},
		{
			name:   "ragged rows",
			fields: []arrow.Field{{Name: "a", Type: f32list}},
			batches: []func(*array.RecordBuilder){
				func(b *array.RecordBuilder) { appendRows(b.Field(0), []float32{1, 2, 3}, []float32{1, 2, 3}) },
				func(b *array.RecordBuilder) { appendRows(b.Field(0), []float32{1, 2, 3}, []float32{1, 2}) },
			},
			frags: []string{"rows have different lengths", "row 3 has 2 values, row 0 has 3"},
		},
		{
			name:   "null ID",
			fields: []arrow.Field{{Name: "a", Type: f32list}, {Name: "id", Type: str, Nullable: true}},
			batches: []func(*array.RecordBuilder){
				func(b *array.RecordBuilder) {
					appendRows(b.Field(0), []float32{1, 2}, []float32{3, 4})
					b.Field(1).(*array.StringBuilder).AppendValues([]string{"x", ""}, []bool{true, false})
				},
			},
			opts:  Options{IDColumn: "id"},
			frags: []string{`ID column "id": row 1 is null`},
		},
	}
	for _, f := range allFormats {
		for _, c := range cases {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				sc := arrow.NewSchema(c.fields, nil)
				p := writeRecsFile(t, f, sc, recs(t, sc, c.batches...))
				_, err := f.read(ctx, p, c.opts)
				wantErr(t, err, p, c.frags...)
			})
		}
	}
}

func TestIntegerAndDictionaryIDs(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "emb", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}},
	}, nil)
	rs := recs(t, sc, func(b *array.RecordBuilder) {
		appendRows(b.Field(0), []float32{1}, []float32{2}, []float32{3})
		b.Field(1).(*array.Int64Builder).AppendValues([]int64{-7, 0, 1 << 40}, nil)
		b.Field(2).(*array.Uint8Builder).AppendValues([]uint8{255, 1, 2}, nil)
		db := b.Field(3).(*array.BinaryDictionaryBuilder)
		for _, s := range []string{"x", "y", "x"} {
			if err := db.AppendString(s); err != nil {
				t.Fatal(err)
			}
		}
	})
	want := map[string]string{"n": `["-7" "0" "1099511627776"]`, "u": `["255" "1" "2"]`, "d": `["x" "y" "x"]`}
	for _, f := range allFormats {
		p := writeRecsFile(t, f, sc, rs)
		for col, w := range want {
			tab, err := f.read(context.Background(), p, Options{IDColumn: col})
			if err != nil {
				t.Fatalf("%s/%s: %v", f.name, col, err)
			}
			if got := fmt.Sprintf("%q", tab.IDs); got != w {
				t.Errorf("%s/%s: IDs %s, want %s", f.name, col, got, w)
			}
		}
	}
}

func TestTruncatedAndCorrupt(t *testing.T) {
	m := randomMatrix(t, matrix.Float32, 20, 8, 1)
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = fmt.Sprint("id", i)
	}
	for _, f := range allFormats {
		var buf bytes.Buffer
		if err := f.writeMatrix(&buf, m, ids, 6, false); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		for _, n := range []int{0, 1, 3, 8, 20, len(data) / 3, len(data) / 2, len(data) - 40, len(data) - 9, len(data) - 1} {
			p := writeTemp(t, f.ext, data[:n])
			_, err := f.read(context.Background(), p, Options{IDColumn: "id"})
			if err == nil {
				if f.name == "stream" && n == len(data)-1 {
					// Only the end-of-stream marker was cut; the data is whole.
					continue
				}
				t.Fatalf("%s cut to %d of %d bytes: no error", f.name, n, len(data))
			}
			if !strings.Contains(err.Error(), "truncated") && !strings.Contains(err.Error(), "malformed") {
				t.Errorf("%s cut to %d: %v", f.name, n, err)
			}
			wantErr(t, err, p)
		}
		// A file cut short of its footer is reported as truncated.
		if f.name != "stream" {
			p := writeTemp(t, f.ext, data[:len(data)-1])
			_, err := f.read(context.Background(), p, Options{})
			wantErr(t, err, p, "truncated")
		}
		// Flipped bytes must give an error or a result, never a panic.
		r := rand.New(rand.NewPCG(3, 4))
		for range 300 {
			c := bytes.Clone(data)
			for range 1 + r.IntN(4) {
				c[r.IntN(len(c))] ^= byte(1 + r.IntN(255))
			}
			p := writeTemp(t, f.ext, c)
			if _, err := f.read(context.Background(), p, Options{IDColumn: "id"}); err != nil {
				wantErr(t, err, p)
			}
		}
	}
}

func TestFeatherV1(t *testing.T) {
	p := writeTemp(t, ".feather", []byte("FEA1\x00\x00\x00\x00FEA1"))
	_, err := ReadArrow(context.Background(), p, Options{})
	wantErr(t, err, p, "malformed", "Feather v1")
}

func TestMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.parquet")
	for _, read := range []reader{ReadParquet, ReadArrow} {
		_, err := read(context.Background(), p, Options{})
		wantErr(t, err, p, "cannot read file")
	}
}

func TestContextCancelled(t *testing.T) {
	m := randomMatrix(t, matrix.Float64, 4, 2, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, f := range allFormats {
		var buf bytes.Buffer
		if err := f.writeMatrix(&buf, m, nil, 1, true); err != nil {
			t.Fatal(err)
		}
		_, err := f.read(ctx, writeTemp(t, f.ext, buf.Bytes()), Options{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", f.name, err)
		}
	}
}

// TestWriterRejects covers the writers' argument checks.
func TestWriterRejects(t *testing.T) {
	m := randomMatrix(t, matrix.Float32, 2, 2, 1)
	var buf bytes.Buffer
	if err := WriteArrow(&buf, "emb", m, "id", []string{"a"}, 0, true); err == nil {
		t.Error("WriteArrow accepted 1 ID for 2 rows")
	}
	if err := WriteParquet(&buf, "", m, "", nil, 0, true); err == nil {
		t.Error("WriteParquet accepted an empty column name")
	}
}

func fuzzSeeds(f *testing.F, fm format) {
	for i, dt := range []matrix.DType{matrix.Float16, matrix.Float32, matrix.Float64} {
		for _, fixed := range []bool{true, false} {
			m := randomMatrix(f, dt, 3, 2, uint64(i))
			var buf bytes.Buffer
			if err := fm.writeMatrix(&buf, m, []string{"a", "b", "c"}, 2, fixed); err != nil {
				f.Fatal(err)
			}
			f.Add(buf.Bytes())
		}
	}
}

// fuzzRead reads data from a file in dir: one directory per fuzz worker,
// as a fresh t.TempDir per input would triple the cost of an execution.
func fuzzRead(t *testing.T, dir, ext string, read reader, data []byte) {
	p := filepath.Join(dir, "in"+ext)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{{}, {Column: "emb", IDColumn: "id"}} {
		tab, err := read(context.Background(), p, opts)
		if err != nil {
			if !formats.IsInputError(err) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name the file", err)
			}
			continue
		}
		m := tab.Matrix
		if tab.IDs != nil && len(tab.IDs) != m.Rows() {
			t.Fatalf("%d IDs for %d rows", len(tab.IDs), m.Rows())
		}
		row := make([]float64, m.Cols())
		for i := range m.Rows() {
			m.RowFloat64(i, row)
		}
	}
}

func FuzzReadParquet(f *testing.F) {
	fuzzSeeds(f, allFormats[0])
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, dir, ".parquet", ReadParquet, data) })
}

func FuzzReadArrow(f *testing.F) {
	fuzzSeeds(f, allFormats[1])
	fuzzSeeds(f, allFormats[2])
	// Dictionary-encoded IDs exercise the dictionary batches.
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "emb", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
		{Name: "id", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	appendRows(b.Field(0), []float32{1, 2}, []float32{3, 4})
	for _, s := range []string{"x", "y"} {
		_ = b.Field(1).(*array.BinaryDictionaryBuilder).AppendString(s)
	}
	rec := b.NewRecordBatch()
	b.Release()
	for _, fm := range allFormats[1:] {
		var buf bytes.Buffer
		if err := fm.writeRecs(&buf, sc, []arrow.RecordBatch{rec, rec}); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	rec.Release()
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, dir, ".arrow", ReadArrow, data) })
}

// TestCompressed reads compressed files: pyarrow writes Feather v2 with LZ4
// by default, and Parquet writers usually compress pages.
func TestCompressed(t *testing.T) {
	random := randomMatrix(t, matrix.Float32, 300, 16, 9)
	zeros, _ := matrix.NewDense32(4000, 64, make([]float32, 4000*64)) // inflates ~1000x
	ids := make([]string, 4000)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	for _, m := range []*matrix.Dense{random, zeros} {
		for _, opt := range []struct {
			name string
			ipc  ipc.Option
			pq   compress.Compression
		}{{"lz4/snappy", ipc.WithLZ4(), compress.Codecs.Snappy}, {"zstd", ipc.WithZstd(), compress.Codecs.Zstd}} {
			t.Run(fmt.Sprintf("%s/%d", opt.name, m.Rows()), func(t *testing.T) {
				var ab, pb bytes.Buffer
				var fw *ipc.FileWriter
				var pw *pqarrow.FileWriter
				err := eachChunk("emb", m, "id", ids[:m.Rows()], 128, true, func(rec arrow.RecordBatch) error {
					if fw == nil {
						var err error
						if fw, err = ipc.NewFileWriter(&ab, ipc.WithSchema(rec.Schema()), opt.ipc); err != nil {
							return err
						}
						pw, err = pqarrow.NewFileWriter(rec.Schema(), &pb,
							parquet.NewWriterProperties(parquet.WithCompression(opt.pq), parquet.WithMaxRowGroupLength(128)),
							pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
						if err != nil {
							return err
						}
					}
					if err := fw.Write(rec); err != nil {
						return err
					}
					return pw.Write(rec)
				})
				if err == nil {
					err = errors.Join(fw.Close(), pw.Close())
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range []struct {
					ext  string
					data []byte
					read reader
				}{{".feather", ab.Bytes(), ReadArrow}, {".parquet", pb.Bytes(), ReadParquet}} {
					tab, err := c.read(context.Background(), writeTemp(t, c.ext, c.data), Options{IDColumn: "id"})
					if err != nil {
						t.Fatalf("%s (%d bytes): %v", c.ext, len(c.data), err)
					}
					sameMatrix(t, tab.Matrix, m)
					if len(tab.IDs) != m.Rows() || tab.IDs[m.Rows()-1] != ids[m.Rows()-1] {
						t.Fatalf("%s: IDs %d", c.ext, len(tab.IDs))
					}
				}
			})
		}
	}
}
