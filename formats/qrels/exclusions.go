package qrels

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats"
)

// Pair is one (query ID, gallery ID) exclusion read from a file.
type Pair struct {
	QueryID, GalleryID string
	Line               int // 1-based line in the file (first line of a CSV record)
}

// ReadExclusions reads an exclusion file (SPEC §6.4.5); the extension picks
// the syntax: .csv, .jsonl/.ndjson, anything else white-space separated.
func ReadExclusions(path string) ([]Pair, error) {
	return ReadExclusionsContext(context.Background(), path)
}

// ReadExclusionsContext is ReadExclusions that stops with ctx's error
// (wrapped in a *formats.Error) once ctx is done.
func ReadExclusionsContext(ctx context.Context, path string) ([]Pair, error) {
	file, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return ParseExclusions(path, formats.ContextReader(ctx, file))
}

// ParseExclusions parses an exclusion stream; path selects the syntax by its
// extension and names the file in messages.
func ParseExclusions(path string, r io.Reader) ([]Pair, error) {
	br := bufio.NewReaderSize(r, readBufSize)
	if err := rejectBOM(path, br); err != nil {
		return nil, err
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return parseExclusionsCSV(path, br)
	case ".jsonl", ".ndjson":
		return parseExclusionsJSONL(path, br)
	default:
		return parseExclusionsText(path, br)
	}
}

func isPairHeader(fields []string) bool {
	return len(fields) == 2 && fields[0] == "query_id" && fields[1] == "gallery_id"
}

func parseExclusionsText(path string, br *bufio.Reader) ([]Pair, error) {
	lr := &lineReader{br: br, path: path}
	var pairs []Pair
	for first := true; ; {
		s, ok, err := lr.next()
		if err != nil || !ok {
			return pairs, err
		}
		fields := strings.Fields(s)
		if len(fields) == 0 {
			continue
		}
		if first {
			first = false
			if isPairHeader(fields) {
				continue
			}
		}
		if len(fields) != 2 {
			return nil, formats.LineErrorf(path, lr.line,
				"malformed exclusion line: expected 2 whitespace-separated fields (query_id gallery_id), got %d", len(fields))
		}
		pairs = append(pairs, Pair{QueryID: fields[0], GalleryID: fields[1], Line: lr.line})
	}
}

func parseExclusionsCSV(path string, br *bufio.Reader) ([]Pair, error) {
	cr := newCSVReader(br)
	var pairs []Pair
	for first := true; ; first = false {
		fields, line, err := readCSV(path, cr)
		if err != nil || fields == nil {
			return pairs, err
		}
		if first && isPairHeader(fields) {
			continue
		}
		if len(fields) != 2 {
			return nil, formats.LineErrorf(path, line,
				"malformed CSV exclusion record: expected 2 fields (query_id,gallery_id), got %d", len(fields))
		}
		pairs = append(pairs, Pair{QueryID: fields[0], GalleryID: fields[1], Line: line})
	}
}

var pairKeys = []string{"query_id", "gallery_id"}

func parseExclusionsJSONL(path string, br *bufio.Reader) ([]Pair, error) {
	lr := &lineReader{br: br, path: path}
	var pairs []Pair
	for {
		s, ok, err := lr.next()
		if err != nil || !ok {
			return pairs, err
		}
		if isBlank(s) {
			continue
		}
		obj, err := jsonObject(s, pairKeys...)
		if err != nil {
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
		pairs = append(pairs, Pair{QueryID: qid, GalleryID: gid, Line: lr.line})
	}
}
