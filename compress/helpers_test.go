package compress

import (
	"context"
	"math"
	"testing"

	"github.com/x448/float16"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

func float16FromFloat32(f float32) uint16 { return float16.Fromfloat32(f).Bits() }
func float16ToFloat32(b uint16) float32   { return float16.Frombits(b).Float32() }

func ptr[T any](v T) *T { return &v }

func dense(t *testing.T, rows [][]float64) *matrix.Dense {
	t.Helper()
	m, err := matrix.FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func dense32(t *testing.T, rows [][]float64) *matrix.Dense {
	t.Helper()
	data := make([]float32, 0)
	for _, r := range rows {
		for _, v := range r {
			data = append(data, float32(v))
		}
	}
	m, err := matrix.NewDense32(len(rows), len(rows[0]), data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// csr stores the non-zero entries of rows as a float64 CSR matrix.
func csr(t *testing.T, rows [][]float64) *matrix.CSR {
	t.Helper()
	indptr := []int64{0}
	var indices []int32
	var data []float64
	for _, r := range rows {
		for j, v := range r {
			if v != 0 {
				indices = append(indices, int32(j))
				data = append(data, v)
			}
		}
		indptr = append(indptr, int64(len(indices)))
	}
	m, err := matrix.NewCSR64(len(rows), len(rows[0]), indptr, indices, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func rowsOf(m matrix.Matrix) [][]float64 {
	out := make([][]float64, m.Rows())
	for i := range out {
		out[i] = make([]float64, m.Cols())
		m.RowFloat64(i, out[i])
	}
	return out
}

func identity(n int) [][]float64 {
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = make([]float64, n)
		rows[i][i] = 1
	}
	return rows
}

func apply(t *testing.T, cfg Config, q, g matrix.Matrix) *Result {
	t.Helper()
	res, err := Apply(context.Background(), cfg, q, g)
	if err != nil {
		t.Fatalf("Apply(%+v): %v", cfg.AsMap(), err)
	}
	return res
}

func near(t *testing.T, what string, got, want [][]float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s row %d: %d values, want %d", what, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if math.Abs(got[i][j]-want[i][j]) > tol {
				t.Fatalf("%s[%d][%d] = %.17g, want %.17g (tol %g)", what, i, j, got[i][j], want[i][j], tol)
			}
		}
	}
}

func cfgOf(method string, k int) Config {
	c := Default()
	c.Method = method
	c.NComponents = &k
	return c
}
