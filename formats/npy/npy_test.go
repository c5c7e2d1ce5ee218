package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/x448/float16"
)

// rawNPY builds a file from a literal header dictionary, without numpy's
// padding, so tests control every byte.
func rawNPY(major byte, dict string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	b.WriteByte(major)
	b.WriteByte(0)
	if major == 1 {
		binary.Write(&b, binary.LittleEndian, uint16(len(dict)))
	} else {
		binary.Write(&b, binary.LittleEndian, uint32(len(dict)))
	}
	b.WriteString(dict)
	b.Write(data)
	return b.Bytes()
}

func dict(descr string, fortran bool, shape string) string {
	f := "False"
	if fortran {
		f = "True"
	}
	return "{'descr': '" + descr + "', 'fortran_order': " + f + ", 'shape': " + shape + ", }\n"
}

// enc encodes values with the given byte order and element type.
func enc(order binary.ByteOrder, vals ...any) []byte {
	var b bytes.Buffer
	for _, v := range vals {
		if err := binary.Write(&b, order, v); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

func f16(v float32) uint16 { return float16.Fromfloat32(v).Bits() }

func denseValues(m *matrix.Dense) [][]float64 {
	out := make([][]float64, m.Rows())
	for i := range out {
		out[i] = make([]float64, m.Cols())
		m.RowFloat64(i, out[i])
	}
	return out
}

// TestEncodeHeaderMatchesNumpy checks the exact bytes np.save (numpy >= 1.24)
// writes for a (3, 4) float32 array: a 118-byte header ("v\x00") so that the
// data starts at byte 128.
func TestEncodeHeaderMatchesNumpy(t *testing.T) {
	got, err := EncodeHeader(Header{Descr: "<f4", Shape: []int{3, 4}})
	if err != nil {
		t.Fatal(err)
	}
	want := "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" +
		strings.Repeat(" ", 20) + strings.Repeat(" ", 38) + "\n"
	if string(got) != want {
		t.Fatalf("header\n got %q\nwant %q", got, want)
	}

	for _, h := range []Header{
		{Descr: "<f8", Shape: []int{}},
		{Descr: "<U7", Shape: []int{5}},
		{Descr: "<f2", Shape: []int{123456789, 3}, Fortran: true},
		{Descr: "|b1", Shape: []int{0, 0, 0}},
	} {
		b, err := EncodeHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if len(b)%arrayAlign != 0 || b[len(b)-1] != '\n' {
			t.Errorf("%v: header of %d bytes is not 64-aligned and newline-terminated", h, len(b))
		}
		back, off, err := ParseHeader(b)
		if err != nil {
			t.Fatalf("%v: %v", h, err)
		}
		if off != len(b) || back.Descr != h.Descr || back.Fortran != h.Fortran || !reflect.DeepEqual(back.Shape, h.Shape) {
			t.Errorf("round trip %v -> %v (offset %d of %d)", h, back, off, len(b))
		}
	}
}

func TestEncodeHeaderVersion2(t *testing.T) {
	shape := make([]int, 30000) // too many dims for a 65535-byte header
	for i := range shape {
		shape[i] = 1
	}
	b, err := EncodeHeader(Header{Descr: "<f8", Shape: shape})
	if err != nil {
		t.Fatal(err)
	}
	if b[6] != 2 || len(b)%arrayAlign != 0 {
		t.Fatalf("version %d, length %d", b[6], len(b))
	}
	h, off, err := ParseHeader(b)
	if err != nil || off != len(b) || len(h.Shape) != len(shape) {
		t.Fatalf("ParseHeader: %v, offset %d, %d dims", err, off, len(h.Shape))
	}
}

func TestDenseRoundTrip(t *testing.T) {
	m16, _ := matrix.NewDense16(2, 3, []uint16{f16(1), f16(-2.5), f16(0), f16(65504), f16(0.099975586), f16(-0)})
	m32, _ := matrix.NewDense32(3, 2, []float32{1, 2, 3, 4, 5, math.MaxFloat32})
	m64, _ := matrix.NewDense64(1, 4, []float64{math.Pi, -1e300, 0, 5e-324})
	empty, _ := matrix.NewDense32(0, 7, nil)
	for _, m := range []*matrix.Dense{m16, m32, m64, empty} {
		var buf bytes.Buffer
		if err := WriteDense(&buf, m); err != nil {
			t.Fatal(err)
		}
		got, err := DecodeMatrix("x.npy", buf.Bytes())
		if err != nil {
			t.Fatalf("%v: %v", m.DType(), err)
		}
		if got.DType() != m.DType() || got.Rows() != m.Rows() || got.Cols() != m.Cols() {
			t.Fatalf("%v: got %v %dx%d", m.DType(), got.DType(), got.Rows(), got.Cols())
		}
		if !reflect.DeepEqual(got.Float16Bits(), m.Float16Bits()) && len(m.Float16Bits()) > 0 {
			t.Errorf("float16 bits %v, want %v", got.Float16Bits(), m.Float16Bits())
		}
		if !reflect.DeepEqual(denseValues(got), denseValues(m)) {
			t.Errorf("%v: values %v, want %v", m.DType(), denseValues(got), denseValues(m))
		}
	}
}

func TestArrayRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFloat64(&buf, []int{2, 2}, []float64{1.5, -2, 0, 3}); err != nil {
		t.Fatal(err)
	}
	a, err := DecodeArray("r.npy", buf.Bytes())
	if err != nil || a.Kind != 'f' || !reflect.DeepEqual(a.Shape, []int{2, 2}) || !reflect.DeepEqual(a.Floats, []float64{1.5, -2, 0, 3}) {
		t.Fatalf("float64: %+v, %v", a, err)
	}

	buf.Reset()
	if err := WriteFloat32(&buf, []int{3}, []float32{1, 2.5, -3}); err != nil {
		t.Fatal(err)
	}
	a, err = DecodeArray("r.npy", buf.Bytes())
	if err != nil || a.Descr != "<f4" || !reflect.DeepEqual(a.Floats, []float64{1, 2.5, -3}) {
		t.Fatalf("float32: %+v, %v", a, err)
	}

	buf.Reset()
	ints := []int64{math.MinInt64, -1, 0, 7, math.MaxInt64}
	if err := WriteInt64(&buf, []int{5}, ints); err != nil {
		t.Fatal(err)
	}
	a, err = DecodeArray("l.npy", buf.Bytes())
	if err != nil || a.Kind != 'i' || !reflect.DeepEqual(a.Ints, ints) {
		t.Fatalf("int64: %+v, %v", a, err)
	}

	buf.Reset()
	if err := WriteInt32(&buf, []int{1, 3}, []int32{math.MinInt32, 0, math.MaxInt32}); err != nil {
		t.Fatal(err)
	}
	a, err = DecodeArray("l.npy", buf.Bytes())
	if err != nil || !reflect.DeepEqual(a.Ints, []int64{math.MinInt32, 0, math.MaxInt32}) || a.Len() != 3 {
		t.Fatalf("int32: %+v, %v", a, err)
	}

	buf.Reset()
	strs := []string{"cat", "", "Ünïcödé 🐈", "dog\x00mid"}
	if err := WriteStrings(&buf, strs); err != nil {
		t.Fatal(err)
	}
	a, err = DecodeArray("l.npy", buf.Bytes())
	if err != nil || a.Kind != 'U' || a.Descr != "<U9" || !reflect.DeepEqual(a.Strings, strs) {
		t.Fatalf("strings: %+v, %v", a, err)
	}

	buf.Reset()
	if err := WriteStrings(&buf, nil); err != nil {
		t.Fatal(err)
	}
	a, err = DecodeArray("l.npy", buf.Bytes())
	if err != nil || a.Descr != "<U1" || len(a.Strings) != 0 || !reflect.DeepEqual(a.Shape, []int{0}) {
		t.Fatalf("empty strings: %+v, %v", a, err)
	}
}

func TestWriterErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFloat64(&buf, []int{2, 2}, []float64{1}); err == nil {
		t.Error("shape/data mismatch accepted")
	}
	if err := WriteInt64(&buf, []int{-1}, nil); err == nil {
		t.Error("negative shape accepted")
	}
	if err := WriteStrings(&buf, []string{"\xff"}); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	if err := WriteStrings(&buf, []string{"a\x00"}); err == nil {
		t.Error("trailing NUL accepted")
	}
}

// TestDecodeHandBuilt covers byte orders, Fortran order, dtypes and header
// spellings numpy and other writers produce.
func TestDecodeHandBuilt(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	tests := []struct {
		name  string
		file  []byte
		shape []int
		dtype matrix.DType
		want  [][]float64
	}{
		{"little f4", rawNPY(1, dict("<f4", false, "(2, 2)"), enc(le, []float32{1, 2, 3, 4})),
			[]int{2, 2}, matrix.Float32, [][]float64{{1, 2}, {3, 4}}},
		{"big f4", rawNPY(1, dict(">f4", false, "(2, 2)"), enc(be, []float32{1, 2, 3, 4})),
			[]int{2, 2}, matrix.Float32, [][]float64{{1, 2}, {3, 4}}},
		{"big f8", rawNPY(1, dict(">f8", false, "(1, 3)"), enc(be, []float64{-1, 0.5, 1e100})),
			[]int{1, 3}, matrix.Float64, [][]float64{{-1, 0.5, 1e100}}},
		{"big f2", rawNPY(1, dict(">f2", false, "(1, 2)"), enc(be, []uint16{f16(1.5), f16(-4)})),
			[]int{1, 2}, matrix.Float16, [][]float64{{1.5, -4}}},
		{"native f8", rawNPY(1, dict("=f8", false, "(1, 1)"), enc(le, []float64{2})),
			[]int{1, 1}, matrix.Float64, [][]float64{{2}}},
		{"fortran f8", rawNPY(1, dict("<f8", true, "(2, 3)"), enc(le, []float64{1, 4, 2, 5, 3, 6})),
			[]int{2, 3}, matrix.Float64, [][]float64{{1, 2, 3}, {4, 5, 6}}},
		{"fortran big f4", rawNPY(1, dict(">f4", true, "(3, 2)"), enc(be, []float32{1, 3, 5, 2, 4, 6})),
			[]int{3, 2}, matrix.Float32, [][]float64{{1, 2}, {3, 4}, {5, 6}}},
		{"version 2.0", rawNPY(2, dict("<f4", false, "(1, 2)"), enc(le, []float32{7, 8})),
			[]int{1, 2}, matrix.Float32, [][]float64{{7, 8}}},
		{"version 3.0", rawNPY(3, dict("<f4", false, "(1, 2)"), enc(le, []float32{7, 8})),
			[]int{1, 2}, matrix.Float32, [][]float64{{7, 8}}},
		{"no trailing comma, key order, double quotes",
			rawNPY(1, `{"shape":(1,2),"fortran_order":False,"descr":"<f4"}`, enc(le, []float32{7, 8})),
			[]int{1, 2}, matrix.Float32, [][]float64{{7, 8}}},
		{"whitespace and python2 longs",
			rawNPY(1, "{ 'descr' : u'<f4' ,\n 'fortran_order' : False , 'shape' : ( 1L , 2L , ) , }   \n", enc(le, []float32{7, 8})),
			[]int{1, 2}, matrix.Float32, [][]float64{{7, 8}}},
		{"zero rows", rawNPY(1, dict("<f4", false, "(0, 5)"), nil),
			[]int{0, 5}, matrix.Float32, [][]float64{}},
		{"zero rows fortran", rawNPY(1, dict("<f4", true, "(0, 5)"), nil),
			[]int{0, 5}, matrix.Float32, [][]float64{}},
		{"non-finite kept", rawNPY(1, dict("<f8", false, "(1, 2)"), enc(le, []float64{math.Inf(1), 1})),
			[]int{1, 2}, matrix.Float64, [][]float64{{math.Inf(1), 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMatrix("e.npy", tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if m.Rows() != tt.shape[0] || m.Cols() != tt.shape[1] || m.DType() != tt.dtype {
				t.Fatalf("got %dx%d %v", m.Rows(), m.Cols(), m.DType())
			}
			if got := denseValues(m); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("values %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecodeArrayHandBuilt(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	utf32 := func(order binary.AppendByteOrder, width int, ss ...string) []byte {
		var out []byte
		for _, s := range ss {
			rs := []rune(s)
			for i := 0; i < width; i++ {
				var r rune
				if i < len(rs) {
					r = rs[i]
				}
				out = order.AppendUint32(out, uint32(r))
			}
		}
		return out
	}
	// A 2x3x4 Fortran-order array with element (i,j,k) = 100i+10j+k.
	var fortran3 []byte
	for k := 0; k < 4; k++ {
		for j := 0; j < 3; j++ {
			for i := 0; i < 2; i++ {
				fortran3 = le.AppendUint64(fortran3, uint64(100*i+10*j+k))
			}
		}
	}
	var c3 []int64
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 4; k++ {
				c3 = append(c3, int64(100*i+10*j+k))
			}
		}
	}
	tests := []struct {
		name string
		file []byte
		want Array
	}{
		{"i1", rawNPY(1, dict("|i1", false, "(3,)"), []byte{0xff, 0, 0x7f}),
			Array{Shape: []int{3}, Kind: 'i', Descr: "|i1", Ints: []int64{-1, 0, 127}}},
		{"u1", rawNPY(1, dict("|u1", false, "(2,)"), []byte{0xff, 1}),
			Array{Shape: []int{2}, Kind: 'u', Descr: "|u1", Ints: []int64{255, 1}}},
		{"big i2", rawNPY(1, dict(">i2", false, "(2,)"), enc(be, []int16{-2, 300})),
			Array{Shape: []int{2}, Kind: 'i', Descr: ">i2", Ints: []int64{-2, 300}}},
		{"u2", rawNPY(1, dict("<u2", false, "(1,)"), enc(le, []uint16{65535})),
			Array{Shape: []int{1}, Kind: 'u', Descr: "<u2", Ints: []int64{65535}}},
		{"big i4", rawNPY(1, dict(">i4", false, "(2,)"), enc(be, []int32{-7, 1 << 30})),
			Array{Shape: []int{2}, Kind: 'i', Descr: ">i4", Ints: []int64{-7, 1 << 30}}},
		{"u4", rawNPY(1, dict("<u4", false, "(1,)"), enc(le, []uint32{math.MaxUint32})),
			Array{Shape: []int{1}, Kind: 'u', Descr: "<u4", Ints: []int64{math.MaxUint32}}},
		{"big u8", rawNPY(1, dict(">u8", false, "(1,)"), enc(be, []uint64{math.MaxInt64})),
			Array{Shape: []int{1}, Kind: 'u', Descr: ">u8", Ints: []int64{math.MaxInt64}}},
		{"bool", rawNPY(1, dict("|b1", false, "(3,)"), []byte{1, 0, 2}),
			Array{Shape: []int{3}, Kind: 'b', Descr: "|b1", Ints: []int64{1, 0, 1}}},
		{"f2", rawNPY(1, dict("<f2", false, "(2,)"), enc(le, []uint16{f16(0.5), f16(-3)})),
			Array{Shape: []int{2}, Kind: 'f', Descr: "<f2", Floats: []float64{0.5, -3}}},
		{"big f4 2-D", rawNPY(1, dict(">f4", false, "(2, 1)"), enc(be, []float32{0.25, 9})),
			Array{Shape: []int{2, 1}, Kind: 'f', Descr: ">f4", Floats: []float64{0.25, 9}}},
		{"0-d", rawNPY(1, dict("<f8", false, "()"), enc(le, 4.5)),
			Array{Shape: []int{}, Kind: 'f', Descr: "<f8", Floats: []float64{4.5}}},
		{"unicode", rawNPY(1, dict("<U4", false, "(3,)"), utf32(le, 4, "ab", "", "🐈xyz")),
			Array{Shape: []int{3}, Kind: 'U', Descr: "<U4", Strings: []string{"ab", "", "🐈xyz"}}},
		{"big unicode", rawNPY(1, dict(">U2", false, "(2,)"), utf32(be, 2, "é", "zz")),
			Array{Shape: []int{2}, Kind: 'U', Descr: ">U2", Strings: []string{"é", "zz"}}},
		{"fortran 2-D strings", rawNPY(1, dict("<U1", true, "(2, 2)"), utf32(le, 1, "a", "c", "b", "d")),
			Array{Shape: []int{2, 2}, Kind: 'U', Descr: "<U1", Strings: []string{"a", "b", "c", "d"}}},
		{"fortran 3-D", rawNPY(1, dict("<i8", true, "(2, 3, 4)"), fortran3),
			Array{Shape: []int{2, 3, 4}, Kind: 'i', Descr: "<i8", Ints: c3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := DecodeArray("a.npy", tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*a, tt.want) {
				t.Fatalf("got %+v\nwant %+v", *a, tt.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	le := binary.LittleEndian
	good := rawNPY(1, dict("<f4", false, "(2, 2)"), enc(le, []float32{1, 2, 3, 4}))
	deep := "{'descr': '<f4', 'fortran_order': False, 'shape': " + strings.Repeat("(", 100) + strings.Repeat(")", 100) + "}"
	tests := []struct {
		name   string
		file   []byte
		matrix string // fragment from DecodeMatrix ("" = no error expected)
		array  string // fragment from DecodeArray
	}{
		{"empty file", nil, "truncated", "truncated"},
		{"bad magic", append([]byte("\x93NUMPX"), good[6:]...), "malformed", "malformed"},
		{"not npy", []byte("PK\x03\x04 some zip file"), "malformed", "malformed"},
		{"magic only", []byte(magic), "truncated", "truncated"},
		{"version 4.0", append(append([]byte(magic), 4, 0), good[8:]...), "malformed", "malformed"},
		{"version 1.1", append(append([]byte(magic), 1, 1), good[8:]...), "malformed", "malformed"},
		{"header cut", good[:30], "truncated", "truncated"},
		{"data cut", good[:len(good)-1], "truncated", "truncated"},
		{"bytes after the data", rawNPY(1, dict("<f4", false, "(1, 1)"), enc(le, []float32{3, 99})), "trailing bytes after the npy data", "trailing bytes after the npy data"},
		{"header not a dict", rawNPY(1, "['<f4', False, (1, 1)]", nil), "malformed", "malformed"},
		{"missing key", rawNPY(1, "{'descr': '<f4', 'shape': (1, 1)}", nil), "malformed", "malformed"},
		{"extra key", rawNPY(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), 'x': 1}", nil), "malformed", "malformed"},
		{"repeated key", rawNPY(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1, 1)}", nil), "malformed", "malformed"},
		{"shape not a tuple", rawNPY(1, dict("<f4", false, "(5)"), enc(le, make([]float32, 5))), "malformed", "malformed"},
		{"shape list", rawNPY(1, dict("<f4", false, "[1, 1]"), enc(le, float32(1))), "malformed", "malformed"},
		{"negative dim", rawNPY(1, dict("<f4", false, "(-1, 2)"), nil), "malformed", "malformed"},
		{"float dim", rawNPY(1, dict("<f4", false, "(1.0, 2)"), nil), "malformed", "malformed"},
		{"overflowing product", rawNPY(1, dict("<f4", false, "(4294967296, 4294967296)"), nil), "malformed", "malformed"},
		{"overflowing bytes", rawNPY(1, dict("<f8", false, "(1152921504606846976, 8)"), nil), "malformed", "malformed"},
		{"overflowing int", rawNPY(1, dict("<f4", false, "(99999999999999999999, 1)"), nil), "malformed", "malformed"},
		{"overflow hidden by zero", rawNPY(1, dict("<f4", false, "(0, 9223372036854775807, 9223372036854775807)"), nil), "malformed", "malformed"},
		{"huge shape, no data", rawNPY(1, dict("<f4", false, "(1000000000, 1000000000)"), nil), "truncated", "truncated"},
		{"fortran_order not bool", rawNPY(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1, 1)}", nil), "malformed", "malformed"},
		{"descr not a string", rawNPY(1, "{'descr': 4, 'fortran_order': False, 'shape': (1, 1)}", nil), "malformed", "malformed"},
		{"unterminated string", rawNPY(1, "{'descr': '<f4, 'fortran_order': False}", nil), "malformed", "malformed"},
		{"missing comma", rawNPY(1, "{'descr': '<f4' 'fortran_order': False, 'shape': (1, 1)}", nil), "malformed", "malformed"},
		{"trailing garbage", rawNPY(1, dict("<f4", false, "(1, 1)")+"x", enc(le, float32(1))), "malformed", "malformed"},
		{"nested too deep", rawNPY(1, deep, nil), "malformed", "malformed"},
		{"bad utf-8 in v3", rawNPY(3, "{'descr': '\xff<f4', 'fortran_order': False, 'shape': (1, 1)}", nil), "malformed", "malformed"},
		{"1-D", rawNPY(1, dict("<f4", false, "(4,)"), enc(le, []float32{1, 2, 3, 4})), "must be a 2D array", ""},
		{"0-D", rawNPY(1, dict("<f4", false, "()"), enc(le, float32(1))), "must be a 2D array", ""},
		{"3-D", rawNPY(1, dict("<f4", false, "(1, 2, 2)"), enc(le, []float32{1, 2, 3, 4})), "must be a 2D array", ""},
		{"int matrix", rawNPY(1, dict("<i4", false, "(1, 1)"), enc(le, int32(1))), `unsupported dtype "<i4"`, ""},
		{"bool matrix", rawNPY(1, dict("|b1", false, "(1, 1)"), []byte{1}), `unsupported dtype "|b1"`, ""},
		{"string matrix", rawNPY(1, dict("<U1", false, "(1, 1)"), enc(le, int32(65))), `unsupported dtype "<U1"`, ""},
		{"complex", rawNPY(1, dict("<c8", false, "(1, 1)"), make([]byte, 8)), `unsupported dtype "<c8"`, `unsupported dtype "<c8"`},
		{"long double", rawNPY(1, dict("<f16", false, "(1, 1)"), make([]byte, 16)), `unsupported dtype "<f16"`, `unsupported dtype "<f16"`},
		{"object", rawNPY(1, dict("|O", false, "(1, 1)"), make([]byte, 8)), `unsupported dtype "|O"`, `unsupported dtype "|O"`},
		{"bytes", rawNPY(1, dict("|S3", false, "(1, 1)"), []byte("abc")), `unsupported dtype "|S3"`, `unsupported dtype "|S3"`},
		{"zero-width unicode", rawNPY(1, dict("<U0", false, "(1000000000000, 1)"), nil), `unsupported dtype "<U0"`, `unsupported dtype "<U0"`},
		{"datetime", rawNPY(1, dict("<M8[ns]", false, "(1, 1)"), make([]byte, 8)), "unsupported dtype", "unsupported dtype"},
		{"pipe on float", rawNPY(1, dict("|f4", false, "(1, 1)"), make([]byte, 4)), `unsupported dtype "|f4"`, `unsupported dtype "|f4"`},
		{"structured", rawNPY(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1, 1)}", make([]byte, 4)), "unsupported dtype", "unsupported dtype"},
		{"uint64 overflow", rawNPY(1, dict("<u8", false, "(1,)"), enc(le, uint64(math.MaxUint64))), "must be a 2D array", "exceeds the int64 range"},
		{"surrogate code point", rawNPY(1, dict("<U1", false, "(1,)"), enc(le, uint32(0xD800))), "must be a 2D array", "malformed"},
		{"code point too large", rawNPY(1, dict("<U1", false, "(1,)"), enc(le, uint32(0xFFFFFFFF))), "must be a 2D array", "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(what, want string, err error) {
				t.Helper()
				if want == "" {
					if err != nil {
						t.Errorf("%s: unexpected error %v", what, err)
					}
					return
				}
				if err == nil {
					t.Fatalf("%s: no error, want %q", what, want)
				}
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %q lacks %q", what, err, want)
				}
				var fe *formats.Error
				if !errors.As(err, &fe) || fe.Path != "bad.npy" || !strings.HasPrefix(err.Error(), "bad.npy: ") {
					t.Errorf("%s: error %q does not name the file", what, err)
				}
			}
			_, err := DecodeMatrix("bad.npy", tt.file)
			check("DecodeMatrix", tt.matrix, err)
			_, err = DecodeArray("bad.npy", tt.file)
			check("DecodeArray", tt.array, err)
		})
	}
}

func TestSentinels(t *testing.T) {
	_, err := DecodeMatrix("x.npy", []byte("nope, not npy"))
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("%v is not ErrMalformed", err)
	}
	_, err = DecodeMatrix("x.npy", []byte(magic))
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("%v is not ErrTruncated", err)
	}
	_, err = DecodeArray("x.npy", rawNPY(1, dict("<c16", false, "(1,)"), make([]byte, 16)))
	if !errors.Is(err, ErrUnsupportedDType) {
		t.Errorf("%v is not ErrUnsupportedDType", err)
	}
}

func TestParseDescr(t *testing.T) {
	for descr, want := range map[string]ElemType{
		"<f4":  {Kind: 'f', Size: 4},
		">f8":  {Kind: 'f', Size: 8, BigEndian: true},
		"=f2":  {Kind: 'f', Size: 2},
		"f4":   {Kind: 'f', Size: 4},
		"|i1":  {Kind: 'i', Size: 1},
		">i1":  {Kind: 'i', Size: 1},
		">u2":  {Kind: 'u', Size: 2, BigEndian: true},
		"|b1":  {Kind: 'b', Size: 1},
		">U10": {Kind: 'U', Size: 40, BigEndian: true},
		"|S3":  {Kind: 'S', Size: 3},
	} {
		got, err := ParseDescr(descr)
		if err != nil || got != want {
			t.Errorf("ParseDescr(%q) = %+v, %v; want %+v", descr, got, err, want)
		}
	}
	for _, bad := range []string{"", "<", "<f", "<f3", "<i16", "|f8", "<b2", "<U", "<U0", "<U-1", "<U+1", "<c8", "|V8", "<m8", "O", "<U99999999999999999999"} {
		if _, err := ParseDescr(bad); !errors.Is(err, ErrUnsupportedDType) {
			t.Errorf("ParseDescr(%q) = %v, want unsupported dtype", bad, err)
		}
	}
	if got := (ElemType{Kind: 'U', Size: 12, BigEndian: true}).Descr(); got != ">U3" {
		t.Errorf("Descr = %q", got)
	}
	if got := (ElemType{Kind: 'u', Size: 1, BigEndian: true}).Descr(); got != "|u1" {
		t.Errorf("Descr = %q", got)
	}
}

func TestHeaderHelpers(t *testing.T) {
	h := Header{Descr: "<f8", Shape: []int{3, 4}}
	if n, err := h.NumElements(); n != 12 || err != nil {
		t.Errorf("NumElements = %d, %v", n, err)
	}
	if n, err := h.DataSize(); n != 96 || err != nil {
		t.Errorf("DataSize = %d, %v", n, err)
	}
	for shape, want := range map[string]string{"": "()", "5": "(5,)", "3,4": "(3, 4)"} {
		var s []int
		for _, f := range strings.Split(shape, ",") {
			if f != "" {
				var d int
				for _, c := range f {
					d = d*10 + int(c-'0')
				}
				s = append(s, d)
			}
		}
		if got := (Header{Shape: s}).ShapeString(); got != want {
			t.Errorf("ShapeString(%v) = %q, want %q", s, got, want)
		}
	}
	if n, err := (Header{}).NumElements(); n != 1 || err != nil {
		t.Errorf("0-d NumElements = %d, %v", n, err)
	}
}

func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	m, _ := matrix.NewDense32(2, 1, []float32{1, 2})
	var buf bytes.Buffer
	if err := WriteDense(&buf, m); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "m.npy")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMatrix(p)
	if err != nil || got.Rows() != 2 || got.At(1, 0) != 2 {
		t.Fatalf("ReadMatrix: %v", err)
	}
	a, err := ReadArray(p)
	if err != nil || !reflect.DeepEqual(a.Floats, []float64{1, 2}) {
		t.Fatalf("ReadArray: %+v, %v", a, err)
	}

	missing := filepath.Join(dir, "missing.npy")
	for _, err := range []error{
		func() error { _, err := ReadMatrix(missing); return err }(),
		func() error { _, err := ReadArray(missing); return err }(),
	} {
		if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), missing+": ") || strings.Count(err.Error(), missing) != 1 {
			t.Errorf("missing file error %q", err)
		}
	}
}

func fuzzSeeds(f *testing.F) {
	le, be := binary.LittleEndian, binary.BigEndian
	m32, _ := matrix.NewDense32(2, 3, []float32{1, 2, 3, 4, 5, 6})
	m16, _ := matrix.NewDense16(1, 2, []uint16{f16(1), f16(2)})
	for _, m := range []*matrix.Dense{m32, m16} {
		var buf bytes.Buffer
		if err := WriteDense(&buf, m); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	var buf bytes.Buffer
	_ = WriteStrings(&buf, []string{"a", "bc"})
	f.Add(buf.Bytes())
	buf.Reset()
	_ = WriteInt64(&buf, []int{2, 1}, []int64{1, 2})
	f.Add(buf.Bytes())
	f.Add(rawNPY(1, dict(">f8", true, "(2, 2)"), enc(be, []float64{1, 2, 3, 4})))
	f.Add(rawNPY(2, dict("<i2", true, "(1, 2, 2)"), enc(le, []int16{1, 2, 3, 4})))
	f.Add(rawNPY(3, dict("|b1", false, "()"), []byte{1}))
	f.Add(rawNPY(1, dict("<U2", false, "(0, 3)"), nil))
}

func FuzzDecodeMatrix(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeMatrix("fuzz.npy", data)
		if err != nil {
			if !formats.IsInputError(err) {
				t.Fatalf("error %v is not a formats.Error", err)
			}
			return
		}
		row := make([]float64, m.Cols())
		for i := 0; i < m.Rows(); i++ {
			m.RowFloat64(i, row)
		}
	})
}

func FuzzDecodeArray(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeArray("fuzz.npy", data)
		if err != nil {
			if !formats.IsInputError(err) {
				t.Fatalf("error %v is not a formats.Error", err)
			}
			return
		}
		n, err := (Header{Shape: a.Shape}).NumElements()
		if err != nil || n != a.Len() {
			t.Fatalf("shape %v but %d elements (%v)", a.Shape, a.Len(), err)
		}
	})
}
