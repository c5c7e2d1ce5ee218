package npy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

func TestMapMatrix(t *testing.T) {
	dir := t.TempDir()
	m32, _ := matrix.NewDense32(3, 2, []float32{1, 2, 3, 4, 5, 6})
	m64, _ := matrix.NewDense64(2, 3, []float64{1, -2, 3.5, 4, 5, 6})
	m16, _ := matrix.NewDense16(1, 2, []uint16{0x3c00, 0xc000}) // 1, -2
	for i, m := range []*matrix.Dense{m32, m64, m16} {
		var buf bytes.Buffer
		if err := WriteDense(&buf, m); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "m"+string(rune('0'+i))+".npy")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got, closeFn, err := MapMatrix(p)
		if err != nil {
			t.Fatal(err)
		}
		if got.DType() != m.DType() || got.Rows() != m.Rows() || got.Cols() != m.Cols() {
			t.Fatalf("shape/dtype %v %d×%d", got.DType(), got.Rows(), got.Cols())
		}
		for r := 0; r < m.Rows(); r++ {
			for c := 0; c < m.Cols(); c++ {
				if got.At(r, c) != m.At(r, c) {
					t.Fatalf("(%d,%d) = %v, want %v", r, c, got.At(r, c), m.At(r, c))
				}
			}
		}
		if matrix.Clone(got) != matrix.Matrix(got) {
			t.Error("a mapped matrix is read-only and must not be copied by Clone")
		}
		if err := closeFn(); err != nil {
			t.Fatal(err)
		}
	}
	// Big-endian data is decoded into memory instead.
	be := []byte("\x93NUMPY\x01\x00")
	header := "{'descr': '>f8', 'fortran_order': False, 'shape': (1, 1), }"
	header += strings.Repeat(" ", 128-10-len(header)-1) + "\n"
	be = append(be, byte(len(header)), 0)
	be = append(be, header...)
	be = append(be, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18) // π
	p := filepath.Join(dir, "be.npy")
	os.WriteFile(p, be, 0o644)
	got, closeFn, err := MapMatrix(p)
	if err != nil || got.At(0, 0) != 3.141592653589793 {
		t.Fatalf("big-endian: %v %v", got, err)
	}
	closeFn()
	// Errors name the file.
	os.WriteFile(p, be[:len(be)-3], 0o644)
	if _, _, err := MapMatrix(p); err == nil || !strings.Contains(err.Error(), "be.npy") || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated: %v", err)
	}
	if _, _, err := MapMatrix(filepath.Join(dir, "missing.npy")); err == nil || !strings.Contains(err.Error(), "missing.npy") {
		t.Fatalf("missing: %v", err)
	}
}

// A mapped file with bytes after its data is refused, as a decoded one is.
func TestMapMatrixRefusesTrailingBytes(t *testing.T) {
	t.Parallel()
	m, _ := matrix.NewDense32(2, 2, []float32{1, 2, 3, 4})
	var buf bytes.Buffer
	if err := WriteDense(&buf, m); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "extra.npy")
	if err := os.WriteFile(p, append(buf.Bytes(), 0, 0, 0, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := MapMatrix(p); !errors.Is(err, ErrTrailing) || !strings.Contains(err.Error(), "extra.npy") {
		t.Fatalf("err = %v, want ErrTrailing naming the file", err)
	}
}

// A mapped matrix reads strided rows from its file (matrix.ReadStridedRows)
// bit-identical to the mapping's, for every dtype, every shard of N ∈ {1,
// 2, 3, 7} over rows that are not a multiple of N, whatever the header
// length (the elements' offset); a decoded one (big-endian) has no file.
func TestMapMatrixReadsStridedRowsFromTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const rows, cols = 23, 3
	v := make([]float64, rows*cols)
	for i := range v {
		v[i] = float64(i)*1.25 - 7
	}
	m64, _ := matrix.NewDense64(rows, cols, v)
	f32 := make([]float32, len(v))
	f16 := make([]uint16, len(v))
	for i, x := range v {
		f32[i] = float32(x)
		f16[i] = uint16(0x3c00 + i) // arbitrary bit patterns
	}
	m32, _ := matrix.NewDense32(rows, cols, f32)
	m16, _ := matrix.NewDense16(rows, cols, f16)
	for i, m := range []*matrix.Dense{m16, m32, m64} {
		var buf bytes.Buffer
		if err := WriteDense(&buf, m); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "s"+string(rune('0'+i))+".npy")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got, closeFn, err := MapMatrix(p)
		if err != nil {
			t.Fatal(err)
		}
		if !got.HasFileRows() {
			t.Fatalf("%v: a mapped matrix has no backing file", m.DType())
		}
		for _, n := range []int{1, 2, 3, 7} {
			for s := range n {
				count := (rows - s + n - 1) / n
				want, err := matrix.StridedRows(m, s, n, count)
				if err != nil {
					t.Fatal(err)
				}
				read, err := matrix.ReadStridedRows(got, s, n, count)
				if err != nil {
					t.Fatal(err)
				}
				var a, b bytes.Buffer
				want.(*matrix.Dense).WriteLE(&a)
				read.(*matrix.Dense).WriteLE(&b)
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Fatalf("%v: shard %d/%d read from the file differs", m.DType(), s, n)
				}
			}
		}
		if err := closeFn(); err != nil {
			t.Fatal(err)
		}
	}
	be := []byte("\x93NUMPY\x01\x00")
	header := "{'descr': '>f8', 'fortran_order': False, 'shape': (1, 1), }"
	header += strings.Repeat(" ", 128-10-len(header)-1) + "\n"
	be = append(be, byte(len(header)), 0)
	be = append(be, header...)
	be = append(be, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18)
	p := filepath.Join(dir, "be.npy")
	os.WriteFile(p, be, 0o644)
	got, closeFn, err := MapMatrix(p)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if got.HasFileRows() {
		t.Error("a decoded (big-endian) matrix claims a backing file")
	}
}
