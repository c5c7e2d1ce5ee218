package rank

import (
	"math/rand/v2"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// prepareBenchGallery is a 20,000 × 384 float32 read-only gallery (a mapped
// .npy file as retrieval run sees it) with its cosine source.
func prepareBenchGallery(b *testing.B) (*matrix.Dense, *source) {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	rows, d := 20000, 384
	f := make([]float32, rows*d)
	for i := range f {
		f[i] = float32(r.NormFloat64())
	}
	m, err := matrix.NewDense32(rows, d, f)
	if err != nil {
		b.Fatal(err)
	}
	m.ReadOnly()
	sc := scanEndpoint(m, true, 1)
	return m, &source{m: m, rows: rows, cols: d, prec: Float64, cosine: true, norms: sc.norms}
}

// BenchmarkPrepareCosine32 is the fused endpoint pass of a cosine run
// (finiteness, row maxima, SPEC §4.1 norms) on one thread.
func BenchmarkPrepareCosine32(b *testing.B) {
	m, _ := prepareBenchGallery(b)
	b.SetBytes(int64(m.Rows() * m.Cols() * 4))
	for b.Loop() {
		scanEndpoint(m, true, 1)
	}
}

// BenchmarkScreenRows32 produces the screen's float32 rows and norm bounds
// of the whole gallery a row at a time (screenedBlock), and
// BenchmarkScreenRows32Block the same through a float64 copy of each
// 1,000-row block, for comparison.
func BenchmarkScreenRows32(b *testing.B) {
	m, src := prepareBenchGallery(b)
	d := m.Cols()
	tmp, y32 := make([]float64, d), make([]float32, d)
	b.SetBytes(int64(m.Rows() * d * 4))
	for b.Loop() {
		for i := range m.Rows() {
			src.screenRow(i, tmp, y32)
		}
	}
}

func BenchmarkScreenRows32Block(b *testing.B) {
	m, src := prepareBenchGallery(b)
	d, blk := m.Cols(), 1000
	buf, y32 := make([]float64, blk*d), make([]float32, blk*d)
	b.SetBytes(int64(m.Rows() * d * 4))
	for b.Loop() {
		for g0 := 0; g0 < m.Rows(); g0 += blk {
			g := src.block64(g0, g0+blk, buf)
			for j := range blk {
				convertNormBound(g[j*d:(j+1)*d], y32[j*d:(j+1)*d])
			}
		}
	}
}
