package npz

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/x448/float16"
)

type member struct {
	name string
	data []byte
}

// buildZip writes members (names taken verbatim) with the given method.
func buildZip(t testing.TB, method uint16, members ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range members {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func i32(t testing.TB, v ...int32) []byte {
	var b bytes.Buffer
	if err := npy.WriteInt32(&b, []int{len(v)}, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func i64(t testing.TB, v ...int64) []byte {
	var b bytes.Buffer
	if err := npy.WriteInt64(&b, []int{len(v)}, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func f64(t testing.TB, v ...float64) []byte {
	var b bytes.Buffer
	if err := npy.WriteFloat64(&b, []int{len(v)}, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func f32(t testing.TB, v ...float32) []byte {
	var b bytes.Buffer
	if err := npy.WriteFloat32(&b, []int{len(v)}, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// raw builds an npy file with an arbitrary descriptor and payload.
func raw(t testing.TB, descr string, shape []int, payload []byte) []byte {
	var b bytes.Buffer
	if err := npy.WriteHeader(&b, npy.Header{Descr: descr, Shape: shape}); err != nil {
		t.Fatal(err)
	}
	b.Write(payload)
	return b.Bytes()
}

// unicodeFormat is np.array('csr'): dtype <U3, shape ().
func unicodeFormat(t testing.TB, s string) []byte {
	var p []byte
	for _, r := range s {
		p = binary.LittleEndian.AppendUint32(p, uint32(r))
	}
	return raw(t, "<U"+string(rune('0'+len(s))), []int{}, p)
}

// bytesFormat is np.array(b'csr'): dtype |S3, shape ().
func bytesFormat(t testing.TB, s string) []byte {
	return raw(t, "|S"+string(rune('0'+len(s))), []int{}, []byte(s))
}

// scipyCSR is a scipy-like 2x4 archive whose rows are stored unsorted:
// row 0 = {3: 30, 1: 10}, row 1 = {2: 20, 0: 5, 1: 15}.
func scipyCSR(t testing.TB, method uint16, format []byte) []byte {
	return buildZip(t, method,
		member{"indices.npy", i32(t, 3, 1, 2, 0, 1)},
		member{"indptr.npy", i32(t, 0, 2, 5)},
		member{"format.npy", format},
		member{"shape.npy", i64(t, 2, 4)},
		member{"data.npy", f64(t, 30, 10, 20, 5, 15)},
	)
}

func csrRows(m *matrix.CSR) [][2][]float64 {
	var out [][2][]float64
	for i := 0; i < m.Rows(); i++ {
		idx, vals := m.RowEntries(i, nil)
		cols := make([]float64, len(idx))
		for k, c := range idx {
			cols[k] = float64(c)
		}
		out = append(out, [2][]float64{cols, append([]float64(nil), vals...)})
	}
	return out
}

func TestScipyCSRSortsRows(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method uint16
		format []byte
	}{
		{"stored unicode", zip.Store, unicodeFormat(t, "csr")},
		{"deflated bytes", zip.Deflate, bytesFormat(t, "csr")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Decode("emb.npz", scipyCSR(t, tc.method, tc.format))
			if err != nil {
				t.Fatal(err)
			}
			if !a.IsSparse() {
				t.Fatal("IsSparse = false")
			}
			if got := a.Names(); !reflect.DeepEqual(got, []string{"indices", "indptr", "format", "shape", "data"}) {
				t.Fatalf("Names = %v", got)
			}
			if f, err := a.SparseFormat(); f != "csr" || err != nil {
				t.Fatalf("SparseFormat = %q, %v", f, err)
			}
			m, err := a.CSRMatrix()
			if err != nil {
				t.Fatal(err)
			}
			if m.Rows() != 2 || m.Cols() != 4 || m.DType() != matrix.Float64 || m.NNZ() != 5 {
				t.Fatalf("got %dx%d %v nnz %d", m.Rows(), m.Cols(), m.DType(), m.NNZ())
			}
			want := [][2][]float64{{{1, 3}, {10, 30}}, {{0, 1, 2}, {5, 15, 20}}}
			if got := csrRows(m); !reflect.DeepEqual(got, want) {
				t.Fatalf("rows %v, want %v", got, want)
			}

			// Relevance keeps the stored order.
			r, err := a.CSRRelevance()
			if err != nil {
				t.Fatal(err)
			}
			wantRel := &SparseRelevance{Rows: 2, Cols: 4, Indptr: []int64{0, 2, 5}, Indices: []int64{3, 1, 2, 0, 1}, Data: []float64{30, 10, 20, 5, 15}}
			if !reflect.DeepEqual(r, wantRel) {
				t.Fatalf("relevance %+v, want %+v", r, wantRel)
			}
		})
	}
}

func TestCSRRoundTrip(t *testing.T) {
	m32, err := matrix.NewCSR32(3, 5, []int64{0, 2, 2, 3}, []int32{0, 4, 2}, []float32{1.5, -2, 3})
	if err != nil {
		t.Fatal(err)
	}
	m64, err := matrix.NewCSR64(2, 3, []int64{0, 1, 3}, []int32{1, 0, 2}, []float64{math.Pi, -1, 1e200})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := matrix.NewCSR64(0, 3, []int64{0}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*matrix.CSR{m32, m64, empty} {
		var buf bytes.Buffer
		if err := WriteCSR(&buf, m); err != nil {
			t.Fatal(err)
		}
		a, err := Decode("c.npz", buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if f, err := a.SparseFormat(); f != "csr" || err != nil {
			t.Fatalf("format %q, %v", f, err)
		}
		got, err := a.CSRMatrix()
		if err != nil {
			t.Fatal(err)
		}
		if got.DType() != m.DType() || got.Rows() != m.Rows() || got.Cols() != m.Cols() || !reflect.DeepEqual(csrRows(got), csrRows(m)) {
			t.Fatalf("round trip %v %v, want %v %v", got.DType(), csrRows(got), m.DType(), csrRows(m))
		}
		// scipy writes int32 indices and indptr for small matrices.
		for _, name := range []string{"indices", "indptr"} {
			b, err := a.member(name)
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := npy.ParseHeader(b)
			if err != nil || h.Descr != "<i4" {
				t.Errorf("%s descr %q, %v", name, h.Descr, err)
			}
		}
		b, _ := a.member("format")
		if h, _, _ := npy.ParseHeader(b); h.Descr != "|S3" || len(h.Shape) != 0 {
			t.Errorf("format header %+v", h)
		}
	}
}

func TestSparseRelevanceRoundTrip(t *testing.T) {
	r := &SparseRelevance{Rows: 3, Cols: 4, Indptr: []int64{0, 3, 3, 4}, Indices: []int64{2, 0, 2}, Data: []float64{1, 2, 0.5}}
	r.Indices = append(r.Indices, 3)
	var buf bytes.Buffer
	if err := WriteSparseRelevance(&buf, r); err == nil {
		t.Fatal("4 indices with 3 values accepted")
	}

	if buf.Len() != 0 {
		t.Fatal("a rejected relevance wrote bytes")
	}
	r.Data = append(r.Data, 7)
	if err := WriteSparseRelevance(&buf, r); err != nil {
		t.Fatal(err)
	}
	a, err := Decode("q.npz", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.CSRRelevance()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("got %+v, want %+v", got, r)
	}
	// Duplicates (row 0 has column 2 twice) are an error for embeddings.
	if _, err := a.CSRMatrix(); err == nil || !strings.Contains(err.Error(), "duplicate column index 2") || !strings.Contains(err.Error(), "row 0") {
		t.Fatalf("CSRMatrix on duplicates: %v", err)
	}

	for _, bad := range []*SparseRelevance{
		{Rows: 1, Cols: 2, Indptr: []int64{0}, Indices: nil, Data: nil},
		{Rows: 1, Cols: 2, Indptr: []int64{0, 1}, Indices: []int64{2}, Data: []float64{1}},
		{Rows: -1, Cols: 2},
	} {
		if err := WriteSparseRelevance(&buf, bad); err == nil {
			t.Errorf("WriteSparseRelevance(%+v) accepted", bad)
		}
	}
}

func TestRelevanceDTypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want []float64
	}{
		{"int64", i64(t, 3, 1), []float64{3, 1}},
		{"int32", i32(t, 2, 0), []float64{2, 0}},
		{"uint8", raw(t, "|u1", []int{2}, []byte{4, 9}), []float64{4, 9}},
		{"bool", raw(t, "|b1", []int{2}, []byte{1, 1}), []float64{1, 1}},
		{"float32", f32(t, 0.5, 2), []float64{0.5, 2}},
		{"float16", raw(t, "<f2", []int{2}, binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(nil,
			float16.Fromfloat32(1.5).Bits()), float16.Fromfloat32(3).Bits())), []float64{1.5, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := buildZip(t, zip.Store,
				member{"indices.npy", i64(t, 1, 1)}, // duplicate kept
				member{"indptr.npy", i64(t, 0, 2, 2)},
				member{"format.npy", bytesFormat(t, "csr")},
				member{"shape.npy", i64(t, 2, 3)},
				member{"data.npy", tc.data},
			)
			a, err := Decode("q.npz", z)
			if err != nil {
				t.Fatal(err)
			}
			r, err := a.CSRRelevance()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Data, tc.want) || !reflect.DeepEqual(r.Indices, []int64{1, 1}) {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func TestFloat16CSRWidened(t *testing.T) {
	var p []byte
	for _, v := range []float32{2, 0.5} {
		p = binary.LittleEndian.AppendUint16(p, float16.Fromfloat32(v).Bits())
	}
	z := buildZip(t, zip.Store,
		member{"indices.npy", i64(t, 1, 0)},
		member{"indptr.npy", i64(t, 0, 2)},
		member{"format.npy", unicodeFormat(t, "csr")},
		member{"shape.npy", i32(t, 1, 2)},
		member{"data.npy", raw(t, "<f2", []int{2}, p)},
	)
	a, err := Decode("h.npz", z)
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.CSRMatrix()
	if err != nil {
		t.Fatal(err)
	}
	if m.DType() != matrix.Float32 || !reflect.DeepEqual(csrRows(m), [][2][]float64{{{0, 1}, {0.5, 2}}}) {
		t.Fatalf("got %v %v", m.DType(), csrRows(m))
	}
}

func TestDenseArchive(t *testing.T) {
	m, _ := matrix.NewDense32(2, 2, []float32{1, 2, 3, 4})
	var buf bytes.Buffer
	if err := WriteDense(&buf, "emb", m); err != nil {
		t.Fatal(err)
	}
	a, err := Decode("d.npz", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if a.IsSparse() || !reflect.DeepEqual(a.Names(), []string{"emb"}) {
		t.Fatalf("IsSparse %v, Names %v", a.IsSparse(), a.Names())
	}
	for _, name := range []string{"", "emb", "emb.npy"} {
		got, err := a.DenseMatrix(name)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if got.Rows() != 2 || got.At(1, 0) != 3 || got.DType() != matrix.Float32 {
			t.Fatalf("%q: wrong matrix", name)
		}
	}
	if _, err := a.CSRMatrix(); err == nil || !strings.Contains(err.Error(), "not a sparse matrix archive") {
		t.Errorf("CSRMatrix on dense: %v", err)
	}

	buf.Reset()
	if err := WriteDense(&buf, "", m); err != nil {
		t.Fatal(err)
	}
	a, _ = Decode("d.npz", buf.Bytes())
	if !reflect.DeepEqual(a.Names(), []string{"arr_0"}) {
		t.Errorf("Names = %v", a.Names())
	}

	// Deflated dense members (np.savez_compressed) and file round trip.
	var nb bytes.Buffer
	if err := npy.WriteDense(&nb, m); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "z.npz")
	if err := os.WriteFile(p, buildZip(t, zip.Deflate, member{"x.npy", nb.Bytes()}), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err = Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.DenseMatrix(""); err != nil || got.At(0, 1) != 2 {
		t.Fatalf("deflated: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing.npz")
	if _, err := Open(missing); !errors.Is(err, fs.ErrNotExist) || strings.Count(err.Error(), missing) != 1 {
		t.Errorf("Open(missing) = %v", err)
	}
}

// corruptSize bumps the compressed and uncompressed sizes of the first
// central-directory entry so the member claims more bytes than exist.
func corruptSize(z []byte) []byte {
	z = append([]byte(nil), z...)
	i := bytes.Index(z, []byte("PK\x01\x02"))
	binary.LittleEndian.PutUint32(z[i+20:], 1<<30)
	binary.LittleEndian.PutUint32(z[i+24:], 1<<30)
	return z
}

func TestErrors(t *testing.T) {
	m, _ := matrix.NewDense64(1, 2, []float64{1, 2})
	var one bytes.Buffer
	_ = npy.WriteDense(&one, m)
	dense := one.Bytes()
	twoArrays := buildZip(t, zip.Store, member{"q.npy", dense}, member{"g.npy", dense})
	csr := func(mut func(ms []member) []member) []byte {
		ms := []member{
			{"indices.npy", i32(t, 1, 0, 1)},
			{"indptr.npy", i32(t, 0, 2, 3)},
			{"format.npy", bytesFormat(t, "csr")},
			{"shape.npy", i64(t, 2, 3)},
			{"data.npy", f32(t, 1, 2, 3)},
		}
		if mut != nil {
			ms = mut(ms)
		}
		return buildZip(t, zip.Store, ms...)
	}
	set := func(name string, data []byte) func([]member) []member {
		return func(ms []member) []member {
			for i := range ms {
				if ms[i].name == name+".npy" {
					ms[i].data = data
					return ms
				}
			}
			return append(ms, member{name + ".npy", data})
		}
	}
	drop := func(name string) func([]member) []member {
		return func(ms []member) []member {
			var out []member
			for _, m := range ms {
				if m.name != name+".npy" {
					out = append(out, m)
				}
			}
			return out
		}
	}
	coo := buildZip(t, zip.Store,
		member{"row.npy", i32(t, 0)}, member{"col.npy", i32(t, 0)},
		member{"format.npy", bytesFormat(t, "coo")}, member{"shape.npy", i64(t, 1, 1)},
		member{"data.npy", f64(t, 1)})

	type call func(a *Archive) error
	dense0 := func(a *Archive) error { _, err := a.DenseMatrix(""); return err }
	denseNamed := func(n string) call { return func(a *Archive) error { _, err := a.DenseMatrix(n); return err } }
	csrM := func(a *Archive) error { _, err := a.CSRMatrix(); return err }
	csrR := func(a *Archive) error { _, err := a.CSRRelevance(); return err }
	format := func(a *Archive) error { _, err := a.SparseFormat(); return err }

	tests := []struct {
		name  string
		file  []byte
		call  call
		wants []string
	}{
		{"not a zip", []byte("definitely not a zip archive"), nil, []string{"malformed"}},
		{"cut zip", twoArrays[:len(twoArrays)-10], nil, []string{"malformed"}},
		{"declared size too large", corruptSize(twoArrays), denseNamed("q"), []string{"truncated", `array "q"`}},
		{"bad member npy", buildZip(t, zip.Store, member{"x.npy", []byte("junk")}), dense0, []string{`array "x"`, "malformed"}},
		{"cut member npy", buildZip(t, zip.Store, member{"x.npy", dense[:len(dense)-3]}), dense0, []string{`array "x"`, "truncated"}},
		{"1-D member", buildZip(t, zip.Store, member{"x.npy", f64(t, 1, 2)}), dense0, []string{"must be a 2D array"}},
		{"int member", buildZip(t, zip.Store, member{"x.npy", raw(t, "<i8", []int{1, 1}, make([]byte, 8))}), dense0, []string{`unsupported dtype "<i8"`}},
		{"multi-array needs a name", twoArrays, dense0, []string{"--queries-tensor/--gallery-tensor", "q, g"}},
		{"unknown name", twoArrays, denseNamed("zz"), []string{`no array named "zz"`}},
		{"empty archive", buildZip(t, zip.Store), dense0, []string{"no arrays"}},
		{"duplicate names", buildZip(t, zip.Store, member{"a.npy", dense}, member{"a", dense}), nil, []string{"malformed", `"a"`}},
		{"CSR archive as dense", csr(nil), dense0, []string{"sparse"}},
		{"CSR archive as dense, named", csr(nil), denseNamed("data"), []string{"sparse"}},
		{"bsr rejected", csr(set("format", bytesFormat(t, "bsr"))), csrM, []string{`unsupported sparse format "bsr"`}},
		{"csc rejected for relevance", csr(set("format", unicodeFormat(t, "csc"))), csrR, []string{`unsupported sparse format "csc"`}},
		{"coo rejected", coo, csrM, []string{`unsupported sparse format "coo"`}},
		{"coo relevance rejected", coo, csrR, []string{`unsupported sparse format "coo"`}},
		{"format not a string", csr(set("format", i64(t, 1))), format, []string{"malformed", "want a string"}},
		{"format 2 strings", csr(set("format", raw(t, "|S3", []int{2}, []byte("csrcsr")))), format, []string{"malformed"}},
		{"format cut", csr(set("format", raw(t, "|S3", []int{}, []byte("cs")))), format, []string{"truncated"}},
		{"missing indptr", csr(drop("indptr")), csrM, []string{"malformed", `"indptr"`}},
		{"indptr too short", csr(set("indptr", i32(t, 0, 3))), csrM, []string{"bad CSR indptr", "want rows+1 = 3"}},
		{"indptr not from 0", csr(set("indptr", i32(t, 1, 2, 3))), csrR, []string{"bad CSR indptr", "starts at 1"}},
		{"indptr decreasing", csr(set("indptr", i32(t, 0, 3, 2))), csrM, []string{"bad CSR indptr", "row 1"}},
		{"indptr wrong end", csr(set("indptr", i32(t, 0, 1, 2))), csrR, []string{"bad CSR indptr", "3 stored indices"}},
		{"index out of range", csr(set("indices", i32(t, 1, 0, 3))), csrM, []string{"row 1", "out-of-range index 3"}},
		{"negative index", csr(set("indices", i32(t, 1, -1, 0))), csrR, []string{"row 0", "out-of-range index -1"}},
		{"duplicate index", csr(set("indices", i32(t, 1, 1, 0))), csrM, []string{"row 0", "duplicate column index 1"}},
		{"float indices", csr(set("indices", f64(t, 1, 0, 1))), csrM, []string{`unsupported dtype "<f8"`, `"indices"`}},
		{"int data for embeddings", csr(set("data", i64(t, 1, 2, 3))), csrM, []string{`unsupported dtype "<i8"`, `"data"`}},
		{"string data for relevance", csr(set("data", unicodeFormat(t, "abc"))), csrR, []string{"unsupported dtype", `"data"`}},
		{"data too short", csr(set("data", f32(t, 1, 2))), csrM, []string{"malformed", `"data"`}},
		{"data too short (relevance)", csr(set("data", f32(t, 1, 2))), csrR, []string{"malformed", `"data"`}},
		{"shape of 3", csr(set("shape", i64(t, 2, 3, 4))), csrM, []string{"malformed", "2 integers"}},
		{"negative shape", csr(set("shape", i64(t, -2, 3))), csrR, []string{"malformed", "bad shape"}},
		{"2-D indices", csr(set("indices", raw(t, "<i4", []int{3, 1}, make([]byte, 12)))), csrM, []string{"malformed", "1-D"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Decode("bad.npz", tt.file)
			if tt.call != nil {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				err = tt.call(a)
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wants)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var fe *formats.Error
			if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "bad.npz: ") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// TestWideRelevanceIsCheap checks that a 2 x 1,000,000 relevance matrix with
// three entries is read from its entries only.
func TestWideRelevanceIsCheap(t *testing.T) {
	r := &SparseRelevance{Rows: 2, Cols: 1_000_000, Indptr: []int64{0, 2, 3}, Indices: []int64{999_999, 5, 0}, Data: []float64{1, 2, 3}}
	var buf bytes.Buffer
	if err := WriteSparseRelevance(&buf, r); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 4096 {
		t.Fatalf("archive is %d bytes", buf.Len())
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	a, err := Decode("wide.npz", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.CSRRelevance()
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("got %+v", got)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("reading allocated %d bytes", n)
	}
}

// fuzzSep splits a fuzz input into member payloads. Mutating a real zip
// mostly breaks its CRCs, so the target also packs the pieces into a valid
// archive to reach the array decoders and the CSR checks.
var fuzzSep = []byte("|NPZ|")

var fuzzNames = []string{"indices", "indptr", "format", "shape", "data", "extra"}

func pack(t testing.TB, data []byte) []byte {
	var ms []member
	for i, p := range bytes.SplitN(data, fuzzSep, len(fuzzNames)) {
		ms = append(ms, member{fuzzNames[i] + ".npy", p})
	}
	return buildZip(t, zip.Store, ms...)
}

func exercise(t *testing.T, data []byte) {
	a, err := Decode("fuzz.npz", data)
	if err != nil {
		if !formats.IsInputError(err) {
			t.Fatalf("error %v is not a formats.Error", err)
		}
		return
	}
	_ = a.IsSparse()
	_, _ = a.SparseFormat()
	_, _ = a.DenseMatrix("")
	for _, n := range a.Names() {
		_, _ = a.DenseMatrix(n)
	}
	if m, err := a.CSRMatrix(); err == nil {
		_ = csrRows(m)
	} else if !formats.IsInputError(err) {
		t.Fatalf("CSRMatrix error %v is not a formats.Error", err)
	}
	if r, err := a.CSRRelevance(); err == nil {
		if len(r.Indptr) != r.Rows+1 || len(r.Data) != len(r.Indices) {
			t.Fatalf("inconsistent relevance %+v", r)
		}
	} else if !formats.IsInputError(err) {
		t.Fatalf("CSRRelevance error %v is not a formats.Error", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(scipyCSR(f, zip.Store, unicodeFormat(f, "csr")))
	f.Add(scipyCSR(f, zip.Deflate, bytesFormat(f, "csr")))
	m, _ := matrix.NewDense32(1, 2, []float32{1, 2})
	var buf bytes.Buffer
	_ = WriteDense(&buf, "x", m)
	f.Add(buf.Bytes())
	buf.Reset()
	_ = WriteSparseRelevance(&buf, &SparseRelevance{Rows: 1, Cols: 3, Indptr: []int64{0, 2}, Indices: []int64{2, 2}, Data: []float64{1, 1}})
	f.Add(buf.Bytes())
	// Member payloads joined by fuzzSep (see pack).
	f.Add(bytes.Join([][]byte{i32(f, 3, 1, 2, 0, 1), i32(f, 0, 2, 5), unicodeFormat(f, "csr"), i64(f, 2, 4), f64(f, 30, 10, 20, 5, 15)}, fuzzSep))
	f.Add(bytes.Join([][]byte{i64(f, 1, 1), i64(f, 0, 2), bytesFormat(f, "csr"), i32(f, 1, 3), f32(f, 1, 2)}, fuzzSep))
	f.Fuzz(func(t *testing.T, data []byte) {
		exercise(t, data)
		exercise(t, pack(t, data))
	})
}
