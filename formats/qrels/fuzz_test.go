package qrels

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode"

	"github.com/vertebrae-eval/vertebrae/formats"
)

var textFormats = []Format{TREC, TSV, CSV, JSONL}

func FuzzParseRecords(f *testing.F) {
	for _, s := range []string{
		"q1 0 d1 1\n# c\n\nq2 0 d2 2.5\r\n",
		"query_id\tgallery_id\tgrade\nq\td\t1\n",
		"q\t0\td\t1\nq\t0\te\tnan\n",
		"query_id,gallery_id,grade\n\"a,b\",c,1e-300\n",
		`{"query_id":1,"gallery_id":"d","grade":0.5}` + "\n",
		`{"query_id":"q","gallery_id":"d","grade":NaN}`,
		"\ufeffq 0 d 1",
		"q 0 d -0\nq 0 d 1e400\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range textFormats {
			recs, err := ParseRecords("f", fm, bytes.NewReader(data))
			if err != nil {
				var fe *formats.Error
				if !errors.As(err, &fe) || fe.Path != "f" || fe.Line < 1 {
					t.Fatalf("%s: error %q is not a line error", fm, err)
				}
				continue
			}
			prev := 0
			for _, r := range recs {
				if math.IsNaN(r.Grade) || math.IsInf(r.Grade, 0) || r.Grade < 0 || math.Signbit(r.Grade) {
					t.Fatalf("%s: bad grade %v accepted", fm, r.Grade)
				}
				if r.Line <= prev {
					t.Fatalf("%s: line numbers not increasing: %d after %d", fm, r.Line, prev)
				}
				prev = r.Line
			}
			roundTrip(t, recs)
		}
	})
}

// roundTrip checks that records WriteQrels accepts read back unchanged.
func roundTrip(t *testing.T, recs []Record) {
	var buf bytes.Buffer
	if err := WriteQrels(&buf, recs); err != nil {
		return
	}
	if len(recs) > 0 && strings.HasPrefix(recs[0].QueryID, "\ufeff") {
		return // the reader refuses a leading byte order mark
	}
	back, err := ParseRecords("out", TREC, &buf)
	if err != nil {
		t.Fatalf("written qrels do not read back: %v", err)
	}
	if len(back) != len(recs) {
		t.Fatalf("read back %d records, wrote %d", len(back), len(recs))
	}
	for i := range recs {
		if back[i].QueryID != recs[i].QueryID || back[i].GalleryID != recs[i].GalleryID || back[i].Grade != recs[i].Grade {
			t.Fatalf("record %d: read back %v, wrote %v", i, back[i], recs[i])
		}
	}
}

func FuzzParseExclusions(f *testing.F) {
	for _, s := range []string{
		"query_id gallery_id\nq d\n\nq\te\r\n",
		"query_id,gallery_id\n\"q,1\",d\n",
		`{"query_id":1,"gallery_id":"d"}` + "\n",
		"q d e\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, path := range []string{"ex.txt", "ex.csv", "ex.jsonl"} {
			pairs, err := ParseExclusions(path, bytes.NewReader(data))
			if err != nil {
				var fe *formats.Error
				if !errors.As(err, &fe) || fe.Path != path || fe.Line < 1 {
					t.Fatalf("%s: error %q is not a line error", path, err)
				}
				continue
			}
			for _, p := range pairs {
				if p.Line < 1 {
					t.Fatalf("%s: pair %v without a line", path, p)
				}
				if path == "ex.txt" && (p.QueryID == "" || strings.IndexFunc(p.QueryID, unicode.IsSpace) >= 0 || strings.IndexFunc(p.GalleryID, unicode.IsSpace) >= 0) {
					t.Fatalf("%s: pair %+v not split on white space", path, p)
				}
			}
		}
	})
}

func FuzzAppendGrade(f *testing.F) {
	for _, v := range []float64{0, 1, 2.5, 1e-7, 1e21, 5e-324} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		checkGradeJSON(t, v)
	})
}
