package columnar

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

const (
	parquetKind = "Parquet"
	// batchBytes bounds the decoded size of one batch: large enough to
	// amortise per-batch overhead, small next to any realistic matrix.
	batchBytes = 8 << 20
)

var parquetMagic = []byte("PAR1")

// ReadParquet reads the embedding column (and optional ID column) of a
// Parquet file, row group by row group.
func ReadParquet(ctx context.Context, path string, opts Options) (t *Table, err error) {
	defer recoverMalformed(path, parquetKind, &t, &err)
	f, err := os.Open(path)
	if err != nil {
		return nil, openError(path, err)
	}
	defer f.Close()
	if err := checkParquetEnds(path, f); err != nil {
		return nil, err
	}

	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	// Stream pages through a buffer instead of loading whole column chunks.
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	pr, err := file.NewParquetReader(f, file.WithReadProps(props))
	if err != nil {
		return nil, libError(path, parquetKind, err)
	}
	defer pr.Close()
	if err := checkStoredSchema(pr); err != nil {
		return nil, &formats.Error{Path: path, Msg: "malformed Parquet file: stored Arrow schema", Err: err}
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, libError(path, parquetKind, err)
	}
	sc, err := fr.Schema()
	if err != nil {
		return nil, libError(path, parquetKind, err)
	}
	sel, err := selectColumns(path, sc, opts)
	if err != nil {
		return nil, err
	}

	// The record reader orders fields by first leaf, so the embedding column
	// comes first and the ID column (if any) second.
	embLeaves := leaves(&fr.Manifest.Fields[sel.emb], nil)
	cols, id := embLeaves, -1
	if sel.id >= 0 {
		cols = leaves(&fr.Manifest.Fields[sel.id], append([]int(nil), embLeaves...))
		id = 1
	}

	meta := pr.MetaData()
	var declared, leafValues int64
	for rg := range pr.NumRowGroups() {
		rgm := meta.RowGroup(rg)
		n := rgm.NumRows()
		for _, leaf := range embLeaves {
			cc, err := rgm.ColumnChunk(leaf)
			if err != nil {
				return nil, libError(path, parquetKind, err)
			}
			v := cc.NumValues()
			if v < 0 || v > maxRows {
				return nil, formats.Errorf(path, "malformed Parquet file: row group %d declares %d values", rg, v)
			}
			leafValues += v
		}
		if n < 0 || n > maxRows {
			return nil, formats.Errorf(path, "malformed Parquet file: row group %d declares %d rows", rg, n)
		}
		if declared += n; declared > maxRows || leafValues > maxRows {
			return nil, formats.Errorf(path, "malformed Parquet file: too many rows or values")
		}
	}
	if declared != pr.NumRows() {
		return nil, formats.Errorf(path, "malformed Parquet file: row groups hold %d rows, footer declares %d", declared, pr.NumRows())
	}
	// Each row, and each list element, is at least one leaf value.
	s, err := newSink(path, sc, sel, declared, leafValues, leafValues)
	if err != nil {
		return nil, err
	}
	fr.Props.BatchSize = batchSize(sel, declared, leafValues)

	for rg := range pr.NumRowGroups() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if meta.RowGroup(rg).NumRows() == 0 {
			continue
		}
		rr, err := fr.GetRecordReader(ctx, cols, []int{rg})
		if err != nil {
			return nil, libError(path, parquetKind, err)
		}
		err = drain(ctx, path, rr, s, id)
		rr.Release()
		if err != nil {
			return nil, err
		}
	}
	return s.finish()
}

// drain copies every batch of one row group into s.
func drain(ctx context.Context, path string, rr pqarrow.RecordReader, s *sink, id int) error {
	for rr.Next() {
		if err := s.add(rr.RecordBatch(), 0, id); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return libError(path, parquetKind, err)
	}
	return nil
}

// checkStoredSchema vets the Arrow schema that writers store (base64 IPC)
// under ARROW:schema before pqarrow decodes it with the trusting IPC reader.
func checkStoredSchema(pr *file.Reader) error {
	kv := pr.MetaData().KeyValueMetadata()
	if kv == nil {
		return nil
	}
	enc := kv.FindValue("ARROW:schema")
	if enc == nil {
		return nil
	}
	// Decode as pqarrow does: padded if possible, else unpadded.
	var (
		dec []byte
		err error
	)
	if len(*enc)%4 == 0 {
		dec, err = base64.StdEncoding.DecodeString(*enc)
	}
	if len(dec) == 0 || err != nil {
		if dec, err = base64.RawStdEncoding.DecodeString(*enc); err != nil {
			return err
		}
	}
	_, _, kind, _, err := checkMessage(dec, 0, -1, newStats(len(dec)))
	if err == nil && kind != headerSchema {
		err = fmt.Errorf("message type %d, want a schema", kind)
	}
	return err
}

// leaves appends the Parquet leaf column indices under f.
func leaves(f *pqarrow.SchemaField, dst []int) []int {
	if f.IsLeaf() {
		return append(dst, f.ColIndex)
	}
	for i := range f.Children {
		dst = leaves(&f.Children[i], dst)
	}
	return dst
}

// batchSize picks rows per batch so one batch decodes to about batchBytes.
// The row width of a variable-length list comes from the leaf value count.
func batchSize(sel selection, rows, leafValues int64) int64 {
	width := int64(sel.fixed)
	if width < 0 && rows > 0 {
		width = leafValues / rows
	}
	rowBytes := max(width, 1) * int64(sel.dtype.Size())
	return max(batchBytes/rowBytes, 1)
}

// checkParquetEnds tells a cut-short file (footer magic missing) from one
// that is not Parquet at all, before the library reports either vaguely.
func checkParquetEnds(path string, f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return openError(path, err)
	}
	size := st.Size()
	head := make([]byte, min(size, 4))
	if _, err := io.ReadFull(f, head); err != nil {
		return openError(path, err)
	}
	if !bytes.HasPrefix(parquetMagic, head) {
		return formats.Errorf(path, "malformed Parquet file: no PAR1 magic")
	}
	if size < 12 {
		return formats.Errorf(path, "truncated Parquet file: %d bytes", size)
	}
	tail := make([]byte, 4)
	if _, err := f.ReadAt(tail, size-4); err != nil {
		return openError(path, err)
	}
	if !bytes.Equal(tail, parquetMagic) && !bytes.Equal(tail, []byte("PARE")) {
		return formats.Errorf(path, "truncated Parquet file: footer missing")
	}
	return nil
}

// WriteParquet writes m (and ids, when idColumn is not "") as a Parquet file
// with at most rowGroupSize rows per row group (<= 0: one row group). The
// embedding column is a fixed-size list when fixedSize, else a list; the
// Arrow schema is stored so readers get the same types back. w is not closed.
func WriteParquet(w io.Writer, column string, m *matrix.Dense, idColumn string, ids []string, rowGroupSize int, fixedSize bool) error {
	if rowGroupSize <= 0 {
		rowGroupSize = max(m.Rows(), 1)
	}
	var fw *pqarrow.FileWriter
	err := eachChunk(column, m, idColumn, ids, rowGroupSize, fixedSize, func(rec arrow.RecordBatch) error {
		if fw == nil {
			props := parquet.NewWriterProperties(
				parquet.WithMaxRowGroupLength(int64(rowGroupSize)),
				parquet.WithDictionaryDefault(false), // embeddings rarely repeat
			)
			// The library closes an io.Closer sink; hide Close from it.
			var err error
			fw, err = pqarrow.NewFileWriter(rec.Schema(), struct{ io.Writer }{w}, props,
				pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
			if err != nil {
				return err
			}
		}
		return fw.Write(rec)
	})
	if fw == nil {
		return err
	}
	if cerr := fw.Close(); err == nil {
		err = cerr
	}
	return err
}
