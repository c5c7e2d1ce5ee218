package rank

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

func bitsEqual(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// extremeRows builds rows of width d mixing ordinary values with the
// extremes a float32, float64 or float16 file can hold: subnormals,
// values near the largest finite ones, a single non-zero, signed zeros
// and, when nonFinite is set, NaN and ±Inf.
func extremeRows(r *rand.Rand, rows, d int, big float64, nonFinite bool) []float64 {
	v := make([]float64, rows*d)
	for i := range rows {
		row := v[i*d : (i+1)*d]
		switch i % 6 {
		case 0:
			for j := range row {
				row[j] = r.NormFloat64()
			}
		case 1: // magnitudes spanning the whole range
			for j := range row {
				row[j] = r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30)
			}
			row[r.IntN(d)] = big
		case 2: // one non-zero
			row[r.IntN(d)] = -big
		case 3: // subnormal-sized values and signed zeros
			for j := range row {
				row[j] = []float64{0x1p-149, -0x1p-140, math.Copysign(0, -1), 0x1p-130}[r.IntN(4)]
			}
		case 4:
			for j := range row {
				row[j] = big * (2*r.Float64() - 1)
			}
		case 5:
			for j := range row {
				row[j] = r.NormFloat64()
			}
			if nonFinite {
				row[r.IntN(d)] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[r.IntN(3)]
			}
		}
	}
	return v
}

// storedAs stores v (rows×d) as dt.
func storedAs(t *testing.T, dt matrix.DType, rows, d int, v []float64) *matrix.Dense {
	t.Helper()
	var m *matrix.Dense
	var err error
	switch dt {
	case matrix.Float64:
		m, err = matrix.NewDense64(rows, d, v)
	case matrix.Float32:
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		m, err = matrix.NewDense32(rows, d, f)
	case matrix.Float16:
		b := make([]uint16, len(v))
		for i, x := range v {
			b[i] = float16.Fromfloat32(float32(x)).Bits()
		}
		m, err = matrix.NewDense16(rows, d, b)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The float64 working rows produced a row at a time (row64, block64,
// block32, screenRow, blockRows64) are the bits of the definition: the
// stored value widened (RowFloat64), divided by the row norm with the
// scalar division under cosine, then rounded and bounded by
// convertNormBound, for every storage type, widths 1…769 (whole vectors
// and tails of the vector division), extreme and non-finite rows.
func TestRowProductionMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	for _, d := range []int{1, 3, 17, 384, 769} {
		for _, dt := range []matrix.DType{matrix.Float64, matrix.Float32, matrix.Float16} {
			big := map[matrix.DType]float64{matrix.Float64: 1e300, matrix.Float32: 3e38, matrix.Float16: 60000}[dt]
			rows := 12
			m := storedAs(t, dt, rows, d, extremeRows(r, rows, d, big, true))
			for _, cosine := range []bool{true, false} {
				src := &source{m: m, rows: rows, cols: d, prec: Float64, cosine: cosine}
				if cosine {
					src.norms = make([]float64, rows)
					for i := range src.norms {
						src.norms[i] = []float64{1, 3, 0.1, 1e-300, 7e300, math.NaN(), math.Inf(1), 1.0000000000000002}[(i+d)%8]
					}
				}
				want := make([]float64, rows*d)
				for i := range rows {
					row := want[i*d : (i+1)*d]
					m.RowFloat64(i, row)
					if cosine {
						for j := range row {
							row[j] /= src.norms[i]
						}
					}
				}
				got := src.block64(0, rows, make([]float64, rows*d))
				got32 := src.block32(0, rows, make([]float32, rows*d), make([]float64, d))
				var br blockRows64
				br.reset(src, 0, rows)
				for i := range rows {
					tmp, y32, w32 := make([]float64, d), make([]float32, d), make([]float32, d)
					rb, fb := src.screenRow(i, tmp, y32)
					wr, wf := convertNormBound(want[i*d:(i+1)*d], w32)
					if !bitsEqual(rb, wr) || fb != wf {
						t.Fatalf("d=%d %v cosine=%v row %d: bound (%v, %v), want (%v, %v)", d, dt, cosine, i, rb, fb, wr, wf)
					}
					lazy := br.row(i)
					again := br.row(i)
					for j := range d {
						k := i*d + j
						w := want[k]
						if !bitsEqual(got[k], w) || !bitsEqual(tmp[j], w) || !bitsEqual(lazy[j], w) || !bitsEqual(again[j], w) {
							t.Fatalf("d=%d %v cosine=%v (%d,%d): block64 %v, screenRow %v, lazy %v/%v, want %v", d, dt, cosine, i, j, got[k], tmp[j], lazy[j], again[j], w)
						}
						if !bitsEqual(float64(y32[j]), float64(w32[j])) || !bitsEqual(float64(got32[k]), float64(float32(w))) {
							t.Fatalf("d=%d %v cosine=%v (%d,%d): float32 %v / %v, want %v", d, dt, cosine, i, j, y32[j], got32[k], float32(w))
						}
					}
				}
				// A span after single rows: the whole block, the same bits.
				span := br.span(2, rows)
				for k, v := range span {
					if !bitsEqual(v, want[2*d+k]) {
						t.Fatalf("d=%d %v cosine=%v: span value %d = %v, want %v", d, dt, cosine, k, v, want[2*d+k])
					}
				}
			}
		}
	}
}

// Screened scoring of float32 and float16 storage (the rows produced a
// row at a time, read-only mapped-like endpoints already found finite) is
// bit-identical to exhaustive exact scoring, for cosine and dot; dot rows
// of magnitude 1e20 overflow the float32 cheap score, so whole rows take
// the exact path through the block's float64 rows.
func TestScreenedNarrowStorage(t *testing.T) {
	r := rand.New(rand.NewPCG(93, 94))
	for _, d := range []int{1, 17, 384} {
		nq, ng := 9, 150
		for _, c := range screenCases(r, d, nq, ng) {
			if c.name == "extreme magnitudes" {
				for i, row := range c.g { // within float32 range, products beyond it
					c.g[i] = gauss(r, len(row), []float64{1, 1e20}[i%2])
				}
				for i, row := range c.q {
					c.q[i] = gauss(r, len(row), []float64{1, 1e20}[i%2])
				}
			}
			base := denseProblem(t, c, r)
			for _, dt := range []matrix.DType{matrix.Float32, matrix.Float16} {
				if dt == matrix.Float16 && c.name == "extreme magnitudes" {
					continue // beyond float16
				}
				p := base
				flat := func(rows [][]float64) []float64 {
					var v []float64
					for _, x := range rows {
						v = append(v, x...)
					}
					return v
				}
				qm := storedAs(t, dt, nq, d, flat(c.q)).ReadOnly()
				gm := storedAs(t, dt, ng, d, flat(c.g)).ReadOnly()
				if _, _, bad := matrix.FirstNonFiniteParallel(gm, 2); bad || (dt == matrix.Float32 && !gm.KnownFinite()) {
					t.Fatalf("%s: gallery not known finite", c.name)
				}
				p.Queries, p.Gallery = qm, gm
				for _, sim := range []Similarity{Cosine, Dot} {
					if sim == Cosine && c.name == "extreme magnitudes" {
						continue
					}
					o := Options{Similarity: sim, Precision: Float64, QueryBatch: 1 + r.IntN(9), GalleryBatch: 7 + r.IntN(70), Threads: 1 + r.IntN(2)}
					diff, st := screenedVsExhaustive(t, p, o)
					if diff != "" {
						t.Fatalf("d=%d %s %v sim %d: %s", d, c.name, dt, sim, diff)
					}
					if ScreenDisabledByEnv() {
						continue // both runs exhaustive: equal results are all there is to check
					}
					if !st.Screened || st.Screen.Pairs != int64(nq*ng) {
						t.Fatalf("d=%d %s %v sim %d: screened %v, %d pairs", d, c.name, dt, sim, st.Screened, st.Screen.Pairs)
					}
					if c.name == "extreme magnitudes" && st.Screen.Exact < int64(ng) {
						t.Fatalf("d=%d %s: only %d pairs exact; the overflowing rows were not scored exactly", d, c.name, st.Screen.Exact)
					}
				}
			}
		}
	}
}

// A read-only endpoint already scanned finite skips the finiteness test
// of the fused pass; its norms and zero-norm rows are those of the
// separate passes, bit for bit.
func TestFusedScanKnownFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(95, 96))
	for _, d := range []int{1, 3, 17, 384, 769} {
		for _, dt := range []matrix.DType{matrix.Float32, matrix.Float64} {
			rows := 301
			v := extremeRows(r, rows, d, 1e30, false)
			clear(v[7*d : 8*d]) // a zero row
			m := storedAs(t, dt, rows, d, v).ReadOnly()
			if _, _, bad := matrix.FirstNonFinite(m); bad || !m.KnownFinite() {
				t.Fatal("not known finite")
			}
			ids := make([]string, rows)
			for i := range ids {
				ids[i] = "r"
			}
			want := &source{m: m, rows: rows, cols: d, cosine: true}
			werr := want.computeNorms(ids, "Gallery", 1)
			sc := scanEndpoint(m, true, 2)
			got, gerr := newSource(m, ids, "Gallery", Cosine, Float64, 2, sc)
			if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
				t.Fatalf("d=%d %v: zero-norm error %v, want %v", d, dt, gerr, werr)
			}
			for i := range rows {
				if !bitsEqual(got.norms[i], want.norms[i]) {
					t.Fatalf("d=%d %v row %d: norm %v, want %v", d, dt, i, got.norms[i], want.norms[i])
				}
			}
		}
	}
}

// maxAbsFinite finds every non-finite value wherever it sits in the
// groups of four and the tail, and the maximum wherever it sits.
func TestMaxAbsFinite(t *testing.T) {
	for _, n := range []int{1, 2, 5, 13, 16, 17, 40} {
		for at := range n {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(i%3) - 1
			}
			v[at] = -7
			if m, ok := maxAbsFinite(v); m != 7 || !ok {
				t.Fatalf("n=%d max at %d: (%v, %v)", n, at, m, ok)
			}
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
				v[at] = bad
				if _, ok := maxAbsFinite(v); ok {
					t.Fatalf("n=%d %v at %d: reported finite", n, bad, at)
				}
			}
		}
	}
}

// passBlocks covers the gallery in order without gaps, in blocks of at
// most gb rows; long galleries end in quarter blocks.
func TestPassBlocks(t *testing.T) {
	for _, c := range []struct {
		ng, gb int
		want   [][2]int
	}{
		{10, 4, [][2]int{{0, 4}, {4, 8}, {8, 10}}},
		{5000, 625, nil}, // short blocks: no split (checked below)
		{100000, 10000, append([][2]int{{0, 10000}, {10000, 20000}, {20000, 30000}, {30000, 40000}, {40000, 50000}, {50000, 60000}, {60000, 70000}, {70000, 80000}},
			[][2]int{{80000, 82500}, {82500, 85000}, {85000, 87500}, {87500, 90000}, {90000, 92500}, {92500, 95000}, {95000, 97500}, {97500, 100000}}...)},
		{40001, 10000, [][2]int{{0, 10000}, {10000, 20000}, {20000, 22222}, {22222, 24444}, {24444, 26667}, {26667, 28889}, {28889, 31111}, {31111, 33334}, {33334, 35556}, {35556, 37778}, {37778, 40001}}},
		{8192, 4096, [][2]int{{0, 4096}, {4096, 8192}}}, // fewer than four blocks
	} {
		got := passBlocks(c.ng, c.gb)
		if c.want != nil && !slicesEqual(got, c.want) {
			t.Fatalf("ng=%d gb=%d: %v, want %v", c.ng, c.gb, got, c.want)
		}
		next := 0
		for _, b := range got {
			if b[0] != next || b[1] <= b[0] || b[1]-b[0] > c.gb {
				t.Fatalf("ng=%d gb=%d: block %v after %d", c.ng, c.gb, b, next)
			}
			next = b[1]
		}
		if next != c.ng {
			t.Fatalf("ng=%d gb=%d: blocks end at %d", c.ng, c.gb, next)
		}
		if c.gb < 4096 && len(got) != (c.ng+c.gb-1)/c.gb {
			t.Fatalf("ng=%d gb=%d: %d blocks, want the plain split", c.ng, c.gb, len(got))
		}
	}
}

func slicesEqual(a, b [][2]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
