package qrels

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats"
)

func TestFormatFromPath(t *testing.T) {
	tests := []struct {
		path string
		want Format
	}{
		{"a.qrels", TREC}, {"a.trec", TREC}, {"dir.x/a.TXT", TREC},
		{"a.tsv", TSV}, {"a.CSV", CSV}, {"a.jsonl", JSONL}, {"a.NDJSON", JSONL},
		{"a.npy", NPY}, {"a.Npz", NPZ},
	}
	for _, tt := range tests {
		got, err := FormatFromPath(tt.path)
		if err != nil || got != tt.want {
			t.Errorf("FormatFromPath(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
	for _, p := range []string{"a.json", "a", "a.qrels.gz"} {
		if _, err := FormatFromPath(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("FormatFromPath(%q): err = %v, want an error naming the file", p, err)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, s := range []string{"trec", "TSV", "csv", "jsonl", "npy", "npz"} {
		if f, err := ParseFormat(s); err != nil || string(f) != strings.ToLower(s) {
			t.Errorf("ParseFormat(%q) = %q, %v", s, f, err)
		}
	}
	for _, s := range []string{"", "json", "ndjson", "qrels"} {
		if _, err := ParseFormat(s); err == nil {
			t.Errorf("ParseFormat(%q): want error", s)
		}
	}
}

func rec(q, g string, grade float64, line int) Record {
	return Record{QueryID: q, GalleryID: g, Grade: grade, Line: line}
}

func TestParseRecords(t *testing.T) {
	tests := []struct {
		name string
		f    Format
		in   string
		want []Record
	}{
		{"trec", TREC, "q1 0 d1 1\nq1 0 d2 2.5\n", []Record{rec("q1", "d1", 1, 1), rec("q1", "d2", 2.5, 2)}},
		{"trec tabs blank comment", TREC, "# header\n\nq1\t0  d1 \t 0\n   \n#q2 0 d1 1\nq2 Q0 d3 1e-300", []Record{rec("q1", "d1", 0, 3), rec("q2", "d3", 1e-300, 6)}},
		{"trec crlf", TREC, "q1 0 d1 1\r\nq2 0 d2 3\r\n", []Record{rec("q1", "d1", 1, 1), rec("q2", "d2", 3, 2)}},
		{"trec negative zero", TREC, "q 0 d -0\n", []Record{rec("q", "d", 0, 1)}},
		{"trec underflow", TREC, "q 0 d 1e-400\n", []Record{rec("q", "d", 0, 1)}},
		{"trec empty", TREC, "", nil},
		{"tsv 3 fields", TSV, "q1\td1\t1\nq 2\t d2\t0.5\n", []Record{rec("q1", "d1", 1, 1), rec("q 2", " d2", 0.5, 2)}},
		{"tsv header", TSV, "query_id\tgallery_id\tgrade\nq1\td1\t1\n", []Record{rec("q1", "d1", 1, 2)}},
		{"tsv 4 fields", TSV, "q1\t0\td1\t2\nq1\tQ0\td2\t1\n", []Record{rec("q1", "d1", 2, 1), rec("q1", "d2", 1, 2)}},
		{"tsv 4 field header", TSV, "qid\titer\tdocid\trel\n\nq1\t0\td1\t2\n", []Record{rec("q1", "d1", 2, 3)}},
		{"tsv 3 field header, 4 field rows", TSV, "a\tb\tc\nq\t0\td\t1\n", []Record{rec("q", "d", 1, 2)}},
		{"tsv crlf", TSV, "q1\td1\t1\r\nq2\td2\t2\r\n", []Record{rec("q1", "d1", 1, 1), rec("q2", "d2", 2, 2)}},
		{"tsv numeric first row is data", TSV, "1\t2\t3\n", []Record{rec("1", "2", 3, 1)}},
		{"csv", CSV, "query_id,gallery_id,grade\nq1,d1,1\n\"q,2\",\"d \"\"2\"\"\",2\n", []Record{rec("q1", "d1", 1, 2), rec("q,2", `d "2"`, 2, 3)}},
		{"csv no header", CSV, "q1,d1,1\r\nq2,d2,0.25\r\n", []Record{rec("q1", "d1", 1, 1), rec("q2", "d2", 0.25, 2)}},
		{"csv multiline field keeps start line", CSV, "q1,d1,1\n\"a\nb\",d2,1\nq3,d3,1\n", []Record{rec("q1", "d1", 1, 1), rec("a\nb", "d2", 1, 2), rec("q3", "d3", 1, 4)}},
		{"csv spaces kept", CSV, " q1 , d1 , 1 \n", []Record{rec(" q1 ", " d1 ", 1, 1)}},
		{"jsonl", JSONL, `{"query_id":"q1","gallery_id":"d1","grade":1}` + "\n\n" + `{"grade": 0.5, "gallery_id": 7, "query_id": -0}` + "\r\n",
			[]Record{rec("q1", "d1", 1, 1), rec("0", "7", 0.5, 3)}},
		{"jsonl big integer id", JSONL, `{"query_id":123456789012345678901234567890,"gallery_id":"x","grade":2}`, []Record{rec("123456789012345678901234567890", "x", 2, 1)}},
		{"jsonl unicode", JSONL, `{"query_id":"\u00e9 é","gallery_id":" x ","grade":1e0}`, []Record{rec("é é", " x ", 1, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRecords("rel", tt.f, strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v\nwant %#v", got, tt.want)
			}
			for _, r := range got {
				if math.Signbit(r.Grade) {
					t.Errorf("grade %v has its sign bit set", r.Grade)
				}
			}
		})
	}
}

func TestParseRecordsErrors(t *testing.T) {
	const finite = "Relevance grades must be finite and non-negative"
	tests := []struct {
		name string
		f    Format
		in   string
		line int
		frag []string
	}{
		{"trec 3 fields", TREC, "q 0 d 1\nq 0 d\n", 2, []string{"expected 4", "got 3"}},
		{"trec 5 fields", TREC, "\n\nq 0 d 1 x\n", 3, []string{"got 5"}},
		{"trec negative", TREC, "q 0 d -1\n", 1, []string{finite, `"q"`, `"d"`, "-1"}},
		{"trec nan", TREC, "q 0 d 1\nq 0 e NaN\n", 2, []string{finite}},
		{"trec nan lower", TREC, "q 0 d nan\n", 1, []string{finite}},
		{"trec inf", TREC, "q 0 d inf\n", 1, []string{finite}},
		{"trec -infinity", TREC, "q 0 d -Infinity\n", 1, []string{finite}},
		{"trec overflow", TREC, "q 0 d 1e400\n", 1, []string{finite}},
		{"trec abc", TREC, "q 0 d abc\n", 1, []string{"malformed grade", `"abc"`}},
		{"trec hex", TREC, "q 0 d 0x1p3\n", 1, []string{"malformed grade"}},
		{"trec underscore", TREC, "q 0 d 1_0\n", 1, []string{"malformed grade"}},
		{"bom", TREC, "\ufeffq 0 d 1\n", 1, []string{"byte order mark"}},
		{"tsv mixed field counts", TSV, "q\td\t1\nq\t0\te\t1\n", 2, []string{"expected 3", "line 1", "got 4"}},
		{"tsv mixed 4 then 3", TSV, "h1\th2\th3\th4\nq\t0\te\t1\nq\te\t1\n", 3, []string{"expected 4", "line 2"}},
		{"tsv 2 fields", TSV, "q\td\n", 1, []string{"got 2"}},
		{"tsv space separated", TSV, "q d 1\n", 1, []string{"got 1"}},
		{"tsv bad grade after header", TSV, "a\tb\tc\nq\td\tabc\n", 2, []string{"malformed grade"}},
		{"tsv nan first row", TSV, "q\td\tNaN\n", 1, []string{finite}},
		{"tsv negative", TSV, "q\td\t1\r\nq\td\t-0.5\r\n", 2, []string{finite}},
		{"tsv 4 field bad grade", TSV, "q\t0\td\t1\nq\t0\td\t-inf\n", 2, []string{finite}},
		{"csv 2 fields", CSV, "q,d,1\nq,d\n", 2, []string{"expected 3", "got 2"}},
		{"csv 4 fields", CSV, "q,0,d,1\n", 1, []string{"got 4"}},
		{"csv bare quote", CSV, "q,d,1\nq,d\"x,1\n", 2, []string{"malformed CSV"}},
		{"csv unterminated quote", CSV, "q,d,1\n\"q,d,1\n", 2, []string{"malformed CSV"}},
		{"csv inf", CSV, "query_id,gallery_id,grade\nq,d,+Inf\n", 2, []string{finite}},
		{"jsonl extra key", JSONL, `{"query_id":"q","gallery_id":"d","grade":1,"x":2}`, 1, []string{`unexpected key "x"`}},
		{"jsonl key case", JSONL, `{"Query_ID":"q","gallery_id":"d","grade":1}`, 1, []string{`unexpected key "Query_ID"`}},
		{"jsonl duplicate key", JSONL, `{"query_id":"q","query_id":"r","gallery_id":"d","grade":1}`, 1, []string{`duplicate key "query_id"`}},
		{"jsonl missing key", JSONL, "\n" + `{"query_id":"q","gallery_id":"d"}`, 2, []string{`missing key "grade"`}},
		{"jsonl float id", JSONL, `{"query_id":1.5,"gallery_id":"d","grade":1}`, 1, []string{"query_id must be a JSON string or integer"}},
		{"jsonl exponent id", JSONL, `{"query_id":"q","gallery_id":1e3,"grade":1}`, 1, []string{"gallery_id must be a JSON string or integer"}},
		{"jsonl null id", JSONL, `{"query_id":null,"gallery_id":"d","grade":1}`, 1, []string{"query_id must be a JSON string or integer; got null"}},
		{"jsonl array id", JSONL, `{"query_id":["q"],"gallery_id":"d","grade":1}`, 1, []string{`"query_id" must not be an array or object`}},
		{"jsonl string grade", JSONL, `{"query_id":"q","gallery_id":"d","grade":"1"}`, 1, []string{"grade must be a JSON number"}},
		{"jsonl negative grade", JSONL, `{"query_id":"q","gallery_id":"d","grade":-2}`, 1, []string{finite}},
		{"jsonl python NaN", JSONL, `{"query_id":"q","gallery_id":"d","grade":NaN}`, 1, []string{finite, "NaN"}},
		{"jsonl python -Infinity", JSONL, `{"query_id":"q","gallery_id":"d","grade": -Infinity }`, 1, []string{finite}},
		{"jsonl NaN id", JSONL, `{"query_id":NaN,"gallery_id":"d","grade":1}`, 1, []string{"not valid JSON"}},
		{"jsonl not object", JSONL, `["q","d",1]`, 1, []string{"expected an object"}},
		{"jsonl trailing data", JSONL, `{"query_id":"q","gallery_id":"d","grade":1} x`, 1, []string{"malformed JSON"}},
		{"jsonl two objects", JSONL, `{"query_id":"q","gallery_id":"d","grade":1}{}`, 1, []string{"unexpected data"}},
		{"jsonl truncated", JSONL, `{"query_id":"q","gallery_id":"d"`, 1, []string{"malformed JSON"}},
		{"jsonl trailing comma", JSONL, `{"query_id":"q","gallery_id":"d","grade":1,}`, 1, []string{"malformed JSON"}},
		{"jsonl invalid utf8", JSONL, "{\"query_id\":\"q\xff\",\"gallery_id\":\"d\",\"grade\":1}", 1, []string{"invalid UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRecords("rel.txt", tt.f, strings.NewReader(tt.in))
			checkLineError(t, err, "rel.txt", tt.line, tt.frag...)
		})
	}
}

// checkLineError asserts err is a *formats.Error for path:line containing frags.
func checkLineError(t *testing.T, err error, path string, line int, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("want error, got nil")
	}
	var fe *formats.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %q (%T) is not a *formats.Error", err, err)
	}
	if fe.Path != path || fe.Line != line {
		t.Errorf("error %q: want %s:%d", err, path, line)
	}
	msg := err.Error()
	if want := path + ":"; !strings.HasPrefix(msg, want) {
		t.Errorf("error %q does not start with %q", msg, want)
	}
	for _, f := range frags {
		if !strings.Contains(msg, f) {
			t.Errorf("error %q does not contain %q", msg, f)
		}
	}
}

func TestParseRecordsLongLine(t *testing.T) {
	id := strings.Repeat("x", 1<<20)
	in := "q 0 d 1\n" + id + " 0 d 1\n"
	got, err := ParseRecords("rel", TREC, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].QueryID != id || got[1].Line != 2 {
		t.Fatalf("long line not read intact")
	}
	// A long bad line yields a bounded message.
	_, err = ParseRecords("rel", TREC, strings.NewReader(id+" 0 d -1\n"))
	if err == nil || len(err.Error()) > 1000 {
		t.Fatalf("error = %.200v (len %d)", err, len(err.Error()))
	}
}

func TestParseRecordsMatrixFormats(t *testing.T) {
	for _, f := range []Format{NPY, NPZ, "bogus"} {
		if _, err := ParseRecords("rel", f, strings.NewReader("")); err == nil {
			t.Errorf("ParseRecords(%q): want error", f)
		}
	}
}

func TestReadRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rel.TSV")
	if err := os.WriteFile(path, []byte("query_id\tgallery_id\tgrade\nq\td\t1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRecords(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Record{rec("q", "d", 1, 2)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// An explicit format overrides the extension.
	if _, err := ReadRecords(path, TREC); err == nil {
		t.Error("reading a TSV file as TREC: want field-count error")
	}
	_, err = ReadRecords(filepath.Join(dir, "missing.qrels"), "")
	if !errors.Is(err, fs.ErrNotExist) || !formats.IsInputError(err) {
		t.Errorf("missing file: err = %v", err)
	}
	if _, err := ReadRecords(filepath.Join(dir, "x.npy"), ""); err == nil {
		t.Error("npy via ReadRecords: want error")
	}
}

func pair(q, g string, line int) Pair { return Pair{QueryID: q, GalleryID: g, Line: line} }

func TestParseExclusions(t *testing.T) {
	tests := []struct {
		name, path, in string
		want           []Pair
	}{
		{"text", "ex.txt", "q1 d1\nq2\td2\r\n\n  q3   d3  \n", []Pair{pair("q1", "d1", 1), pair("q2", "d2", 2), pair("q3", "d3", 4)}},
		{"text header", "ex.tsv", "query_id\tgallery_id\nq d\n", []Pair{pair("q", "d", 2)}},
		{"text header only first", "ex", "q d\nquery_id gallery_id\n", []Pair{pair("q", "d", 1), pair("query_id", "gallery_id", 2)}},
		{"text empty", "ex.txt", "", nil},
		{"csv", "ex.CSV", "query_id,gallery_id\nq1,d1\n\"q 2\", d2\r\n", []Pair{pair("q1", "d1", 2), pair("q 2", " d2", 3)}},
		{"csv no header", "ex.csv", "q1,d1\n", []Pair{pair("q1", "d1", 1)}},
		{"jsonl", "ex.jsonl", `{"query_id":"q1","gallery_id":2}` + "\n\n" + `{"gallery_id":"d","query_id":3}`, []Pair{pair("q1", "2", 1), pair("3", "d", 3)}},
		{"ndjson", "ex.ndjson", `{"query_id":"q","gallery_id":"d"}`, []Pair{pair("q", "d", 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseExclusions(tt.path, strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestParseExclusionsErrors(t *testing.T) {
	tests := []struct {
		name, path, in string
		line           int
		frag           []string
	}{
		{"text 1 field", "ex.txt", "q d\nq\n", 2, []string{"expected 2", "got 1"}},
		{"text 3 fields", "ex", "\nq d 1\n", 2, []string{"got 3"}},
		{"csv 3 fields", "ex.csv", "query_id,gallery_id\nq,d,1\n", 2, []string{"expected 2", "got 3"}},
		{"csv bad quote", "ex.csv", "q,\"d\n", 1, []string{"malformed CSV"}},
		{"jsonl extra key", "ex.jsonl", `{"query_id":"q","gallery_id":"d","grade":1}`, 1, []string{`unexpected key "grade"`}},
		{"jsonl missing key", "ex.jsonl", `{"query_id":"q"}`, 1, []string{`missing key "gallery_id"`}},
		{"jsonl float id", "ex.jsonl", "\n" + `{"query_id":"q","gallery_id":2.0}`, 2, []string{"gallery_id must be a JSON string or integer"}},
		{"jsonl bool id", "ex.jsonl", `{"query_id":true,"gallery_id":"d"}`, 1, []string{"got true"}},
		{"bom", "ex.csv", "\ufeffquery_id,gallery_id\n", 1, []string{"byte order mark"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExclusions(tt.path, strings.NewReader(tt.in))
			checkLineError(t, err, tt.path, tt.line, tt.frag...)
		})
	}
}

func TestReadExclusions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ex.csv")
	if err := os.WriteFile(path, []byte("q,d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadExclusions(path)
	if err != nil || !reflect.DeepEqual(got, []Pair{pair("q", "d", 1)}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ReadExclusions(path + ".missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestWriteQrels(t *testing.T) {
	recs := []Record{
		rec("q1", "d1", 1, 0), rec("q1", "d2", 2.5, 0), rec("q2", "é", 1e-300, 0),
		rec("q2", "d3", 1e21, 0), rec("q3", "d", 1e-7, 0), rec("q3", "e", 100, 0),
		rec("q3", "f", 0.000001, 0), rec("q3", "g", math.Copysign(0, -1), 0),
	}
	var buf bytes.Buffer
	if err := WriteQrels(&buf, recs); err != nil {
		t.Fatal(err)
	}
	want := "q1 0 d1 1\nq1 0 d2 2.5\nq2 0 é 1e-300\nq2 0 d3 1e+21\nq3 0 d 1e-7\nq3 0 e 100\nq3 0 f 0.000001\nq3 0 g 0\n"
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	// What is written reads back unchanged.
	back, err := ParseRecords("out", TREC, &buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range back {
		if back[i].QueryID != recs[i].QueryID || back[i].GalleryID != recs[i].GalleryID || back[i].Grade != recs[i].Grade {
			t.Errorf("record %d: read back %v, wrote %v", i, back[i], recs[i])
		}
	}
}

func TestWriteQrelsErrors(t *testing.T) {
	const ws = "contains whitespace; cannot be written to a TREC file"
	tests := []struct {
		name string
		r    Record
		frag string
	}{
		{"space in query", rec("q 1", "d", 1, 0), ws},
		{"tab in gallery", rec("q", "d\t1", 1, 0), ws},
		{"newline", rec("q", "d\n", 1, 0), ws},
		{"unicode space", rec("q\u00a0", "d", 1, 0), ws},
		{"empty id", rec("q", "", 1, 0), "empty"},
		{"comment query", rec("#q", "d", 1, 0), "'#'"},
		{"nan grade", rec("q", "d", math.NaN(), 0), "Relevance grades must be finite and non-negative"},
		{"negative grade", rec("q", "d", -1, 0), "Relevance grades must be finite and non-negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteQrels(&buf, []Record{rec("ok", "ok", 1, 0), tt.r})
			if err == nil || !strings.Contains(err.Error(), tt.frag) {
				t.Fatalf("err = %v, want %q", err, tt.frag)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %q before failing", buf.String())
			}
		})
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteQrelsWriteError(t *testing.T) {
	if err := WriteQrels(failWriter{}, []Record{rec("q", "d", 1, 0)}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
}

// appendGrade must agree with encoding/json for every finite value.
func TestAppendGradeMatchesJSON(t *testing.T) {
	vals := []float64{1, 2.5, 0.1, 1e-6, 9.99e-7, 1e20, 1e21, 123456789, 1e-300, 5e-324,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 1.0 / 3, 12345.678e10, 0.000123}
	for _, v := range vals {
		checkGradeJSON(t, v)
	}
}

func checkGradeJSON(t *testing.T, v float64) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if v == 0 {
		want = []byte("0")
	}
	if got := appendGrade(nil, v); string(got) != string(want) {
		t.Errorf("appendGrade(%v) = %s, encoding/json gives %s", v, got, want)
	}
}
