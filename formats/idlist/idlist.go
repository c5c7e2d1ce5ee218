package idlist

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
)

const readBufSize = 64 << 10

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// ReadIDs reads an ID file: one ID per line, or for .jsonl/.ndjson one JSON
// object per line whose "_id" (BEIR's queries.jsonl and corpus.jsonl) or
// "id" field holds the ID, or a bare JSON string or integer.
func ReadIDs(path string) ([]string, error) {
	return ReadIDsContext(context.Background(), path)
}

// ReadIDsContext is ReadIDs that stops with ctx's error (wrapped in a
// *formats.Error) once ctx is done.
func ReadIDsContext(ctx context.Context, path string) ([]string, error) {
	file, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	f := formats.ContextReader(ctx, file)
	switch normExt(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return ParseJSONIDs(path, f)
	case ".tsv":
		return ParseTSVIDs(path, f)
	}
	return ParseIDs(path, f)
}

// idHeaders are first-column names that mark a TSV ID file's header row.
var idHeaders = map[string]bool{"id": true, "_id": true, "query-id": true, "corpus-id": true, "query_id": true, "gallery_id": true, "doc_id": true}

// ParseTSVIDs reads the first TAB-separated column of each line as the ID
// (a side file that carries IDs next to other columns); a first row whose
// first field is a usual ID column name (id, _id, query-id, corpus-id, …)
// is a header and skipped.
func ParseTSVIDs(path string, r io.Reader) ([]string, error) {
	lines, err := parseLines(path, "IDs", r)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(lines))
	for i, l := range lines {
		id, _, _ := strings.Cut(l, "\t")
		if i == 0 && idHeaders[id] {
			continue
		}
		if id == "" {
			return nil, formats.LineErrorf(path, i+1, "empty first column: IDs must be non-empty UTF-8 strings")
		}
		out = append(out, id)
	}
	return out, nil
}

// ParseJSONIDs reads IDs from JSON Lines (see ReadIDs); other fields of an
// object are ignored, blank lines skipped.
func ParseJSONIDs(path string, r io.Reader) ([]string, error) {
	return parseJSONLines(path, "IDs", r, jsonID)
}

// parseJSONLines reads one value per non-blank line with parse, naming the
// file and line of the first bad one.
func parseJSONLines(path, what string, r io.Reader, parse func(string) (string, error)) ([]string, error) {
	lr, err := newLineReader(path, what, r)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for {
		s, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if strings.TrimSpace(s) == "" {
			continue
		}
		v, err := parse(s)
		if err != nil {
			return nil, lineErr(path, lr.line, err)
		}
		out = append(out, v)
	}
}

func jsonID(line string) (string, error) {
	if !utf8.ValidString(line) {
		return "", errors.New("malformed JSON line: invalid UTF-8")
	}
	trimmed := strings.TrimSpace(line)
	if !strings.HasPrefix(trimmed, "{") {
		id, err := jsonLabel(line) // a bare string or integer
		if err != nil {
			return "", errors.New(strings.ReplaceAll(err.Error(), "label", "ID"))
		}
		return id, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(trimmed), &obj); err != nil {
		return "", fmt.Errorf("malformed JSON line: %w", err)
	}
	raw, ok := obj["_id"]
	if !ok {
		if raw, ok = obj["id"]; !ok {
			return "", errors.New(`object has neither an "_id" nor an "id" field`)
		}
	}
	id, err := jsonLabel(string(raw))
	if err != nil {
		return "", errors.New(strings.ReplaceAll(err.Error(), "label", "ID"))
	}
	return id, nil
}

// ParseIDs parses an ID stream; path is used in messages only. An empty
// stream gives an empty list (the dataset rejects empty ID lists).
func ParseIDs(path string, r io.Reader) ([]string, error) {
	return parseLines(path, "IDs", r)
}

// ReadLabels reads a label file; the extension (case-insensitive) selects
// the syntax: .txt or .jsonl/.ndjson. .npy label files are read by the array
// readers.
func ReadLabels(path string) ([]string, error) {
	return ReadLabelsContext(context.Background(), path)
}

// ReadLabelsContext is ReadLabels that stops with ctx's error (wrapped in
// a *formats.Error) once ctx is done.
func ReadLabelsContext(ctx context.Context, path string) ([]string, error) {
	ext := filepath.Ext(path)
	if err := checkLabelExt(path, ext); err != nil {
		return nil, err
	}
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseLabels(path, ext, formats.ContextReader(ctx, f))
}

// ParseLabels parses a label stream in the syntax named by ext (".txt",
// ".jsonl" or ".ndjson"; the dot is optional, case is ignored); path is used
// in messages only.
func ParseLabels(path string, ext string, r io.Reader) ([]string, error) {
	if err := checkLabelExt(path, ext); err != nil {
		return nil, err
	}
	switch normExt(ext) {
	case ".txt":
		return parseLines(path, "labels", r)
	default:
		return parseJSONLabels(path, r)
	}
}

func normExt(ext string) string {
	return "." + strings.TrimPrefix(strings.ToLower(ext), ".")
}

func checkLabelExt(path, ext string) error {
	switch normExt(ext) {
	case ".txt", ".jsonl", ".ndjson":
		return nil
	case ".npy":
		return formats.Errorf(path, ".npy label files are read by the array reader, not as text")
	}
	return formats.Errorf(path, "unsupported label file format %q; use .txt, .jsonl/.ndjson or .npy", ext)
}

func openFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already part of formats.Error
		}
		return nil, &formats.Error{Path: path, Msg: "cannot open file", Err: err}
	}
	return f, nil
}

// lineReader yields lines with one trailing LF or CRLF removed and nothing
// else. Unlike bufio.Scanner it has no line-length limit. An empty remainder
// after the last LF is not a line.
type lineReader struct {
	br   *bufio.Reader
	path string
	line int // 1-based number of the line last returned
}

func newLineReader(path, what string, r io.Reader) (*lineReader, error) {
	br := bufio.NewReaderSize(r, readBufSize)
	// IDs are compared byte-exactly, so a BOM would silently become part of
	// the first one (SPEC §6.4.2).
	if b, _ := br.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
		return nil, formats.LineErrorf(path, 1, "file starts with a UTF-8 byte order mark; %s are compared byte-exactly, so save the file without one", what)
	}
	return &lineReader{br: br, path: path}, nil
}

func (lr *lineReader) next() (s string, ok bool, err error) {
	s, err = lr.br.ReadString('\n')
	if err != nil && err != io.EOF {
		return "", false, &formats.Error{Path: lr.path, Line: lr.line + 1, Msg: "read failed", Err: err}
	}
	if s == "" {
		return "", false, nil
	}
	lr.line++
	if strings.HasSuffix(s, "\n") {
		s = strings.TrimSuffix(s[:len(s)-1], "\r")
	}
	return s, true, nil
}

// parseLines reads one value per line; what ("IDs" or "labels") names the
// values in messages.
func parseLines(path, what string, r io.Reader) ([]string, error) {
	lr, err := newLineReader(path, what, r)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for {
		s, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if err := checkValue(what, s); err != nil {
			return nil, lineErr(path, lr.line, err)
		}
		out = append(out, s)
	}
}

func checkValue(what, s string) error {
	if s == "" {
		return fmt.Errorf("empty line: %s must be non-empty UTF-8 strings", what)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("invalid UTF-8: %s must be non-empty UTF-8 strings", what)
	}
	return nil
}

func lineErr(path string, line int, err error) error {
	return &formats.Error{Path: path, Line: line, Err: err}
}

// parseJSONLabels reads one JSON string or integer per line; blank lines are
// skipped.
func parseJSONLabels(path string, r io.Reader) ([]string, error) {
	return parseJSONLines(path, "labels", r, jsonLabel)
}

func jsonLabel(line string) (string, error) {
	if !utf8.ValidString(line) {
		// encoding/json would silently replace the bad bytes with U+FFFD.
		return "", errors.New("malformed JSON line: invalid UTF-8")
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("malformed JSON line: %w", err)
	}
	var label string
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "", errors.New("label is a JSON array, but label-derived relevance is single-label: give one string or integer per line")
		}
		return "", errors.New("label must be a JSON string or integer; got an object")
	case string:
		label = v
	case json.Number:
		s := string(v)
		if strings.ContainsAny(s, ".eE") {
			return "", fmt.Errorf("label must be a JSON string or integer; got %s", shorten(s))
		}
		if s == "-0" {
			s = "0"
		}
		label = s // JSON forbids leading zeros and '+', so this is canonical decimal
	case bool:
		return "", fmt.Errorf("label must be a JSON string or integer; got %s", strconv.FormatBool(v))
	default:
		return "", errors.New("label must be a JSON string or integer; got null")
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", errors.New("malformed JSON line: unexpected data after the label")
	}
	if label == "" {
		return "", errors.New("empty string: labels must be non-empty UTF-8 strings")
	}
	return label, nil
}

// shorten cuts a value for messages.
func shorten(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Check applies the SPEC §2.2 rules to the IDs of one endpoint side
// ("query", "gallery") read from source (an ID file, "file column C", or
// an argument of the C ABI), so the message names where they came from:
// not empty, unique, no carriage return. A file source adds the hint for
// CR-only line endings. nil IDs (row numbers) pass.
func Check(side, source string, ids []string, fromFile bool) error {
	if ids == nil {
		return nil
	}
	if len(ids) == 0 {
		what := "the list"
		if fromFile {
			what = "the file"
		}
		return formats.Errorf(source, "%s IDs must not be empty: %s holds no IDs", side, what)
	}
	first := make(map[string]int, len(ids))
	for i, id := range ids {
		if strings.ContainsRune(id, '\r') {
			hint := ""
			if fromFile {
				hint = fmt.Sprintf("; hint: the file seems to use CR-only (classic Mac) line endings: convert them to LF, e.g. tr '\\r' '\\n' < %s", source)
			}
			return formats.Errorf(source, "%s ID %d (%s) contains a carriage return%s", side, i, msgfmt.Quote(id), hint)
		}
		if j, dup := first[id]; dup {
			return formats.Errorf(source, "%s IDs must be unique; %s appears at index %d and %d", side, msgfmt.Quote(id), j, i)
		}
		first[id] = i
	}
	return nil
}
