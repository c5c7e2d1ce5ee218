package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/columnar"
	"github.com/vertebrae-eval/vertebrae/formats/idlist"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/formats/qrels"
	"github.com/vertebrae-eval/vertebrae/formats/safetensors"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// readEmbeddings reads an embedding file chosen by extension (SPEC §6.4.1).
// Large .npy files are memory-mapped: the matrix is valid until closer runs.
func readEmbeddings(path, tensor string, closers *[]func() error) (matrix.Matrix, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		if tensor != "" {
			return nil, formats.Errorf(path, "a .npy file holds one array; --*-tensor does not apply")
		}
		m, closeFn, err := npy.MapMatrix(path)
		if err != nil {
			return nil, err
		}
		*closers = append(*closers, closeFn)
		return m, nil
	case ".npz":
		a, err := npz.Open(path)
		if err != nil {
			return nil, err
		}
		if a.IsSparse() {
			if _, err := a.SparseFormat(); err != nil {
				return nil, err
			}
			return a.CSRMatrix()
		}
		return a.DenseMatrix(tensor)
	case ".parquet", ".arrow", ".feather", ".ipc":
		t, err := readColumnar(context.Background(), path, tensor, "")
		if err != nil {
			return nil, err
		}
		return t.Matrix, nil
	case ".safetensors":
		f, err := safetensors.Open(path)
		if err != nil {
			return nil, err
		}
		*closers = append(*closers, f.Close)
		return f.Matrix(tensor)
	}
	return nil, formats.Errorf(path, "unsupported embedding file format %q (supported: .npy, .npz, .safetensors, .parquet, .arrow, .feather, .ipc)", filepath.Ext(path))
}

// isColumnar reports whether path is a Parquet or Arrow IPC file.
func isColumnar(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".arrow", ".feather", ".ipc":
		return true
	}
	return false
}

// readEndpoint reads an embedding file and, for Parquet/Arrow, the IDs held
// in idColumn (nil otherwise). An ID column is only valid for those formats.
func readEndpoint(ctx context.Context, path, tensor, idColumn string, closers *[]func() error) (matrix.Matrix, []string, error) {
	if !isColumnar(path) {
		if idColumn != "" {
			return nil, nil, usagef("--*-id-column applies to Parquet/Arrow files only; %s is not one", path)
		}
		m, err := readEmbeddings(path, tensor, closers)
		return m, nil, err
	}
	t, err := readColumnar(ctx, path, tensor, idColumn)
	if err != nil {
		return nil, nil, err
	}
	return t.Matrix, t.IDs, nil
}

// readColumnar reads a Parquet or Arrow IPC embedding column (and IDs).
func readColumnar(ctx context.Context, path, column, idColumn string) (*columnar.Table, error) {
	opts := columnar.Options{Column: column, IDColumn: idColumn}
	if strings.ToLower(filepath.Ext(path)) == ".parquet" {
		return columnar.ReadParquet(ctx, path, opts)
	}
	return columnar.ReadArrow(ctx, path, opts)
}

// readRelevance reads a qrels file in any form of SPEC §6.4.3.
func readRelevance(ctx context.Context, path, format string) (retrieval.Relevance, error) {
	var f qrels.Format
	var err error
	if format != "" {
		if f, err = qrels.ParseFormat(format); err != nil {
			return nil, usagef("--qrels-format: %v", err)
		}
	} else if f, err = qrels.FormatFromPath(path); err != nil {
		return nil, usagef("--qrels %s: %v (set --qrels-format)", path, err)
	}
	switch f {
	case qrels.NPY:
		a, err := npy.ReadArray(path)
		if err != nil {
			return nil, err
		}
		if len(a.Shape) != 2 {
			return nil, formats.Errorf(path, "dense relevance must be a 2D array; got shape %v", a.Shape)
		}
		if a.Kind == 'U' {
			return nil, formats.Errorf(path, "unsupported dtype %s for relevance", a.Descr)
		}
		rows, cols := a.Shape[0], a.Shape[1]
		m := make([][]float64, rows)
		for i := range m {
			m[i] = make([]float64, cols)
			for j := range m[i] {
				if a.Kind == 'f' {
					m[i][j] = a.Floats[i*cols+j]
				} else {
					m[i][j] = float64(a.Ints[i*cols+j])
				}
			}
		}
		return retrieval.DenseRelevance(m), nil
	case qrels.NPZ:
		a, err := npz.Open(path)
		if err != nil {
			return nil, err
		}
		s, err := a.CSRRelevance()
		if err != nil {
			return nil, err
		}
		return retrieval.CSRRelevance(retrieval.SparseRelevance{Rows: s.Rows, Cols: s.Cols, Indptr: s.Indptr, Indices: s.Indices, Data: s.Data}), nil
	}
	recs, err := qrels.ReadRecordsContext(ctx, path, f)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 { // else every query would be reported as lacking a positive
		return nil, formats.Errorf(path, "no relevance records: the file is empty (or holds only comments and blank lines)")
	}
	out := make([]retrieval.Record, len(recs))
	for i, r := range recs {
		out[i] = retrieval.Record{QueryID: r.QueryID, GalleryID: r.GalleryID, Grade: r.Grade, Origin: fmt.Sprintf("%s:%d", path, r.Line)}
	}
	return retrieval.RecordRelevance(out), nil
}

// readLabels reads a label file (SPEC §6.4.4).
func readLabels(ctx context.Context, path string) ([]string, error) {
	if strings.ToLower(filepath.Ext(path)) != ".npy" {
		return idlist.ReadLabelsContext(ctx, path)
	}
	a, err := npy.ReadArray(path)
	if err != nil {
		return nil, err
	}
	if len(a.Shape) != 1 {
		return nil, formats.Errorf(path, "label-derived relevance is single-label; got a %d-D label array", len(a.Shape))
	}
	switch a.Kind {
	case 'U':
		return a.Strings, nil
	case 'i', 'u':
		out := make([]string, len(a.Ints))
		for i, v := range a.Ints {
			out[i] = strconv.FormatInt(v, 10)
		}
		return out, nil
	}
	return nil, formats.Errorf(path, "unsupported dtype %s for labels (want integers or Unicode strings)", a.Descr)
}

// readExclusions reads an exclusion file (SPEC §6.4.5).
func readExclusions(ctx context.Context, path string) ([]retrieval.Pair, error) {
	ps, err := qrels.ReadExclusionsContext(ctx, path)
	if err != nil {
		return nil, err
	}
	out := make([]retrieval.Pair, len(ps))
	for i, p := range ps {
		out[i] = retrieval.Pair{QueryID: p.QueryID, GalleryID: p.GalleryID, Origin: fmt.Sprintf("%s:%d", path, p.Line)}
	}
	return out, nil
}

// relevanceSources are the files a dataset's relevance came from.
type relevanceSources struct{ qrels, queryLabels, galleryLabels string }

// nameSource adds the file to dataset errors about relevance that carry no
// file or line of their own (matrix forms and labels; record forms already
// name "path:line").
func (src relevanceSources) nameSource(err error) error {
	var inv *retrieval.InvalidError
	if err == nil || !errors.As(err, &inv) {
		return err
	}
	msg := inv.Error()
	switch {
	case src.qrels != "" && (strings.HasPrefix(msg, "Dense relevance") || strings.HasPrefix(msg, "Sparse relevance") ||
		strings.HasPrefix(msg, "Relevance grades must be finite and non-negative (query")):
		return fmt.Errorf("%s: %w", src.qrels, err)
	case src.queryLabels != "" && strings.Contains(msg, "labels must"):
		files := src.queryLabels
		if src.galleryLabels != "" && src.galleryLabels != src.queryLabels {
			files += ", " + src.galleryLabels
		}
		return fmt.Errorf("%s: %w", files, err)
	}
	return err
}
