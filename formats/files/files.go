package files

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/columnar"
	"github.com/vertebrae-eval/vertebrae/formats/idlist"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/formats/qrels"
	"github.com/vertebrae-eval/vertebrae/formats/safetensors"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// OptionError is a reading option that does not fit the file (an ID column
// for a format without columns, an unknown qrels format): the caller's
// configuration is wrong, not the file. The CLI exits 2 for it.
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return e.Msg }

func optionf(format string, args ...any) error {
	return &OptionError{Msg: fmt.Sprintf(format, args...)}
}

// Closers collects what must be released once a matrix is no longer used
// (a mapping, an open file); Close releases them in reverse order.
type Closers []func() error

// Add registers f.
func (c *Closers) Add(f func() error) { *c = append(*c, f) }

// Close runs every registered function, last first, and forgets them.
func (c *Closers) Close() {
	for i := len(*c) - 1; i >= 0; i-- {
		_ = (*c)[i]()
	}
	*c = nil
}

// ReadMatrix reads an embedding file chosen by extension (SPEC §6.4.1);
// tensor names the array of a multi-array file. Large .npy files are
// memory-mapped: the matrix is valid until closers run.
func ReadMatrix(ctx context.Context, path, tensor string, closers *Closers) (matrix.Matrix, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		if tensor != "" {
			return nil, formats.Errorf(path, "a .npy file holds one array; --*-tensor does not apply")
		}
		m, closeFn, err := npy.MapMatrix(path)
		if err != nil {
			return nil, err
		}
		closers.Add(closeFn)
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
		t, err := readColumnar(ctx, path, tensor, "")
		if err != nil {
			return nil, err
		}
		return t.Matrix, nil
	case ".safetensors":
		f, err := safetensors.Open(path)
		if err != nil {
			return nil, err
		}
		closers.Add(f.Close)
		return f.Matrix(tensor)
	}
	return nil, formats.Errorf(path, "unsupported embedding file format %q (supported: .npy, .npz, .safetensors, .parquet, .arrow, .feather, .ipc)", filepath.Ext(path))
}

// IsColumnar reports whether path is a Parquet or Arrow IPC file.
func IsColumnar(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".arrow", ".feather", ".ipc":
		return true
	}
	return false
}

// ReadEndpoint reads an embedding file and, for Parquet/Arrow, the IDs held
// in idColumn (nil otherwise). An ID column is only valid for those formats.
func ReadEndpoint(ctx context.Context, path, tensor, idColumn string, closers *Closers) (matrix.Matrix, []string, error) {
	if !IsColumnar(path) {
		if idColumn != "" {
			return nil, nil, optionf("--*-id-column applies to Parquet/Arrow files only; %s is not one", path)
		}
		m, err := ReadMatrix(ctx, path, tensor, closers)
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

// ReadRelevance reads a qrels file in any form of SPEC §6.4.3; format ""
// chooses it from the extension.
func ReadRelevance(ctx context.Context, path, format string) (retrieval.Relevance, error) {
	var f qrels.Format
	var err error
	if format != "" {
		if f, err = qrels.ParseFormat(format); err != nil {
			return nil, optionf("--qrels-format: %v", err)
		}
	} else if f, err = qrels.FormatFromPath(path); err != nil {
		return nil, optionf("--qrels %s: %v (set --qrels-format)", path, err)
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

// ReadLabels reads a label file (SPEC §6.4.4): one label per line, or a
// 1-D .npy array of integers or Unicode strings.
func ReadLabels(ctx context.Context, path string) ([]string, error) {
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

// ReadExclusions reads an exclusion file (SPEC §6.4.5).
func ReadExclusions(ctx context.Context, path string) ([]retrieval.Pair, error) {
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

// ReadTexts reads raw texts (SPEC §6.4.6): .txt one per line, or .jsonl
// with a JSON string or an object with a "text" field per line (an "_id" or
// "id" field gives the row's ID, as in BEIR's corpus.jsonl). The IDs are
// nil unless every row carries one.
func ReadTexts(path string) (texts, ids []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, &formats.Error{Path: path, Msg: "cannot open file", Err: err}
	}
	defer f.Close()
	return parseTexts(path, f)
}

// parseTexts is ReadTexts on r; path names the file in errors and gives
// the format by its extension.
func parseTexts(path string, r io.Reader) (texts, ids []string, err error) {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".jsonl" && ext != ".ndjson" {
		texts, err := idlist.ParseLabels(path, ".txt", r)
		return texts, nil, err
	}
	idLine := map[string]int{} // first line of each _id/id, for duplicates
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, nil, formats.LineErrorf(path, line, "malformed JSON line: %v", err)
		}
		switch t := v.(type) {
		case string:
			texts = append(texts, t)
		case map[string]any:
			text, ok := t["text"].(string)
			if !ok {
				return nil, nil, formats.LineErrorf(path, line, `object has no string "text" field`)
			}
			if title, _ := t["title"].(string); title != "" {
				text = title + " " + text
			}
			texts = append(texts, text)
			id, _ := t["_id"].(string)
			if id == "" {
				id, _ = t["id"].(string)
			}
			if prev, dup := idLine[id]; dup && id != "" {
				return nil, nil, formats.LineErrorf(path, line, "duplicate _id %s (first at line %d); IDs must be unique", msgfmt.Quote(id), prev)
			}
			idLine[id] = line
			ids = append(ids, id)
		default:
			return nil, nil, formats.LineErrorf(path, line, "each line must be a JSON string or an object with a text field")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, &formats.Error{Path: path, Msg: "read failed", Err: err}
	}
	if len(ids) != len(texts) || slices.Contains(ids, "") {
		ids = nil // IDs only when every row carries one
	}
	return texts, ids, nil
}

// ReadImageList reads a .txt list of image paths; relative paths resolve
// against the list file's directory.
func ReadImageList(path string) ([]string, error) {
	paths, err := idlist.ReadIDs(path)
	if err != nil {
		return nil, err
	}
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			paths[i] = filepath.Join(filepath.Dir(path), p)
		}
	}
	return paths, nil
}
