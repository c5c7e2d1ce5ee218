package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

var npyMagic = []byte("\x93NUMPY")

// rowIndex maps a row's position in a batch to its endpoint index, for
// messages: a modulo shard's batch holds rows N apart (extract.Batch.Row).
type rowIndex func(i int) int

// from is the rowIndex of a contiguous batch starting at endpoint row start.
func from(start int) rowIndex { return func(i int) int { return start + i } }

// parseNPY decodes a single 2-D float .npy array with one row per ID; row
// gives the endpoint index of each row.
func parseNPY(out []byte, row rowIndex, ids []string) (*matrix.Dense, error) {
	m, err := npy.DecodeMatrix("stdout", out)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	// DecodeMatrix refuses trailing bytes (npy.ErrTrailing): a program that
	// printed something after the array is reported, not half-read.
	if m.Rows() != len(ids) {
		return nil, fmt.Errorf("returned %d embeddings for %d rows", m.Rows(), len(ids))
	}
	if m.Cols() == 0 {
		return nil, fmt.Errorf("%w: .npy array has zero columns", ErrMalformed)
	}
	if r, c, bad := matrix.FirstNonFinite(m); bad {
		return nil, fmt.Errorf("row %d (ID %q) must contain only finite numeric values; column %d is %v",
			row(r), ids[r], c, m.At(r, c))
	}
	return m, nil
}

// parseJSONL decodes one embedding per non-blank line. Rows past len(ids)
// are only counted, so the row-count error reports the true number.
func parseJSONL(out []byte, row rowIndex, ids []string) (*matrix.Dense, error) {
	n := len(ids)
	var data []float64
	width, widthLine := 0, 0
	rows := 0
	for lineNo := 1; len(out) > 0; lineNo++ {
		line := out
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			line, out = out[:i], out[i+1:]
		} else {
			out = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if rows >= n {
			rows++
			continue
		}
		vals, err := parseLine(line, row(rows), ids[rows])
		if err != nil {
			return nil, fmt.Errorf("output line %d: %w", lineNo, err)
		}
		if rows == 0 {
			width, widthLine = len(vals), lineNo
			// Each further value takes at least two bytes ("0,"), which
			// bounds the allocation by what the program actually wrote.
			data = make([]float64, 0, width*min(n, 1+len(out)/(2*width)))
		} else if len(vals) != width {
			return nil, fmt.Errorf("output line %d: %w: ragged rows: %d values, line %d has %d",
				lineNo, ErrMalformed, len(vals), widthLine, width)
		}
		data = append(data, vals...)
		rows++
	}
	if rows != n {
		return nil, fmt.Errorf("returned %d embeddings for %d rows", rows, n)
	}
	return matrix.NewDense64(n, width, data)
}

// parseLine decodes `[numbers]` or `{"embedding": [numbers]}` for the row
// with endpoint index and ID id. An object's optional "index" and "id" must
// match, which catches programs that reorder rows.
func parseLine(line []byte, index int, id string) ([]float64, error) {
	arr := line
	if line[0] == '{' {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			return nil, jsonError(line, err)
		}
		emb, ok := obj["embedding"]
		if !ok {
			return nil, fmt.Errorf("%w: object has no \"embedding\" field", ErrMalformed)
		}
		if raw, ok := obj["index"]; ok {
			var got int
			if err := json.Unmarshal(raw, &got); err != nil || got != index {
				return nil, fmt.Errorf("%w: \"index\" is %s, expected %d (rows must be in input order)", ErrMalformed, clip(raw), index)
			}
		}
		if raw, ok := obj["id"]; ok {
			var got string
			if err := json.Unmarshal(raw, &got); err != nil || got != id {
				return nil, fmt.Errorf("%w: \"id\" is %s, expected %q (rows must be in input order)", ErrMalformed, clip(raw), id)
			}
		}
		arr = bytes.TrimSpace(emb)
	}
	// Checked here because json.Unmarshal accepts null as an empty slice.
	if len(arr) == 0 || arr[0] != '[' {
		return nil, fmt.Errorf("%w: want a JSON array of numbers or {\"embedding\": [...]}; got %s", ErrMalformed, clip(arr))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(arr, &elems); err != nil {
		return nil, jsonError(arr, err)
	}
	if len(elems) == 0 {
		return nil, fmt.Errorf("%w: empty embedding", ErrMalformed)
	}
	vals := make([]float64, len(elems))
	for j, raw := range elems {
		raw = bytes.TrimSpace(raw)
		// A JSON number starts with '-' or a digit; anything else ("NaN" as
		// a string, null, true) is not a number.
		if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return nil, fmt.Errorf("%w: column %d is not a number: %s", ErrMalformed, j, clip(raw))
		}
		v, err := strconv.ParseFloat(string(raw), 64)
		if math.IsInf(v, 0) {
			return nil, fmt.Errorf("row %d (ID %q) must contain only finite numeric values; column %d (%s) overflows float64",
				index, id, j, clip(raw))
		}
		// A range error without infinity is underflow to zero or a
		// subnormal, which any float parser would accept.
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%w: column %d: %w", ErrMalformed, j, err)
		}
		vals[j] = v
	}
	return vals, nil
}

// jsonError describes a JSON syntax error; Python's json module writes NaN
// and Infinity bare, which is the most likely cause worth pointing out.
func jsonError(line []byte, err error) error {
	hint := ""
	if bytes.Contains(line, []byte("NaN")) || bytes.Contains(line, []byte("Infinity")) {
		hint = " (NaN and Infinity are not JSON numbers; embeddings must be finite)"
	}
	return fmt.Errorf("%w: %v in %s%s", ErrMalformed, err, clip(line), hint)
}

// clip shortens b for messages.
func clip(b []byte) string {
	const max = 40
	if len(b) > max {
		return strings.ToValidUTF8(string(b[:max]), "\uFFFD") + "..."
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// maxReplyError bounds the part of an {"error": ...} reply quoted in errors.
const maxReplyError = 2048

// parseReply decodes a persistent worker's answer to batch n, either
// {"batch": n, "embeddings": [[numbers], ...]} with one row per ID (a row may
// also be {"embedding": [...]}, as in JSON Lines output) or {"batch": n,
// "error": "message"}, which yields an error wrapping ErrWorkerReply. row
// gives the endpoint index of each row. Numbers are parsed exactly as in the
// per-batch JSON Lines output, so both modes give the same float64 bits.
func parseReply(line []byte, n int, row rowIndex, ids []string) (*matrix.Dense, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("%w: reply is not a JSON object: %s", ErrMalformed, clip(line))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return nil, jsonError(line, err)
	}
	raw, ok := obj["batch"]
	if !ok {
		return nil, fmt.Errorf("%w: reply has no \"batch\" field: %s", ErrMalformed, clip(line))
	}
	var got int
	if err := json.Unmarshal(raw, &got); err != nil || got != n {
		return nil, fmt.Errorf("%w: reply is for batch %s, expected %d (one reply per request, in order)", ErrMalformed, clip(raw), n)
	}
	if raw, ok := obj["error"]; ok && !bytes.Equal(raw, []byte("null")) {
		var msg string
		if err := json.Unmarshal(raw, &msg); err != nil {
			msg = string(raw)
		}
		msg = strings.ToValidUTF8(msg, "\uFFFD")
		if len(msg) > maxReplyError {
			msg = strings.ToValidUTF8(msg[:maxReplyError], "") + "..."
		}
		return nil, fmt.Errorf("%w: %s", ErrWorkerReply, msg)
	}
	raw, ok = obj["embeddings"]
	if !ok {
		return nil, fmt.Errorf("%w: reply has neither \"embeddings\" nor \"error\"", ErrMalformed)
	}
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("%w: \"embeddings\" must be an array of rows; got %s", ErrMalformed, clip(raw))
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, jsonError(raw, err)
	}
	if len(rows) != len(ids) {
		return nil, fmt.Errorf("returned %d embeddings for %d rows", len(rows), len(ids))
	}
	if len(rows) == 0 {
		return matrix.NewDense64(0, 0, nil)
	}
	var data []float64
	width := 0
	for i, r := range rows {
		vals, err := parseLine(bytes.TrimSpace(r), row(i), ids[i])
		if err != nil {
			return nil, fmt.Errorf("embeddings[%d]: %w", i, err)
		}
		if i == 0 {
			width = len(vals)
			// Each value takes at least two bytes ("0,"): the reply's
			// size bounds the allocation.
			data = make([]float64, 0, width*min(len(rows), 1+len(raw)/(2*width)))
		} else if len(vals) != width {
			return nil, fmt.Errorf("embeddings[%d]: %w: ragged rows: %d values, row 0 has %d", i, ErrMalformed, len(vals), width)
		}
		data = append(data, vals...)
	}
	return matrix.NewDense64(len(rows), width, data)
}
