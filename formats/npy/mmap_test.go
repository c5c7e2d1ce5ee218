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
