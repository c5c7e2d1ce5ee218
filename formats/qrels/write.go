package qrels

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode"

	"github.com/vertebrae-eval/vertebrae/internal/numfmt"
)

// WriteQrels writes recs as TREC qrels lines "<query_id> 0 <gallery_id>
// <grade>" (SPEC §5.6) in the given order. Every record is checked before
// anything is written, so a bad ID leaves w untouched.
func WriteQrels(w io.Writer, recs []Record) error {
	for i, r := range recs {
		if err := checkID("query", r.QueryID); err != nil {
			return fmt.Errorf("qrels record %d: %w", i, err)
		}
		if strings.HasPrefix(r.QueryID, "#") {
			// The TREC reader skips such lines as comments; refuse rather
			// than write a file that loses the record when read back.
			return fmt.Errorf("qrels record %d: query ID %s starts with '#'; cannot be written to a TREC file (it would read back as a comment)", i, quote(r.QueryID))
		}
		if err := checkID("gallery", r.GalleryID); err != nil {
			return fmt.Errorf("qrels record %d: %w", i, err)
		}
		if math.IsNaN(r.Grade) || math.IsInf(r.Grade, 0) || r.Grade < 0 {
			return fmt.Errorf("qrels record %d: Relevance grades must be finite and non-negative; got %v for query %s, gallery %s",
				i, r.Grade, quote(r.QueryID), quote(r.GalleryID))
		}
	}
	bw := bufio.NewWriter(w)
	var buf []byte
	for _, r := range recs {
		buf = append(buf[:0], r.QueryID...)
		buf = append(buf, " 0 "...)
		buf = append(buf, r.GalleryID...)
		buf = append(buf, ' ')
		buf = appendGrade(buf, r.Grade)
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func checkID(side, id string) error {
	if id == "" {
		return fmt.Errorf("%s ID is empty; cannot be written to a TREC file", side)
	}
	if strings.IndexFunc(id, unicode.IsSpace) >= 0 {
		return fmt.Errorf("%s ID %s contains whitespace; cannot be written to a TREC file", side, quote(id))
	}
	return nil
}

// appendGrade appends g in the shortest form that round-trips, exactly as
// encoding/json formats a float64 (SPEC §1.3): integral values carry no
// fraction, and exponents are used only below 1e-6 or from 1e21 on.
// Zero is written as "0" (never "-0").
func appendGrade(b []byte, g float64) []byte {
	return numfmt.AppendJSON(b, g+0, 64) // g+0 turns −0 into +0
}
