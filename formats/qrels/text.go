package qrels

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/formats"
)

// readBufSize is the bufio buffer size for all readers; lines may be longer,
// the line reader grows as needed.
const readBufSize = 64 << 10

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// openFile opens path for reading, reporting failures as input-file errors.
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

// rejectBOM fails on a leading UTF-8 byte order mark. IDs are compared
// byte-exactly, so a BOM would silently become part of the first ID.
func rejectBOM(path string, br *bufio.Reader) error {
	b, _ := br.Peek(len(utf8BOM)) // a short or failed peek is reported by the next read
	if bytes.Equal(b, utf8BOM) {
		return formats.LineErrorf(path, 1, "file starts with a UTF-8 byte order mark; IDs are compared byte-exactly, so save the file without one")
	}
	return nil
}

// lineReader yields the lines of a text file with one trailing LF or CRLF
// removed. Unlike bufio.Scanner it has no line-length limit.
type lineReader struct {
	br   *bufio.Reader
	path string
	line int // 1-based number of the line last returned
}

// next returns the next line; ok is false at the end of the input. An empty
// remainder after the last LF is not a line.
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

// lineErr attaches a file line to an error, keeping it as the cause.
func lineErr(path string, line int, err error) error {
	return &formats.Error{Path: path, Line: line, Err: err}
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// quote renders s as a JSON string literal for messages (SPEC §1.3),
// shortening very long values so one bad line cannot flood the terminal.
func quote(s string) string {
	const max = 200
	suffix := ""
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, suffix = s[:cut], "..."
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil { // cannot happen for a string
		return strconv.Quote(s) + suffix
	}
	return strings.TrimSuffix(b.String(), "\n") + suffix
}

// errMalformedGrade marks a grade field that is not a decimal number.
var errMalformedGrade = errors.New("not a decimal number")

// parseNumber parses a grade field as decimal floating point. Go's hexadecimal
// and underscore forms are refused; "nan" and "inf" spellings parse (so the
// caller can report them as non-finite grades, not as syntax errors).
func parseNumber(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "xX_") {
		return 0, errMalformedGrade
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return v, nil // ±Inf on overflow (rejected as non-finite), 0 on underflow
		}
		return 0, errMalformedGrade
	}
	return v, nil
}

// isNumber reports whether a TSV/CSV field parses as a number; a first row
// whose grade field does not is a header.
func isNumber(s string) bool {
	_, err := parseNumber(s)
	return err == nil
}

// gradeError is the SPEC §2.4 message for a bad grade value.
func gradeError(path string, line int, text, qid, gid string) error {
	return formats.LineErrorf(path, line,
		"Relevance grades must be finite and non-negative; got %s for query %s, gallery %s",
		shorten(strings.TrimSpace(text)), quote(qid), quote(gid))
}

// parseGrade parses and validates the grade field of a record.
func parseGrade(path string, line int, text, qid, gid string) (float64, error) {
	v, err := parseNumber(text)
	if err != nil {
		return 0, formats.LineErrorf(path, line, "malformed grade %s for query %s, gallery %s: %v",
			quote(text), quote(qid), quote(gid), err)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, gradeError(path, line, text, qid, gid)
	}
	return v + 0, nil // -0 becomes +0
}

// shorten cuts an unquoted value for messages.
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

// jsonObject decodes one JSONL line that must hold a single JSON object whose
// keys are exactly want (no extras, no duplicates, none missing). Keys match
// case-sensitively, unlike encoding/json's struct decoding. Values are the
// decoder's scalar tokens: string, json.Number, bool or nil.
func jsonObject(line string, want ...string) (map[string]any, error) {
	if !utf8.ValidString(line) {
		// encoding/json would silently replace the bad bytes with U+FFFD.
		return nil, errors.New("malformed JSON line: invalid UTF-8")
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("malformed JSON line: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("malformed JSON line: expected an object with keys %s", keyList(want))
	}
	got := make(map[string]any, len(want))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("malformed JSON line: %w", err)
		}
		key, _ := tok.(string) // object keys are always strings
		if !slices.Contains(want, key) {
			return nil, fmt.Errorf("unexpected key %s; the object must have exactly the keys %s", quote(key), keyList(want))
		}
		if _, dup := got[key]; dup {
			return nil, fmt.Errorf("duplicate key %s", quote(key))
		}
		off := dec.InputOffset()
		val, err := dec.Token()
		if err != nil {
			if lit, ok := nonFiniteLiteral(line[off:]); ok {
				return nil, nonFiniteJSON{key: key, lit: lit}
			}
			return nil, fmt.Errorf("malformed JSON line: %w", err)
		}
		if _, nested := val.(json.Delim); nested {
			return nil, fmt.Errorf("%s must not be an array or object", quote(key))
		}
		got[key] = val
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("malformed JSON line: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("malformed JSON line: unexpected data after the object")
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			return nil, fmt.Errorf("missing key %s; the object must have exactly the keys %s", quote(k), keyList(want))
		}
	}
	return got, nil
}

// nonFiniteJSON reports a NaN/Infinity literal (as Python's json module
// writes them) so a grade gets the §2.4 message instead of a syntax error.
type nonFiniteJSON struct{ key, lit string }

func (e nonFiniteJSON) Error() string {
	return fmt.Sprintf("%s is %s, which is not valid JSON", quote(e.key), e.lit)
}

// nonFiniteLiteral recognises a value position (": NaN", ": -Infinity", ...)
// holding a non-finite number spelling.
func nonFiniteLiteral(rest string) (string, bool) {
	rest = strings.TrimLeft(rest, " \t\r\n")
	rest, ok := strings.CutPrefix(rest, ":")
	if !ok {
		return "", false
	}
	rest = strings.TrimLeft(rest, " \t\r\n")
	end := strings.IndexAny(rest, ",} \t\r\n")
	if end < 0 {
		end = len(rest)
	}
	lit := rest[:end]
	v, err := parseNumber(lit)
	if err != nil || !(math.IsNaN(v) || math.IsInf(v, 0)) {
		return "", false
	}
	return lit, true
}

// jsonID converts a JSON ID value: strings as they are, integers in decimal.
func jsonID(key string, v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		s := string(v)
		if strings.ContainsAny(s, ".eE") {
			return "", fmt.Errorf("%s must be a JSON string or integer; got %s", key, shorten(s))
		}
		if s == "-0" {
			return "0", nil
		}
		return s, nil // JSON forbids leading zeros and '+', so this is canonical decimal
	}
	return "", fmt.Errorf("%s must be a JSON string or integer; got %s", key, jsonKind(v))
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case string:
		return "a string"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func keyList(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = quote(k)
	}
	return strings.Join(q, ", ")
}
