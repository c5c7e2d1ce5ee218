package qrels

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats"
)

// Record is one relevance judgement read from a text qrels file.
type Record struct {
	QueryID, GalleryID string
	Grade              float64
	Line               int // 1-based line in the file (first line of a CSV record)
}

// Format names a qrels file format.
type Format string

// Qrels formats (SPEC §6.4.3).
const (
	TREC  Format = "trec"
	TSV   Format = "tsv"
	CSV   Format = "csv"
	JSONL Format = "jsonl"
	NPY   Format = "npy"
	NPZ   Format = "npz"
)

// IsText reports whether f is a record format read by ReadRecords.
func (f Format) IsText() bool {
	switch f {
	case TREC, TSV, CSV, JSONL:
		return true
	}
	return false
}

var formatByExt = map[string]Format{
	".qrels":  TREC,
	".trec":   TREC,
	".txt":    TREC,
	".tsv":    TSV,
	".csv":    CSV,
	".jsonl":  JSONL,
	".ndjson": JSONL,
	".npy":    NPY,
	".npz":    NPZ,
}

// FormatFromPath picks the format from the file extension, case-insensitively.
func FormatFromPath(path string) (Format, error) {
	ext := strings.ToLower(filepath.Ext(path))
	if f, ok := formatByExt[ext]; ok {
		return f, nil
	}
	return "", formats.Errorf(path,
		"unsupported qrels file format %q; use .qrels/.trec/.txt (trec), .tsv, .csv, .jsonl/.ndjson, .npy or .npz, or name the format explicitly", ext)
}

// ParseFormat parses a format name such as "trec" (case-insensitive).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case TREC, TSV, CSV, JSONL, NPY, NPZ:
		return f, nil
	}
	return "", fmt.Errorf("unknown qrels format %q; want one of trec, tsv, csv, jsonl, npy, npz", s)
}

// ReadRecords reads a text qrels file. An empty f means FormatFromPath(path).
func ReadRecords(path string, f Format) ([]Record, error) {
	return ReadRecordsContext(context.Background(), path, f)
}

// ReadRecordsContext is ReadRecords that stops with ctx's error (wrapped
// in a *formats.Error) once ctx is done.
func ReadRecordsContext(ctx context.Context, path string, f Format) ([]Record, error) {
	if f == "" {
		var err error
		if f, err = FormatFromPath(path); err != nil {
			return nil, err
		}
	}
	if !f.IsText() { // fail before opening: this is a caller error, not a file error
		return nil, notText(f)
	}
	file, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return ParseRecords(path, f, formats.ContextReader(ctx, file))
}

// ParseRecords parses a text qrels stream; path is used in messages only.
func ParseRecords(path string, f Format, r io.Reader) ([]Record, error) {
	if !f.IsText() {
		return nil, notText(f)
	}
	br := bufio.NewReaderSize(r, readBufSize)
	if err := rejectBOM(path, br); err != nil {
		return nil, err
	}
	switch f {
	case TREC:
		return parseTREC(path, br)
	case TSV:
		return parseTSV(path, br)
	case CSV:
		return parseCSV(path, br)
	default:
		return parseJSONL(path, br)
	}
}

func notText(f Format) error {
	if f == NPY || f == NPZ {
		return fmt.Errorf("qrels: %s is a matrix format; read it with the array readers, not as records", f)
	}
	return fmt.Errorf("qrels: unknown format %q", string(f))
}

// parseTREC reads "qid iter docid grade" lines. Fields are split on Unicode
// white space, the same set WriteQrels refuses inside IDs.
func parseTREC(path string, br *bufio.Reader) ([]Record, error) {
	lr := &lineReader{br: br, path: path}
	var recs []Record
	for {
		s, ok, err := lr.next()
		if err != nil || !ok {
			return recs, err
		}
		fields := strings.Fields(s)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue // blank line or comment
		}
		if len(fields) != 4 {
			return nil, formats.LineErrorf(path, lr.line,
				"malformed TREC qrels line: expected 4 whitespace-separated fields (qid iter docid grade), got %d", len(fields))
		}
		g, err := parseGrade(path, lr.line, fields[3], fields[0], fields[2])
		if err != nil {
			return nil, err
		}
		recs = append(recs, Record{QueryID: fields[0], GalleryID: fields[2], Grade: g, Line: lr.line})
	}
}

// parseTSV reads tab-separated "query_id gallery_id grade" rows or 4-field
// rows in TREC order; the first data row fixes which.
func parseTSV(path string, br *bufio.Reader) ([]Record, error) {
	lr := &lineReader{br: br, path: path}
	var (
		recs      []Record
		width     int // fields per row, fixed by the first data row
		widthLine int
		first     = true
	)
	for {
		s, ok, err := lr.next()
		if err != nil || !ok {
			return recs, err
		}
		if isBlank(s) {
			continue
		}
		fields := strings.Split(s, "\t")
		n := len(fields)
		if n != 3 && n != 4 {
			return nil, formats.LineErrorf(path, lr.line,
				"malformed TSV qrels line: expected 3 tab-separated fields (query_id gallery_id grade) or 4 (qid iter docid grade), got %d", n)
		}
		if first {
			first = false
			if !isNumber(fields[n-1]) {
				continue // header row
			}
		}
		if width == 0 {
			width, widthLine = n, lr.line
		} else if n != width {
			return nil, formats.LineErrorf(path, lr.line,
				"malformed TSV qrels line: expected %d tab-separated fields like the first data row (line %d), got %d", width, widthLine, n)
		}
		qid, gid := fields[0], fields[1]
		if n == 4 {
			gid = fields[2]
		}
		g, err := parseGrade(path, lr.line, fields[n-1], qid, gid)
		if err != nil {
			return nil, err
		}
		recs = append(recs, Record{QueryID: qid, GalleryID: gid, Grade: g, Line: lr.line})
	}
}

// parseCSV reads RFC 4180 "query_id,gallery_id,grade" records.
func parseCSV(path string, br *bufio.Reader) ([]Record, error) {
	cr := newCSVReader(br)
	var recs []Record
	for first := true; ; first = false {
		fields, line, err := readCSV(path, cr)
		if err != nil || fields == nil {
			return recs, err
		}
		if len(fields) != 3 {
			return nil, formats.LineErrorf(path, line,
				"malformed CSV qrels record: expected 3 fields (query_id,gallery_id,grade), got %d", len(fields))
		}
		if first && !isNumber(fields[2]) {
			continue // header row
		}
		g, err := parseGrade(path, line, fields[2], fields[0], fields[1])
		if err != nil {
			return nil, err
		}
		recs = append(recs, Record{QueryID: fields[0], GalleryID: fields[1], Grade: g, Line: line})
	}
}

func newCSVReader(r io.Reader) *csv.Reader {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // field counts are checked here, with a clearer message
	cr.ReuseRecord = true   // the strings themselves are not reused
	return cr
}

// readCSV returns the next record and its first line; nil fields at EOF.
func readCSV(path string, cr *csv.Reader) ([]string, int, error) {
	fields, err := cr.Read()
	if err == io.EOF {
		return nil, 0, nil
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, 0, &formats.Error{Path: path, Line: pe.Line, Msg: "malformed CSV", Err: pe.Err}
		}
		return nil, 0, &formats.Error{Path: path, Msg: "read failed", Err: err}
	}
	line, _ := cr.FieldPos(0)
	return fields, line, nil
}

var recordKeys = []string{"query_id", "gallery_id", "grade"}

// parseJSONL reads one {"query_id", "gallery_id", "grade"} object per line.
func parseJSONL(path string, br *bufio.Reader) ([]Record, error) {
	lr := &lineReader{br: br, path: path}
	var recs []Record
	for {
		s, ok, err := lr.next()
		if err != nil || !ok {
			return recs, err
		}
		if isBlank(s) {
			continue
		}
		obj, err := jsonObject(s, recordKeys...)
		if err != nil {
			var nf nonFiniteJSON
			if errors.As(err, &nf) && nf.key == "grade" {
				return nil, formats.LineErrorf(path, lr.line, "Relevance grades must be finite and non-negative; got %s", shorten(nf.lit))
			}
			return nil, lineErr(path, lr.line, err)
		}
		qid, err := jsonID("query_id", obj["query_id"])
		if err != nil {
			return nil, lineErr(path, lr.line, err)
		}
		gid, err := jsonID("gallery_id", obj["gallery_id"])
		if err != nil {
			return nil, lineErr(path, lr.line, err)
		}
		num, ok := obj["grade"].(json.Number)
		if !ok {
			return nil, formats.LineErrorf(path, lr.line, "grade must be a JSON number; got %s", jsonKind(obj["grade"]))
		}
		g, err := parseGrade(path, lr.line, string(num), qid, gid)
		if err != nil {
			return nil, err
		}
		recs = append(recs, Record{QueryID: qid, GalleryID: gid, Grade: g, Line: lr.line})
	}
}
