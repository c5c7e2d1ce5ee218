package matrix

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

func TestFirstNonFinite(t *testing.T) {
	d64, _ := NewDense64(2, 3, []float64{1, 2, 3, 4, math.Inf(-1), 6})
	d32, _ := NewDense32(2, 2, []float32{1, 2, float32(math.NaN()), 4})
	d16, _ := NewDense16(1, 3, []uint16{0x3c00, 0x0001, 0x7c00}) // 1, subnormal, +Inf
	csr, _ := NewCSR64(3, 4, []int64{0, 1, 1, 3}, []int32{2, 0, 3}, []float64{1, 2, math.NaN()})
	cases := []struct {
		m        Matrix
		row, col int
	}{{d64, 1, 1}, {d32, 1, 0}, {d16, 0, 2}, {csr, 2, 3}}
	for i, c := range cases {
		r, col, bad := FirstNonFinite(c.m)
		if !bad || r != c.row || col != c.col {
			t.Errorf("case %d: got (%d, %d, %v), want (%d, %d)", i, r, col, bad, c.row, c.col)
		}
	}
	ok, _ := NewDense64(1, 2, []float64{math.MaxFloat64, -0.0})
	if _, _, bad := FirstNonFinite(ok); bad {
		t.Error("finite matrix flagged")
	}
}

func TestCSRValidation(t *testing.T) {
	cases := []struct {
		indptr  []int64
		indices []int32
		want    string
	}{
		{[]int64{0, 1}, []int32{0}, "indptr has 2 entries"},
		{[]int64{0, 2, 1}, []int32{0, 1}, "must start at 0 and end at nnz"},
		{[]int64{0, 2, 1}, []int32{0}, "indptr decreases at row 1"},
		{[]int64{0, 1, 1}, []int32{5}, "column index 5 outside"},
		{[]int64{0, 2, 2}, []int32{1, 1}, "duplicate column index"},
	}
	for _, c := range cases {
		_, err := NewCSR64(2, 3, c.indptr, c.indices, make([]float64, len(c.indices)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: got %v, want %q", c.indptr, c.indices, err, c.want)
		}
	}
}

func TestRowsSlicesAndClones(t *testing.T) {
	d, _ := NewDense32(3, 2, []float32{1, 2, 3, 4, 5, 6})
	s := d.RowSlice(1, 3)
	row := make([]float64, 2)
	s.RowFloat64(1, row)
	if s.Rows() != 2 || row[0] != 5 || row[1] != 6 {
		t.Errorf("row slice %v", row)
	}
	c := d.Clone()
	d.Float32Data()[0] = 99
	if c.At(0, 0) != 1 {
		t.Error("clone shares storage")
	}
	if Clone(d.ReadOnly()) != Matrix(d) {
		t.Error("read-only matrices are shared, not copied")
	}
	csr, _ := NewCSR32(3, 4, []int64{0, 1, 1, 3}, []int32{2, 0, 3}, []float32{1, 2, 3})
	sub := csr.RowSlice(1, 3)
	sub.RowFloat64(1, make([]float64, 4))
	full := make([]float64, 4)
	sub.RowFloat64(1, full)
	if full[0] != 2 || full[3] != 3 || sub.NNZ() != 2 {
		t.Errorf("csr row slice %v nnz %d", full, sub.NNZ())
	}
}

func TestWriteLE(t *testing.T) {
	d, _ := NewDense64(1, 3, []float64{1.5, -2, math.SmallestNonzeroFloat64})
	var got, want bytes.Buffer
	if err := d.WriteLE(&got); err != nil {
		t.Fatal(err)
	}
	binary.Write(&want, binary.LittleEndian, []float64{1.5, -2, math.SmallestNonzeroFloat64})
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Error("WriteLE is not the little-endian element layout")
	}
	csr, _ := NewCSR32(2, 3, []int64{0, 1, 2}, []int32{2, 0}, []float32{7, 8})
	got.Reset()
	want.Reset()
	csr.WriteIndptrLE(&got)
	binary.Write(&want, binary.LittleEndian, []int64{0, 1, 2})
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Error("indptr bytes")
	}
}
