package rank

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
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

// exactNorm is ‖y‖₂ of finite values, in 400-bit arithmetic.
func exactNorm(y []float64) *big.Float {
	acc := new(big.Float).SetPrec(400)
	for _, v := range y {
		x := new(big.Float).SetPrec(400).SetFloat64(v)
		acc.Add(acc, x.Mul(x, x))
	}
	return acc.Sqrt(acc)
}

// checkRows compares working rows (rows × d) with want bit for bit.
func checkRows[T working](t *testing.T, what string, got []T, want []float64, d int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for k, v := range got {
		w := want[k]
		if _, f32 := any(v).(float32); f32 {
			w = float64(float32(w))
		}
		if !bitsEqual(float64(v), w) {
			t.Fatalf("%s: value (%d, %d) = %v, want %v", what, k/d, k%d, v, w)
		}
	}
}

// checkSource checks every producer of working rows of src against the
// definition want (rows × d float64 working values): row64, block64,
// block32 (their float32 roundings), produce and blockRows of contiguous
// and strided blocks, and the row cache of a screened block (held whole or
// produced row by row, rows asked for twice, spans, the pair layout of a
// verification).
func checkSource(t *testing.T, what string, src *source, want []float64) {
	t.Helper()
	rows, d := src.rows, src.cols
	tmp := make([]float64, d)
	for i := range rows {
		src.row64(i, tmp)
		checkRows(t, what+" row64", tmp, want[i*d:(i+1)*d], d)
	}
	checkRows(t, what+" block64", src.block64(0, rows, make([]float64, rows*d)), want, d)
	checkRows(t, what+" block32", src.block32(0, rows, make([]float32, rows*d), tmp), want, d)
	checkRows(t, what+" block64 [1,3)", src.block64(1, min(3, rows), make([]float64, rows*d)), want[d:min(3, rows)*d], d)
	for _, rs := range []rowSet{allRows(rows), {1, rows, 2}, {0, rows, 3}} {
		b := rs.block(0, rs.len())
		sel := make([]float64, 0, b.n*d)
		for j := range b.n {
			sel = append(sel, want[b.global(j)*d:(b.global(j)+1)*d]...)
		}
		bw := fmt.Sprintf("%s rows %v", what, rs)
		checkRows(t, bw+" blockRows64", blockRows(src, b, make([]float64, 0), tmp), sel, d)
		checkRows(t, bw+" blockRows32", blockRows(src, b, make([]float32, 0), tmp), sel, d)
		checkRowCache[float64](t, bw, src, b, sel)
		checkRowCache[float32](t, bw, src, b, sel)
	}
}

func checkRowCache[T working](t *testing.T, what string, src *source, b block, sel []float64) {
	t.Helper()
	d := src.cols
	var rc rowCache[T]
	for _, lazy := range []bool{true, false} {
		rc.reset(src, b, lazy)
		w := fmt.Sprintf("%s rowCache[%T] lazy %v", what, T(0), lazy)
		order := []int{b.n - 1, 0, b.n / 2, b.n - 1, 0}
		for _, j := range order {
			checkRows(t, w+" row", slices.Clone(rc.row(j)), sel[j*d:(j+1)*d], d)
		}
		base := rc.pairBase()
		for _, j := range order {
			off := rc.pairOffset(j)
			checkRows(t, w+" pair layout", base[off:off+d], sel[j*d:(j+1)*d], d)
		}
		if v := rc.stored(0); v != nil {
			checkRows(t, w+" stored", v, sel[:d], d)
		} else if !lazy || direct[T](src, b) != nil {
			t.Fatalf("%s: a block held whole has no stored rows", w)
		}
		checkRows(t, w+" span", rc.span(0, b.n), sel, d)
		checkRows(t, w+" span [1, n)", rc.span(1, b.n), sel[d:], d)
		checkRows(t, w+" row after span", rc.row(b.n/2), sel[b.n/2*d:(b.n/2+1)*d], d)
	}
}

// The working rows every producer makes (source.row64, block64, block32,
// produce, blockRows, rowCache) are the bits of SPEC §4.1: the stored
// value widened (RowFloat64), under cosine divided by the row norm with
// the scalar division, rounded to float32 for the float32 protocol; for
// every storage type (float16, float32, float64), cosine or not, widths
// 1…769 (whole vectors and tails of the vector divisions), extreme and
// non-finite rows, arbitrary norms (0.1, 1e-300, 7e300, NaN, +Inf) and
// the sources newSource makes (stored rows used directly). And
// convertNormBound rounds each row to float32, reports whether every
// value fits, and bounds its 2-norm from above (tightly).
func TestRowProductionMatchesDefinition(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(91, 92))
	for _, d := range []int{1, 3, 17, 384, 769} {
		for _, dt := range []matrix.DType{matrix.Float64, matrix.Float32, matrix.Float16} {
			huge := map[matrix.DType]float64{matrix.Float64: 1e300, matrix.Float32: 3e38, matrix.Float16: 60000}[dt]
			rows := 12
			m := storedAs(t, dt, rows, d, extremeRows(r, rows, d, huge, true))
			for _, cosine := range []bool{true, false} {
				for _, prec := range []Precision{Float64, Float32} {
					src := &source{m: m, stride: 1, rows: rows, cols: d, prec: prec, cosine: cosine}
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
					what := fmt.Sprintf("d=%d %v cosine=%v %s", d, dt, cosine, precName(prec))
					checkSource(t, what, src, want)
					for i := range rows {
						y := want[i*d : (i+1)*d]
						y32 := make([]float32, d)
						R, fits := convertNormBound(y, y32)
						wantFits := true
						for j, v := range y {
							wantFits = wantFits && !math.IsInf(float64(float32(v)), 0) && !math.IsNaN(v)
							if !bitsEqual(float64(y32[j]), float64(float32(v))) {
								t.Fatalf("%s row %d: float32 value %d = %v, want %v", what, i, j, y32[j], float32(v))
							}
						}
						if fits != wantFits {
							t.Fatalf("%s row %d: fits %v, want %v", what, i, fits, wantFits)
						}
						if !fits || !allFinite(y) {
							continue
						}
						n := exactNorm(y)
						hi := new(big.Float).Mul(n, big.NewFloat(1+1e-9))
						hi.Add(hi, big.NewFloat(4e-151))
						if R64 := new(big.Float).SetFloat64(R); R64.Cmp(n) < 0 || R64.Cmp(hi) > 0 {
							t.Fatalf("%s row %d: norm bound %v, exact norm %v", what, i, R, n)
						}
					}
				}
			}
			// The sources a run makes: finite rows, real norms, stored
			// rows used as they are where they are the working values.
			fin := storedAs(t, dt, rows, d, extremeRows(r, rows, d, huge, false))
			for _, sim := range []Similarity{Cosine, Dot} {
				for _, prec := range []Precision{Float64, Float32} {
					ids := make([]string, rows)
					src, err := newSource(fin, sliceNames(ids), "Gallery", sim, prec, 2, nil, allRows(fin.Rows()))
					if err != nil {
						if sim == Dot && prec == Float64 {
							t.Fatal(err)
						}
						continue // zero rows under cosine, values beyond float32
					}
					want := make([]float64, rows*d)
					for i := range rows {
						row := want[i*d : (i+1)*d]
						fin.RowFloat64(i, row)
						if sim == Cosine {
							for j := range row {
								row[j] /= src.norms[i]
							}
						}
					}
					checkSource(t, fmt.Sprintf("d=%d %v newSource sim %d %s", d, dt, sim, precName(prec)), src, want)
				}
			}
		}
	}
}

// Screened scoring of float32 and float16 storage (read-only, as mapped
// files, known finite after the load-time scan; rows produced from the
// narrow values) gives the oracle's results for every screen, cosine and
// dot; dot rows of magnitude 1e20 overflow the cheap scores of the
// float64 protocol, so whole rows take the exact path through the block's
// float64 rows (TestScreenedNarrowStorage).
func TestScreenedNarrowStorage(t *testing.T) {
	t.Parallel()
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
			flat := func(rows [][]float64) []float64 {
				var v []float64
				for _, x := range rows {
					v = append(v, x...)
				}
				return v
			}
			for _, dt := range []matrix.DType{matrix.Float32, matrix.Float16} {
				if dt == matrix.Float16 && c.name == "extreme magnitudes" {
					continue // beyond float16
				}
				p := base
				qm := storedAs(t, dt, nq, d, flat(c.q)).ReadOnly()
				gm := storedAs(t, dt, ng, d, flat(c.g)).ReadOnly()
				if _, _, bad := matrix.FirstNonFiniteParallel(gm, 2); bad || (dt == matrix.Float32 && !gm.KnownFinite()) {
					t.Fatalf("%s: gallery not known finite", c.name)
				}
				p.Queries, p.Gallery = qm, gm
				for _, bc := range screenBoundCases {
					for _, sim := range []Similarity{Cosine, Dot} {
						if sim == Cosine && c.name == "extreme magnitudes" {
							continue
						}
						o := Options{Similarity: sim, Precision: bc.prec, QueryBatch: 1 + r.IntN(9), GalleryBatch: 7 + r.IntN(70), Threads: 1 + r.IntN(2)}
						got, st, err := scoreStats(context.Background(), p, o, &tuning{screen: bc.kind})
						what := fmt.Sprintf("d=%d %s %v %s sim %d", d, c.name, dt, bc.name, sim)
						wantOracle(t, p, sim, bc.prec, got, err, what)
						if err != nil {
							continue
						}
						if !st.Screened || st.Screen.Kind != bc.kind || (st.Screen.ExactTiles == 0) != (st.Screen.Pairs == int64(nq*ng)) {
							t.Fatalf("%s: screened %v by %q, %d pairs, %d blocks exact", what, st.Screened, st.Screen.Kind, st.Screen.Pairs, st.Screen.ExactTiles)
						}
						if c.name == "extreme magnitudes" && bc.prec == Float64 && st.Screen.Exact < int64(ng) {
							t.Fatalf("%s: only %d pairs exact; the overflowing rows were not scored exactly", what, st.Screen.Exact)
						}
					}
				}
			}
		}
	}
}

// A read-only endpoint already scanned finite skips the finiteness test
// of the fused pass; its norms and zero-norm rows are those of the
// separate passes, bit for bit (TestFusedScanKnownFinite).
func TestFusedScanKnownFinite(t *testing.T) {
	t.Parallel()
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
			want := &source{m: m, stride: 1, rows: rows, cols: d, cosine: true}
			werr := want.computeNorms(sliceNames(ids), "Gallery", 1)
			sc := scanEndpoint(m, true, 2)
			got, gerr := newSource(m, sliceNames(ids), "Gallery", Cosine, Float64, 2, sc, allRows(m.Rows()))
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
	t.Parallel()
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

// passBlocks covers positions [0, n) in order without gaps, in blocks of
// at most gb rows; with at least four blocks of 4096 rows or more the last
// 2·gb rows go in quarter blocks; the split never depends on anything but
// n and gb. galleryBlock gives every pass at least 8 blocks of at least 64
// rows (or the batch).
func TestPassBlocks(t *testing.T) {
	t.Parallel()
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
		{16384, 4096, [][2]int{{0, 4096}, {4096, 8192}, {8192, 9216}, {9216, 10240}, {10240, 11264}, {11264, 12288}, {12288, 13312}, {13312, 14336}, {14336, 15360}, {15360, 16384}}},
		{1, 1, [][2]int{{0, 1}}},
		{0, 5, nil},
	} {
		got := passBlocks(c.ng, c.gb)
		if c.want != nil && !slices.Equal(got, c.want) {
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
	// galleryBlock: at least 8 blocks, at least 64 rows, at most the batch.
	for _, c := range []struct{ ng, batch, want int }{
		{5000, 10000, 625}, {100, 10000, 64}, {300, 50, 50}, {30, 10000, 30}, {100000, 10000, 10000}, {7, 1, 1},
	} {
		q, _ := matrix.NewDense64(1, 2, []float64{1, 2})
		g, _ := matrix.NewDense64(c.ng, 2, make([]float64, 2*c.ng))
		pr := &prepared{o: Options{GalleryBatch: c.batch, QueryBatch: 1}, ng: c.ng, nq: 1, d: 2,
			q: &source{m: q, stride: 1, rows: 1, cols: 2, direct64: q.Float64Data()}, g: &source{m: g, stride: 1, rows: c.ng, cols: 2, direct64: g.Float64Data()}, rel: &relevance{}}
		if got := newPlan(pr, allRows(c.ng)).gb; got != c.want {
			t.Fatalf("ng=%d batch %d: gallery block %d, want %d", c.ng, c.batch, got, c.want)
		}
	}
}
