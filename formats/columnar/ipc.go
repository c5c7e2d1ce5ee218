package columnar

import (
	"bytes"
	"context"
	"errors"
	"io"
	"runtime/debug"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

const ipcKind = "Arrow IPC"

// ipcMagic opens and closes the IPC file format (Feather v2).
var ipcMagic = []byte("ARROW1")

// ReadArrow reads the embedding column (and optional ID column) of an Arrow
// IPC file (.arrow, .feather v2, .ipc) or, when the file does not start with
// the file magic, an IPC stream. The file is memory-mapped where possible
// and read record batch by record batch.
func ReadArrow(ctx context.Context, path string, opts Options) (t *Table, err error) {
	defer recoverMalformed(path, ipcKind, &t, &err)
	// A mapped file shrunk by another process faults on access; make that
	// a recoverable panic instead of a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	// Everything returned is copied out of the mapping, so it goes now.
	defer func() {
		if uerr := unmap(); uerr != nil && err == nil {
			t, err = nil, &formats.Error{Path: path, Msg: "cannot unmap file", Err: uerr}
		}
	}()
	return readIPC(ctx, path, data, opts)
}

func readIPC(ctx context.Context, path string, data []byte, opts Options) (*Table, error) {
	switch {
	case len(data) == 0:
		return nil, formats.Errorf(path, "truncated Arrow IPC file: empty")
	case bytes.HasPrefix(data, []byte("FEA1")):
		return nil, formats.Errorf(path, "malformed Arrow IPC file: Feather v1 is not supported; rewrite it as Feather v2")
	case bytes.HasPrefix(data, ipcMagic) || bytes.HasPrefix(ipcMagic, data):
		if len(data) < 8+4+len(ipcMagic) || !bytes.HasSuffix(data, ipcMagic) {
			return nil, formats.Errorf(path, "truncated Arrow IPC file: footer missing")
		}
		return readIPCFile(ctx, path, data, opts)
	}
	return readIPCStream(ctx, path, data, opts)
}

func readIPCFile(ctx context.Context, path string, data []byte, opts Options) (*Table, error) {
	st, err := scanFile(data)
	if err != nil {
		return nil, metaError(path, err)
	}
	// A bytes.Reader (rather than NewMappedFileReader) makes the library
	// copy each batch out of the mapping; its mapped mode also leaves the
	// dictionary memo uninitialised and panics on dictionary columns.
	fr, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, libError(path, ipcKind, err)
	}
	defer fr.Close()
	s, sel, err := ipcSink(path, fr.Schema(), opts, st)
	if err != nil {
		return nil, err
	}
	for i := range fr.NumRecords() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, err := fr.RecordBatchAt(i)
		if err != nil {
			return nil, libError(path, ipcKind, err)
		}
		err = s.add(rec, sel.emb, sel.id)
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	return s.finish()
}

func readIPCStream(ctx context.Context, path string, data []byte, opts Options) (*Table, error) {
	st, err := scanStream(data)
	if err != nil {
		return nil, metaError(path, err)
	}
	r, err := ipc.NewReader(bytes.NewReader(data), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, libError(path, ipcKind, err)
	}
	defer r.Release()
	s, sel, err := ipcSink(path, r.Schema(), opts, st)
	if err != nil {
		return nil, err
	}
	for r.Next() {
		if err := s.add(r.RecordBatch(), sel.emb, sel.id); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, libError(path, ipcKind, err)
	}
	return s.finish()
}

func ipcSink(path string, sc *arrow.Schema, opts Options, st *ipcStats) (*sink, selection, error) {
	sel, err := selectColumns(path, sc, opts)
	if err != nil {
		return nil, sel, err
	}
	// Each row takes at least a list offset or one value of some buffer.
	s, err := newSink(path, sc, sel, st.rows, st.bufBytes, st.bufBytes/int64(sel.dtype.Size()))
	return s, sel, err
}

// metaError reports a failure to walk the IPC metadata.
func metaError(path string, err error) error {
	msg := "malformed Arrow IPC file"
	if errors.Is(err, errTruncated) {
		msg = "truncated Arrow IPC file"
	}
	return &formats.Error{Path: path, Msg: msg, Err: err}
}

// WriteArrow writes m (and ids, when idColumn is not "") as an Arrow IPC
// file with at most batchRows rows per record batch (<= 0: one batch). The
// embedding column is a fixed-size list when fixedSize, else a list. w is
// not closed.
func WriteArrow(w io.Writer, column string, m *matrix.Dense, idColumn string, ids []string, batchRows int, fixedSize bool) error {
	var fw *ipc.FileWriter
	err := eachChunk(column, m, idColumn, ids, batchRows, fixedSize, func(rec arrow.RecordBatch) error {
		if fw == nil {
			var err error
			if fw, err = ipc.NewFileWriter(w, ipc.WithSchema(rec.Schema())); err != nil {
				return err
			}
		}
		if rec.NumRows() == 0 {
			return nil // the schema alone describes an empty file
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
