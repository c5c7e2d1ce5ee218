package report

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/vertebrae-eval/vertebrae/formats/qrels"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/internal/numfmt"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// ErrRunFileCollision is returned by RunTargets when two result names map
// to the same run file.
var ErrRunFileCollision = errors.New("run file name collision")

// RunTag is the TREC run tag of a result: its name with every whitespace
// character replaced by '_' (SPEC §5.6).
func RunTag(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, name)
}

// RunFileName is the file name of a result's run in a multi-result export:
// every character outside [A-Za-z0-9._-] becomes '_', plus ".run".
func RunFileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, name) + ".run"
}

// RunTargets returns the run file of each result, aligned with rs: with one
// result it is path itself; with several, path is a directory and result i
// goes to <path>/RunFileName(name). Names that map to the same file fail
// with ErrRunFileCollision.
func RunTargets(rs []*results.ExtractorResult, path string) ([]string, error) {
	if len(rs) == 1 {
		return []string{path}, nil
	}
	out := make([]string, len(rs))
	owner := make(map[string]string, len(rs))
	for i, r := range rs {
		file := RunFileName(r.Name)
		if prev, ok := owner[file]; ok {
			return nil, fmt.Errorf("%w: results %s and %s both map to %s",
				ErrRunFileCollision, msgfmt.Quote(prev), msgfmt.Quote(r.Name), msgfmt.Quote(file))
		}
		owner[file] = r.Name
		out[i] = filepath.Join(path, file)
	}
	return out, nil
}

// TRECRun writes a direction's ranking as TREC run lines
// "<query_id> Q0 <gallery_id> <rank> <score> <tag>" (SPEC §5.6), queries in
// order and candidates in the given rank order. Scores use the shortest
// form that round-trips (the float32 value when r.Float32). Every line is
// checked before anything is written, so an unwritable ID leaves w untouched.
func TRECRun(w io.Writer, r *results.Run, tag string) error {
	tag = RunTag(tag)
	if tag == "" {
		return errors.New("TREC run: empty run tag")
	}
	if len(r.Candidates) > len(r.QueryIDs) {
		return fmt.Errorf("TREC run: %d candidate lists for %d queries", len(r.Candidates), len(r.QueryIDs))
	}
	checked := make([]bool, len(r.GalleryIDs))
	for q, cs := range r.Candidates {
		if len(cs) > 0 {
			if err := checkTRECID("query", r.QueryIDs[q]); err != nil {
				return err
			}
		}
		for _, c := range cs {
			if c.Index < 0 || c.Index >= len(r.GalleryIDs) {
				return fmt.Errorf("TREC run: gallery index %d out of range [0, %d)", c.Index, len(r.GalleryIDs))
			}
			if !finite(c.Score) {
				return fmt.Errorf("TREC run: non-finite score %v for query %s", c.Score, msgfmt.Quote(r.QueryIDs[q]))
			}
			if !checked[c.Index] {
				if err := checkTRECID("gallery", r.GalleryIDs[c.Index]); err != nil {
					return err
				}
				checked[c.Index] = true
			}
		}
	}
	bits := 64
	if r.Float32 {
		bits = 32
	}
	bw := bufio.NewWriter(w)
	var line []byte
	for q, cs := range r.Candidates {
		for i, c := range cs {
			line = append(line[:0], r.QueryIDs[q]...)
			line = append(line, " Q0 "...)
			line = append(line, r.GalleryIDs[c.Index]...)
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(i+1), 10)
			line = append(line, ' ')
			line = appendScore(line, c.Score, bits)
			line = append(line, ' ')
			line = append(line, tag...)
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// appendScore writes a score in the JSON number form, which is the
// shortest round-trip decimal and parses with trec_eval's atof. bits 32
// rounds to the float32 value first so its shortest form is used; −0
// becomes 0 (SPEC §1.3).
func appendScore(b []byte, s float64, bits int) []byte {
	if bits == 32 {
		s = float64(float32(s))
	}
	if s == 0 {
		s = 0
	}
	return numfmt.AppendJSON(b, s, bits)
}

// TRECQrels writes the eligible relevance as TREC qrels lines
// "<query_id> 0 <gallery_id> <grade>" (SPEC §5.6): queries in order, each
// query's eligible positives (eligible(q)) in their ascending gallery order,
// grades formatted as JSON numbers. It streams one query at a time, so
// label-derived relevance (up to Q·G pairs) is never held whole, and stops
// at ctx's cancellation between queries. A bad record stops the write
// with an error naming it; callers write to a staged file (SPEC §6.1).
func TRECQrels(ctx context.Context, w io.Writer, queryIDs, galleryIDs []string, eligible func(q int) []retrieval.Positive) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var recs []qrels.Record
	for q, qid := range queryIDs {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs = recs[:0]
		for _, p := range eligible(q) {
			if p.Index < 0 || p.Index >= len(galleryIDs) {
				return fmt.Errorf("TREC qrels: query %s: gallery index %d out of range [0, %d)", msgfmt.Quote(qid), p.Index, len(galleryIDs))
			}
			recs = append(recs, qrels.Record{QueryID: qid, GalleryID: galleryIDs[p.Index], Grade: p.Grade})
		}
		if err := qrels.WriteQrels(bw, recs); err != nil {
			return fmt.Errorf("TREC qrels: query %s: %w", msgfmt.Quote(qid), err)
		}
	}
	return bw.Flush()
}

// checkTRECID rejects IDs that would break the whitespace-separated format.
func checkTRECID(side, id string) error {
	if id == "" {
		return fmt.Errorf("%s ID is empty; cannot be written to a TREC file", side)
	}
	if strings.IndexFunc(id, unicode.IsSpace) >= 0 {
		return fmt.Errorf("%s ID %s contains whitespace; cannot be written to a TREC file", side, msgfmt.Quote(id))
	}
	return nil
}
