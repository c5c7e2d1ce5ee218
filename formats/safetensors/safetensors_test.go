package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// rawFile builds a file from a literal header, without padding, so tests can
// produce any header length (and so any data alignment).
func rawFile(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func encode(t *testing.T, tensors []Tensor, meta map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, tensors, meta); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func le32(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func le16(vals ...uint16) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

func sameValues(t *testing.T, got, want *matrix.Dense) {
	t.Helper()
	if got.Rows() != want.Rows() || got.Cols() != want.Cols() {
		t.Fatalf("shape %d×%d, want %d×%d", got.Rows(), got.Cols(), want.Rows(), want.Cols())
	}
	for r := 0; r < want.Rows(); r++ {
		for c := 0; c < want.Cols(); c++ {
			if g, w := got.At(r, c), want.At(r, c); g != w {
				t.Fatalf("(%d,%d) = %v, want %v", r, c, g, w)
			}
		}
	}
}

func TestRoundTripMapped(t *testing.T) {
	m16, _ := matrix.NewDense16(1, 3, []uint16{0x3c00, 0xc000, 0x7bff}) // 1, -2, 65504
	m32, _ := matrix.NewDense32(3, 2, []float32{1, 2, 3, 4.5, -5, 6})
	m64, _ := matrix.NewDense64(2, 3, []float64{1, -2, math.Pi, 4, 5, 1e300})
	for _, m := range []*matrix.Dense{m16, m32, m64} {
		t.Run(m.DType().String(), func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteMatrix(&buf, "emb", m); err != nil {
				t.Fatal(err)
			}
			if n := binary.LittleEndian.Uint64(buf.Bytes()); n%8 != 0 {
				t.Fatalf("header length %d is not a multiple of 8", n)
			}
			p := writeTemp(t, "m.safetensors", buf.Bytes())
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Names(); len(got) != 1 || got[0] != "emb" {
				t.Fatalf("Names = %q", got)
			}
			for _, name := range []string{"", "emb"} {
				got, err := f.Matrix(name)
				if err != nil {
					t.Fatal(err)
				}
				if got.DType() != m.DType() {
					t.Fatalf("dtype %v, want %v", got.DType(), m.DType())
				}
				sameValues(t, got, m)
				if matrix.Clone(got) != matrix.Matrix(got) {
					t.Error("a mapped matrix is read-only and must not be copied by Clone")
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if _, err := f.Matrix(""); err == nil || !strings.Contains(err.Error(), p) {
				t.Fatalf("Matrix after Close: %v", err)
			}
		})
	}
}

func TestDecodeDoesNotClaimReadOnly(t *testing.T) {
	m, _ := matrix.NewDense32(1, 2, []float32{1, 2})
	var buf bytes.Buffer
	if err := WriteMatrix(&buf, "x", m); err != nil {
		t.Fatal(err)
	}
	f, err := Decode("mem.safetensors", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Matrix("x")
	if err != nil {
		t.Fatal(err)
	}
	sameValues(t, got, m)
	// The caller still owns the buffer, so Clone must really copy.
	if matrix.Clone(got) == matrix.Matrix(got) {
		t.Error("a matrix viewing a caller's buffer must not be marked read-only")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestBF16Widened(t *testing.T) {
	data := encode(t, []Tensor{{Name: "b", DType: "BF16", Shape: []int{2, 2},
		Data: le16(0x3f80, 0xc000, 0x0000, 0x4049)}}, nil)
	f, err := Open(writeTemp(t, "b.safetensors", data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := f.Matrix("")
	if err != nil {
		t.Fatal(err)
	}
	if m.DType() != matrix.Float32 {
		t.Fatalf("dtype %v, want float32", m.DType())
	}
	want := []float32{1, -2, 0, math.Float32frombits(0x40490000)} // 3.140625
	for i, w := range want {
		if g := m.Float32Data()[i]; g != w {
			t.Errorf("element %d = %v, want %v", i, g, w)
		}
	}
}

func TestUnalignedCopies(t *testing.T) {
	// 8 + len(header) is odd, so the F32/F64 data cannot be viewed in place.
	for _, tc := range []struct {
		dtype string
		data  []byte
		want  *matrix.Dense
	}{
		{"F32", le32(1.5, -2, 3, 4), must(matrix.NewDense32(2, 2, []float32{1.5, -2, 3, 4}))},
		{"F64", binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.E)), must(matrix.NewDense64(1, 1, []float64{math.E}))},
		{"F16", le16(0x3c00, 0x4000), must(matrix.NewDense16(1, 2, []uint16{0x3c00, 0x4000}))},
	} {
		t.Run(tc.dtype, func(t *testing.T) {
			shape := "[2,2]"
			switch tc.dtype {
			case "F64":
				shape = "[1,1]"
			case "F16":
				shape = "[1,2]"
			}
			header := `{"t":{"dtype":"` + tc.dtype + `","shape":` + shape + `,"data_offsets":[0,` +
				itoa(len(tc.data)) + `]}}`
			if len(header)%2 == 0 {
				header += " "
			}
			p := writeTemp(t, "u.safetensors", rawFile(header, tc.data))
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := f.Matrix("t")
			if err != nil {
				t.Fatal(err)
			}
			sameValues(t, m, tc.want)
			if matrix.Clone(m) == matrix.Matrix(m) {
				t.Error("an unaligned tensor must be copied, not viewed")
			}
		})
	}
}

func TestMultipleTensors(t *testing.T) {
	data := encode(t, []Tensor{
		{Name: "queries", DType: "F32", Shape: []int{1, 2}, Data: le32(1, 2)},
		{Name: "gallery", DType: "F64", Shape: []int{1, 1}, Data: binary.LittleEndian.AppendUint64(nil, math.Float64bits(7))},
		{Name: "half", DType: "F16", Shape: []int{1, 1}, Data: le16(0x3c00)},
		{Name: "ids", DType: "I64", Shape: []int{1}, Data: make([]byte, 8)},
	}, map[string]string{"format": "pt"})
	p := writeTemp(t, "multi.safetensors", data)
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := strings.Join(f.Names(), ","); got != "gallery,half,ids,queries" {
		t.Fatalf("Names = %s", got)
	}
	if md := f.Metadata(); md["format"] != "pt" || len(md) != 1 {
		t.Fatalf("Metadata = %v", md)
	}
	q, err := f.Matrix("queries")
	if err != nil {
		t.Fatal(err)
	}
	if q.At(0, 1) != 2 || matrix.Clone(q) != matrix.Matrix(q) {
		t.Fatalf("queries: %v, read-only %v", q.At(0, 1), matrix.Clone(q) == matrix.Matrix(q))
	}
	g, err := f.Matrix("gallery")
	if err != nil || g.At(0, 0) != 7 {
		t.Fatalf("gallery: %v", err)
	}
	h, err := f.Matrix("half")
	if err != nil || h.At(0, 0) != 1 {
		t.Fatalf("half: %v", err)
	}

	_, err = f.Matrix("")
	wantErr(t, err, p, "holds 4 tensors", "gallery, half, ids, queries", "--queries-tensor/--gallery-tensor")
	_, err = f.Matrix("nope")
	wantErr(t, err, p, `no tensor named "nope"`, "gallery, half, ids, queries")
	_, err = f.Matrix("__metadata__")
	wantErr(t, err, p, `no tensor named "__metadata__"`)
	_, err = f.Matrix("ids")
	wantErr(t, err, p, "must be a 2D array", "[1]")
}

func TestZeroRows(t *testing.T) {
	data := encode(t, []Tensor{{Name: "e", DType: "F32", Shape: []int{0, 4}}}, nil)
	f, err := Open(writeTemp(t, "z.safetensors", data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := f.Matrix("")
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows() != 0 || m.Cols() != 4 {
		t.Fatalf("shape %d×%d", m.Rows(), m.Cols())
	}
}

func TestUnsupportedDType(t *testing.T) {
	for _, dt := range []string{"I8", "U8", "I16", "I32", "I64", "BOOL", "F8_E4M3", "F8_E5M2", "SOMETHING_NEW"} {
		t.Run(dt, func(t *testing.T) {
			header := `{"t":{"dtype":"` + dt + `","shape":[2,2],"data_offsets":[0,0]}}`
			var data []byte
			if bits, ok := dtypeBits[dt]; ok {
				data = make([]byte, 4*bits/8)
				header = `{"t":{"dtype":"` + dt + `","shape":[2,2],"data_offsets":[0,` + itoa(len(data)) + `]}}`
			}
			p := writeTemp(t, "d.safetensors", rawFile(header, data))
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			_, err = f.Matrix("t")
			wantErr(t, err, p, "unsupported dtype", dt)
		})
	}
}

func TestBadFiles(t *testing.T) {
	f32 := func(extra string) string {
		return `{"t":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]` + extra + `}}`
	}
	eight := make([]byte, 8)
	for _, tc := range []struct {
		name  string
		file  []byte
		frags []string
	}{
		{"empty", nil, []string{"truncated"}},
		{"short prefix", []byte{1, 0, 0}, []string{"truncated"}},
		{"header past end", append(binary.LittleEndian.AppendUint64(nil, 100), "{}"...), []string{"truncated", "header length 100"}},
		{"huge header length", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), []string{"truncated"}},
		{"empty header", rawFile("", nil), []string{"malformed"}},
		{"not json", rawFile("hello", nil), []string{"malformed"}},
		{"json array", rawFile("[1,2]", nil), []string{"malformed", "not a JSON object"}},
		{"trailing garbage", rawFile(`{} x`, nil), []string{"malformed", "trailing"}},
		{"invalid utf8", rawFile("{\"\xff\":1}", nil), []string{"malformed", "UTF-8"}},
		{"entry not object", rawFile(`{"t":5}`, nil), []string{"malformed", `"t"`}},
		{"duplicate tensor", rawFile(`{"t":{"dtype":"F32","shape":[0,1],"data_offsets":[0,0]},"t":{"dtype":"F32","shape":[0,1],"data_offsets":[0,0]}}`, nil), []string{"malformed", "duplicate"}},
		{"no dtype", rawFile(`{"t":{"shape":[1,2],"data_offsets":[0,8]}}`, eight), []string{"malformed", "no dtype"}},
		{"no shape", rawFile(`{"t":{"dtype":"F32","data_offsets":[0,8]}}`, eight), []string{"malformed", "no shape"}},
		{"no offsets", rawFile(`{"t":{"dtype":"F32","shape":[1,2]}}`, eight), []string{"malformed", "no data_offsets"}},
		{"dtype not string", rawFile(`{"t":{"dtype":4,"shape":[1,2],"data_offsets":[0,8]}}`, eight), []string{"malformed", "dtype must be a string"}},
		{"dtype null", rawFile(`{"t":{"dtype":null,"shape":[1,2],"data_offsets":[0,8]}}`, eight), []string{"malformed", "dtype"}},
		{"shape not array", rawFile(`{"t":{"dtype":"F32","shape":"1,2","data_offsets":[0,8]}}`, eight), []string{"malformed", "shape"}},
		{"shape null", rawFile(`{"t":{"dtype":"F32","shape":null,"data_offsets":[0,8]}}`, eight), []string{"malformed", "shape"}},
		{"shape float", rawFile(`{"t":{"dtype":"F32","shape":[1.0,2],"data_offsets":[0,8]}}`, eight), []string{"malformed", "shape"}},
		{"shape quoted", rawFile(`{"t":{"dtype":"F32","shape":["1",2],"data_offsets":[0,8]}}`, eight), []string{"malformed", "shape"}},
		{"shape negative", rawFile(`{"t":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,8]}}`, eight), []string{"malformed", "negative"}},
		{"shape overflow", rawFile(`{"t":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}`, nil), []string{"malformed", "overflow"}},
		{"shape too large", rawFile(`{"t":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}}`, nil), []string{"malformed", "too large"}},
		{"shape beyond uint64", rawFile(`{"t":{"dtype":"F32","shape":[0,99999999999999999999],"data_offsets":[0,0]}}`, nil), []string{"malformed", "shape"}},
		{"offsets three", rawFile(`{"t":{"dtype":"F32","shape":[1,2],"data_offsets":[0,4,8]}}`, eight), []string{"malformed", "[begin, end]"}},
		{"offsets reversed", rawFile(`{"t":{"dtype":"F32","shape":[0,2],"data_offsets":[8,0]}}`, eight), []string{"malformed", "end before"}},
		{"offsets past end", rawFile(f32(""), make([]byte, 4)), []string{"truncated", `"t"`}},
		{"size mismatch", rawFile(`{"t":{"dtype":"F32","shape":[1,3],"data_offsets":[0,8]}}`, eight), []string{"malformed", "needs 12 bytes"}},
		{"sub-byte size", rawFile(`{"t":{"dtype":"F4","shape":[1,3],"data_offsets":[0,2]}}`, eight), []string{"malformed", "whole number of bytes"}},
		{"unknown key", rawFile(f32(`,"offset":3`), eight), []string{"malformed", `unknown key "offset"`}},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1,1],"data_offsets":[4,8]}}`, eight), []string{"malformed", "overlap"}},
		{"metadata not object", rawFile(`{"__metadata__":[1]}`, nil), []string{"malformed", "__metadata__"}},
		{"metadata value not string", rawFile(`{"__metadata__":{"a":1}}`, nil), []string{"malformed", "__metadata__"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTemp(t, "bad.safetensors", tc.file)
			f, err := Open(p)
			if err == nil {
				f.Close()
			}
			wantErr(t, err, p, tc.frags...)
			_, err = Decode("mem.safetensors", tc.file)
			wantErr(t, err, "mem.safetensors", tc.frags...)
		})
	}
}

func TestLenientButValid(t *testing.T) {
	// Empty tensors take no bytes, so they overlap nothing; null metadata and
	// whitespace padding are accepted; an empty file is merely tensorless.
	eight := make([]byte, 8)
	data := rawFile(`{"__metadata__":null, "a":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]},
		"e":{"dtype":"F32","shape":[0,2],"data_offsets":[4,4]}}   `, eight)
	f, err := Decode("ok.safetensors", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Matrix("e"); err != nil {
		t.Fatal(err)
	}
	f, err = Decode("none.safetensors", rawFile("{}", nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Matrix("")
	wantErr(t, err, "none.safetensors", "holds no tensors")
	_, err = f.Matrix("x")
	wantErr(t, err, "none.safetensors", `no tensor named "x"`)
}

func TestOpenMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing.safetensors")
	_, err := Open(p)
	wantErr(t, err, p, "cannot read file")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(err, fs.ErrNotExist) = false for %v", err)
	}
	if strings.Count(err.Error(), p) != 1 {
		t.Errorf("path printed more than once: %v", err)
	}
}

func TestWriteRejects(t *testing.T) {
	var buf bytes.Buffer
	for _, tc := range []struct {
		tensors []Tensor
		frag    string
	}{
		{[]Tensor{{Name: "__metadata__", DType: "F32", Shape: []int{0}}}, "reserved"},
		{[]Tensor{{Name: "a", DType: "F32", Shape: []int{0}}, {Name: "a", DType: "F32", Shape: []int{0}}}, "duplicate"},
		{[]Tensor{{Name: "a", DType: "F33", Shape: []int{0}}}, "unknown dtype"},
		{[]Tensor{{Name: "a", DType: "F32", Shape: []int{2}, Data: make([]byte, 4)}}, "needs 8 bytes"},
		{[]Tensor{{Name: "a", DType: "F32", Shape: []int{-1}}}, "negative"},
	} {
		if err := Write(&buf, tc.tensors, nil); err == nil || !strings.Contains(err.Error(), tc.frag) {
			t.Errorf("Write(%v) = %v, want %q", tc.tensors, err, tc.frag)
		}
	}
}

func TestWriteAlignsMixedTensors(t *testing.T) {
	// A 2-byte tensor written first by the caller must not push the 8-byte
	// one off its alignment.
	data := encode(t, []Tensor{
		{Name: "a", DType: "F16", Shape: []int{1, 1}, Data: le16(0x3c00)},
		{Name: "b", DType: "F64", Shape: []int{1, 1}, Data: binary.LittleEndian.AppendUint64(nil, math.Float64bits(2))},
		{Name: "c", DType: "F32", Shape: []int{1, 1}, Data: le32(3)},
	}, map[string]string{"k": "v <&>"})
	f, err := Open(writeTemp(t, "mix.safetensors", data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, want := range map[string]float64{"a": 1, "b": 2, "c": 3} {
		m, err := f.Matrix(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.At(0, 0) != want {
			t.Errorf("%s = %v, want %v", name, m.At(0, 0), want)
		}
		if matrix.Clone(m) != matrix.Matrix(m) {
			t.Errorf("%s was copied; the writer should align every tensor", name)
		}
	}
	if f.Metadata()["k"] != "v <&>" {
		t.Errorf("metadata = %v", f.Metadata())
	}
}

func wantErr(t *testing.T, err error, path string, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", frags)
	}
	if !formats.IsInputError(err) {
		t.Errorf("%v is not a *formats.Error", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, path+": ") {
		t.Errorf("%q does not start with the path %q", msg, path)
	}
	for _, f := range frags {
		if !strings.Contains(msg, f) {
			t.Errorf("%q does not contain %q", msg, f)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func itoa(n int) string { return strconv.Itoa(n) }
