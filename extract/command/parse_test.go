package command

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

func TestParseJSONL(t *testing.T) {
	ids := []string{"a", "b"}
	m, err := parseJSONL([]byte("\n[1, -0.5e1]\r\n\n {\"id\": \"b\", \"index\": 8, \"embedding\": [1e-400, 3]} \n\n"), from(7), ids)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, -5, 0, 3}
	if got := m.Float64Data(); len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("got %v, want %v", got, want)
	}

	cases := []struct {
		out  string
		want string
		is   error
	}{
		{"[1, 2]\n[1e400, 2]\n", `output line 2: row 8 (ID "b") must contain only finite numeric values; column 0 (1e400) overflows float64`, nil},
		{"[1, NaN]\n[1, 2]\n", "output line 1: malformed output: invalid character 'N'", ErrMalformed},
		{"[1, NaN]\n[1, 2]\n", "NaN and Infinity are not JSON numbers", ErrMalformed},
		{"[1, 2]\nnull\n", "output line 2: malformed output: want a JSON array of numbers", ErrMalformed},
		{"[1, 2]\n[]\n", "output line 2: malformed output: empty embedding", ErrMalformed},
		{"[1, true]\n[1, 2]\n", "output line 1: malformed output: column 1 is not a number: true", ErrMalformed},
		{"[1, \"2\"]\n[1, 2]\n", `column 1 is not a number: "2"`, ErrMalformed},
		{"[[1], 2]\n[1, 2]\n", "column 0 is not a number: [1]", ErrMalformed},
		{"{\"vector\": [1]}\n", "output line 1: malformed output: object has no \"embedding\" field", ErrMalformed},
		{"[1, 2]\n{\"id\": \"x\", \"embedding\": [1, 2]}\n", `output line 2: malformed output: "id" is "x", expected "b"`, ErrMalformed},
		{"[1, 2]\n{\"index\": 1.5, \"embedding\": [1, 2]}\n", `"index" is 1.5, expected 8`, ErrMalformed},
		{"[1, 2]\n[1, 2, 3]\n", "output line 2: malformed output: ragged rows: 3 values, line 1 has 2", ErrMalformed},
		{"loading weights...\n[1, 2]\n[1, 2]\n", "output line 1: malformed output", ErrMalformed},
		{"[1, 2]\n", "returned 1 embeddings for 2 rows", nil},
		{"[1, 2]\n[1, 2]\n[1, 2]\ngarbage\n", "returned 4 embeddings for 2 rows", nil},
		{"", "returned 0 embeddings for 2 rows", nil},
	}
	for _, c := range cases {
		_, err := parseJSONL([]byte(c.out), from(7), ids)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: want %q, got %v", c.out, c.want, err)
			continue
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%q: error does not wrap %v", c.out, c.is)
		}
	}
}

func TestParseNPY(t *testing.T) {
	var buf bytes.Buffer
	src, _ := matrix.NewDense32(2, 2, []float32{1, 2, 3, float32(math.Inf(-1))})
	if err := npy.WriteDense(&buf, src); err != nil {
		t.Fatal(err)
	}
	_, err := parseNPY(buf.Bytes(), from(5), []string{"x", "y"})
	if err == nil || !strings.Contains(err.Error(), `row 6 (ID "y") must contain only finite numeric values; column 1 is -Inf`) {
		t.Errorf("got %v", err)
	}
	for _, n := range []int{len(buf.Bytes()) - 1, 20, 8} {
		if _, err := parseNPY(buf.Bytes()[:n], from(0), []string{"x", "y"}); !errors.Is(err, ErrMalformed) {
			t.Errorf("cut at %d: got %v", n, err)
		}
	}
	buf.Reset()
	src, _ = matrix.NewDense64(2, 0, nil)
	npy.WriteDense(&buf, src)
	if _, err := parseNPY(buf.Bytes(), from(0), []string{"x", "y"}); err == nil || !strings.Contains(err.Error(), "zero columns") {
		t.Errorf("zero columns: %v", err)
	}
	buf.Reset()
	npy.WriteFloat64(&buf, []int{3}, []float64{1, 2, 3})
	if _, err := parseNPY(buf.Bytes(), from(0), []string{"x", "y", "z"}); err == nil || !strings.Contains(err.Error(), "must be a 2D array") {
		t.Errorf("1-D: %v", err)
	}
}

func TestConcatChecksFormat(t *testing.T) {
	a, _ := matrix.NewDense64(1, 2, []float64{1, 2})
	b, _ := matrix.NewDense32(1, 2, []float32{3, 4})
	if _, err := concat([]*matrix.Dense{a, b}); err == nil || !strings.Contains(err.Error(), "changed embedding format between batches") {
		t.Errorf("got %v", err)
	}
	c, _ := matrix.NewDense64(2, 2, []float64{3, 4, 5, 6})
	m, err := concat([]*matrix.Dense{a, c})
	if err != nil || m.Rows() != 3 || m.At(2, 1) != 6 {
		t.Errorf("got %v, %v", m, err)
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 16}
	tb.Write([]byte("one\ntwo\n"))
	if lines, cut := tb.tail(); strings.Join(lines, "|") != "one|two" || cut {
		t.Errorf("got %q, %v", lines, cut)
	}
	tb.Write([]byte("three\nfour\n")) // 19 bytes in all: "one" falls out
	if lines, cut := tb.tail(); strings.Join(lines, "|") != "two|three|four" || !cut {
		t.Errorf("got %q, %v", lines, cut)
	}
	tb.Write([]byte("xy\n")) // "tw" falls out, leaving a cut line that is dropped
	if lines, cut := tb.tail(); strings.Join(lines, "|") != "three|four|xy" || !cut {
		t.Errorf("got %q, %v", lines, cut)
	}
	tb.Write([]byte(strings.Repeat("z", 100)))
	if len(tb.buf) != 16 {
		t.Errorf("kept %d bytes", len(tb.buf))
	}

	tb = &tailBuffer{max: 4096}
	for i := range 30 {
		tb.Write([]byte{byte('a' + i%26), '\n'})
	}
	if lines, cut := tb.tail(); len(lines) != stderrTailLines || lines[0] != "k" || !cut {
		t.Errorf("got %q, %v", lines, cut)
	}
	if q := (&tailBuffer{max: 8}).quoteOrEmpty(); q != " (stderr was empty)" {
		t.Errorf("empty stderr quoted as %q", q)
	}
	tb = &tailBuffer{max: 8}
	tb.Write([]byte("bad \xff\r\n"))
	if q := tb.quote(); q != "\nstderr:\n  bad \uFFFD" {
		t.Errorf("got %q", q)
	}
}
