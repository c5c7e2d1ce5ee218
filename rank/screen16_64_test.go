package rank

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// screen16x64Cases are screenCases plus near-ties at the int16 screen's
// bound: gallery rows perturbing a few anchors by 1e-5…1e-2, so that many
// score differences sit around e ≈ 3e-4·‖q‖‖g‖.
func screen16x64Cases(r *rand.Rand, d, nq, ng int) []screenCase {
	cs := screenCases(r, d, nq, ng)
	anchors := [][]float64{gauss(r, d, 1), gauss(r, d, 1), gauss(r, d, 1)}
	c := screenCase{name: "near-ties at the int16 bound"}
	for range nq {
		c.q = append(c.q, gauss(r, d, 1))
	}
	for range ng {
		v := append([]float64(nil), anchors[r.IntN(3)]...)
		t := math.Pow(10, -5+3*r.Float64())
		for j := range v {
			v[j] += t * r.NormFloat64()
		}
		c.g = append(c.g, v)
	}
	return append(cs, c)
}

// The int16 screen of the float64 protocol is bit-identical to exhaustive
// float64 evaluation on every family (random, embedding-like, duplicated,
// scaled copies, near-ties around the float32 and the int16 bound, tight
// clusters, extreme magnitudes 1e-30 and 1e30 for dot), every width
// class, dot and cosine, few and many positives, random block shapes,
// sub-block sizes and thread counts; and it is the screen that ran.
func TestScreened16x64EqualsExhaustive(t *testing.T) {
	forceScreen16(t)
	defer func(n, v int) { screen16SubRows, verify16x64Pairs = n, v }(screen16SubRows, verify16x64Pairs)
	r := rand.New(rand.NewPCG(81, 82))
	for _, d := range []int{1, 3, 17, 384, 769, 1536} {
		nq, ng := 26, 160
		if d >= 769 {
			nq, ng = 13, 90
		}
		for _, c := range screen16x64Cases(r, d, nq, ng) {
			base := denseProblem(t, c, r)
			for _, many := range []bool{false, true} {
				p := base
				if many {
					p = manyPositives(denseProblem(t, c, r), r)
				}
				for _, sim := range []Similarity{Cosine, Dot} {
					if sim != Dot && c.name == "extreme magnitudes" {
						continue // as TestScreenedEqualsExhaustive
					}
					screen16SubRows = []int{32, 64, 512}[r.IntN(3)]
					verify16x64Pairs = []int{1, 5, 1 << 17}[r.IntN(3)] // verified after each query block, or at the block's end
					o := Options{Similarity: sim, Precision: Float64, QueryBatch: 1 + r.IntN(30), GalleryBatch: 7 + r.IntN(90), Threads: 1 + r.IntN(2)}
					diff, st := screenedVsExhaustive(t, p, o)
					if diff != "" {
						t.Fatalf("d=%d %s many=%v sim %d: %s", d, c.name, many, sim, diff)
					}
					if !st.Screened || st.Screen.Kind != "int16" || st.Screen.Pairs != int64(nq*ng) || st.Screen.ExactTiles != 0 {
						t.Fatalf("d=%d %s sim %d: screened %v (%q), %d pairs of %d, %d blocks exact",
							d, c.name, sim, st.Screened, st.Screen.Kind, st.Screen.Pairs, nq*ng, st.Screen.ExactTiles)
					}
				}
			}
		}
	}
}

// The bound holds pair by pair: |c − s| ≤ e for the cheap score c of the
// integer kernel and the exact float64 score s (DotRow64 of the float64
// rows), one gallery row per block (the tightest bound), dot and
// normalised rows.
func TestScreen16x64BoundHoldsPairByPair(t *testing.T) {
	r := rand.New(rand.NewPCG(83, 84))
	for _, d := range []int{1, 3, 17, 384, 769} {
		worst := 0.0
		for _, c := range screen16x64Cases(r, d, 13, 70) {
			for _, cosine := range []bool{false, true} {
				q64, g64 := rows64(c.q, cosine), rows64(c.g, cosine)
				nq, ng := len(c.q), len(c.g)
				q32, g32 := make([]float32, nq*d), make([]float32, ng*d)
				st := &screen16State{qp: make([]int32, kernel.Int16QueryLen(nq, d)), qs: make([]float32, nq),
					qn: make([]float64, nq), qr: make([]float64, nq), qR: make([]float64, nq), f64: true,
					gd: gamma(d, u64), g3: gamma(3, u32), tau: float64(d+2) * 0x1p-149, sdv: math.Sqrt(float64(d)) * 0x1p-150 * (1 + 0x1p-40)}
				row := make([]int16, d)
				qok := make([]bool, nq)
				for q := range nq {
					R, fits := convertNormBound(q64[q*d:(q+1)*d], q32[q*d:(q+1)*d])
					sg, n, rr, _, ok := quantise16(q32[q*d:(q+1)*d], row)
					if !fits || !ok {
						continue
					}
					qok[q] = true
					kernel.PackInt16Query(row, q, st.qp)
					st.qs[q], st.qn[q], st.qr[q], st.qR[q] = float32(sg), n, st.rho(rr, R), R
				}
				x := &ws16{}
				for j := range ng {
					R, fits := convertNormBound(g64[j*d:(j+1)*d], g32[j*d:(j+1)*d])
					if !fits {
						continue
					}
					b := st.quantiseBlock(x, g32[j*d:(j+1)*d], 1, d, []float64{R})
					out := make([]float32, nq)
					kernel.DotInt16(st.qp, nq, x.gp, 1, d, st.qs, x.gs, out)
					for q := range nq {
						if !qok[q] || math.IsInf(float64(out[q]), 0) {
							continue // never screened
						}
						s := kernel.DotRow64(q64[q*d:(q+1)*d], g64[j*d:(j+1)*d])
						e := st.bound(q, b)
						if err := math.Abs(float64(out[q]) - s); err > e {
							t.Fatalf("d=%d %s cosine=%v pair (%d,%d): |c − s| = %g > e = %g", d, c.name, cosine, q, j, err, e)
						} else if e > 0 {
							worst = max(worst, err/e)
						}
					}
				}
			}
		}
		t.Logf("d=%d: largest |c − s| / e %.6f", d, worst)
	}
}

// rows64 is a float64 working matrix: the rows, or under cosine the rows
// divided by their norm (any float64 rows will do for the bound).
func rows64(rows [][]float64, cosine bool) []float64 {
	out := make([]float64, 0, len(rows)*len(rows[0]))
	for _, x := range rows {
		n := 1.0
		if cosine {
			acc := 0.0
			for _, v := range x {
				acc += v * v
			}
			if n = math.Sqrt(acc); n == 0 || math.IsInf(n, 0) {
				n = 1
			}
		}
		for _, v := range x {
			out = append(out, v/n)
		}
	}
	return out
}

// The bit-identity tests catch an unsafe int16 bound under the float64
// protocol: shrunk, some near-tie family differs from exhaustive
// evaluation.
func TestScreen16x64ShrunkBoundIsCaught(t *testing.T) {
	forceScreen16(t)
	defer func() { screenBoundScale = 1 }()
	r := rand.New(rand.NewPCG(85, 86))
	caught := 0
	for _, scale := range []float64{1e-3, 0} {
		screenBoundScale = scale
		for _, d := range []int{384, 769} {
			for _, c := range screen16x64Cases(r, d, 12, 160) {
				if !strings.HasPrefix(c.name, "near-ties") && c.name != "tight cluster" && c.name != "scaled copies" && c.name != "duplicated" {
					continue
				}
				p := denseProblem(t, c, r)
				for _, sim := range []Similarity{Cosine, Dot} {
					diff, st := screenedVsExhaustive(t, p, Options{Similarity: sim, Precision: Float64, QueryBatch: 12, GalleryBatch: 64})
					if st.Screen.Kind != "int16" {
						t.Fatalf("%s: screen %q ran", c.name, st.Screen.Kind)
					}
					if diff != "" {
						caught++
					}
				}
			}
		}
	}
	if caught == 0 {
		t.Fatal("no case distinguishes a shrunk bound: the float64 int16 screening tests would not catch an unsafe bound")
	}
}

// Gallery blocks beyond the int16 screen's range (values beyond float32)
// are scored exactly (ScreenStats.ExactTiles) while the others are
// screened, and every number equals exhaustive float64 evaluation; rows
// within float32 whose cheap scores overflow (1e10 · 1e30) are scored
// exactly row by row; with values near the float64 limit the exact scores
// overflow, and the error names the same query and gallery IDs as
// exhaustive evaluation.
func TestScreen16x64BeyondRangeBlocksScoredExactly(t *testing.T) {
	forceScreen16(t)
	r := rand.New(rand.NewPCG(87, 88))
	for _, d := range []int{1, 17, 384} {
		for _, big := range []float64{1e30, 1e40, 1e300} {
			nq, ng := 23, 300
			c := screenCase{name: "beyond float32"}
			qscale := map[float64]float64{
				1e30:  1e10,  // within float32, but the cheap scores overflow: those rows are scored exactly
				1e40:  1e-25, // beyond float32: the block is scored exactly
				1e300: 1e30,  // 1e30·1e300 overflows float64: the run fails
			}[big]
			for range nq {
				c.q = append(c.q, gauss(r, d, qscale))
			}
			for i := range ng {
				scale := 1.0
				if i >= 100 && i < 110 { // inside one gallery block of 50
					scale = big
				}
				c.g = append(c.g, gauss(r, d, scale))
			}
			p := denseProblem(t, c, r)
			o := Options{Similarity: Dot, Precision: Float64, QueryBatch: 1 + r.IntN(30), GalleryBatch: 50, Threads: 1 + r.IntN(2)}
			diff, st := screenedVsExhaustive(t, p, o)
			if diff != "" {
				t.Fatalf("d=%d big=%g: %s", d, big, diff)
			}
			if big > 1e100 {
				if _, err := Score(t.Context(), p, o); err == nil || !strings.Contains(err.Error(), "g10") {
					t.Fatalf("d=%d: error %v, want one naming a row of the overflowing block", d, err)
				}
				continue
			}
			if big == 1e30 {
				if st.Screen.Kind != "int16" || st.Screen.ExactTiles != 0 || st.Screen.Pairs != int64(nq*ng) || st.Screen.Exact < int64(10*nq) {
					t.Fatalf("d=%d: screen %q, %d blocks exact, %d of %d pairs screened, %d exact", d, st.Screen.Kind, st.Screen.ExactTiles, st.Screen.Pairs, nq*ng, st.Screen.Exact)
				}
				continue
			}
			if !st.Screened || st.Screen.Kind != "int16" || st.Screen.ExactTiles == 0 || st.Screen.Pairs == 0 || st.Screen.Pairs >= int64(nq*ng) {
				t.Fatalf("d=%d: screened %v (%q), %d blocks exact, %d of %d pairs screened", d, st.Screened, st.Screen.Kind, st.Screen.ExactTiles, st.Screen.Pairs, nq*ng)
			}
		}
	}
}

// The run-level choice under the float64 protocol: without forcing, a
// large run of ordinary rows takes the int16 screen where the CPU runs the
// integer tile (else the float32 screen), and a run whose sample leaves
// most pairs undecided (width 1 under cosine: every score is ±1) keeps the
// float32 screen; all stay bit-identical.
func TestScreen16x64ChoosesFromSample(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	mk := func(nq, ng, d int) Problem {
		q := make([]float64, nq*d)
		g := make([]float64, ng*d)
		for i := range q {
			q[i] = r.NormFloat64()
		}
		for i := range g {
			g[i] = r.NormFloat64()
		}
		qm, _ := matrix.NewDense64(nq, d, q)
		gm, _ := matrix.NewDense64(ng, d, g)
		p := Problem{Queries: qm, Gallery: gm, Relevance: make([][]retrieval.Positive, nq)}
		for i := range nq {
			p.QueryIDs = append(p.QueryIDs, "q"+itoa(i))
			p.Relevance[i] = []retrieval.Positive{{Index: r.IntN(ng), Grade: 1}}
		}
		for j := range ng {
			p.GalleryIDs = append(p.GalleryIDs, "g"+itoa(j))
		}
		return p
	}
	for _, c := range []struct {
		name  string
		d     int
		sim   Similarity
		int16 bool
	}{{"gaussian", 8, Dot, true}, {"all ties", 1, Cosine, false}} {
		p := mk(32, screen16MinPairs/32, c.d)
		diff, st := screenedVsExhaustive(t, p, Options{Similarity: c.sim, Precision: Float64, QueryBatch: 32, GalleryBatch: 1 << 15})
		if diff != "" {
			t.Fatalf("%s: %s", c.name, diff)
		}
		want := "float32"
		if c.int16 && kernel.Int16Fast() {
			want = "int16"
		}
		if !st.Screened || st.Screen.Kind != want {
			t.Fatalf("%s: screened %v by %q, want %q", c.name, st.Screened, st.Screen.Kind, want)
		}
	}
}

// A cancelled run under the float64 int16 screen returns the context's
// error (the sub-block loop checks it).
func TestScreen16x64Cancel(t *testing.T) {
	forceScreen16(t)
	r := rand.New(rand.NewPCG(93, 94))
	c := screenCases(r, 16, 24, 20000)[0]
	p := denseProblem(t, c, r)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ctx = WithProgress(ctx, func(done, total int64) { cancel() })
	var st Stats
	_, err := Score(ctx, p, Options{Similarity: Dot, Precision: Float64, QueryBatch: 24, GalleryBatch: 200, Threads: 2, Stats: &st})
	if err != context.Canceled {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// Both int16 screens run only when the memory budget in the context has
// room for what they hold; otherwise the float64 protocol takes the
// float32 screen (which needs none of it) and the float32 protocol its
// exhaustive pass, with the same results.
func TestScreen16MemoryBudget(t *testing.T) {
	forceScreen16(t)
	r := rand.New(rand.NewPCG(95, 96))
	p := denseProblem(t, screenCases(r, 384, 20, 200)[1], r)
	for _, c := range []struct {
		prec  Precision
		limit int64
		kind  string // "": not screened
	}{{Float64, 1 << 10, "float32"}, {Float64, 1 << 40, "int16"}, {Float32, 1 << 10, ""}, {Float32, 1 << 40, "int16"}} {
		var st Stats
		o := Options{Similarity: Cosine, Precision: c.prec, QueryBatch: 8, GalleryBatch: 64, Stats: &st}
		got, err := Score(memory.WithLimit(t.Context(), c.limit), p, o)
		if err != nil {
			t.Fatal(err)
		}
		o.Exhaustive, o.Stats = true, nil
		want, err := Score(t.Context(), p, o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("precision %d, limit %d: results differ from exhaustive", c.prec, c.limit)
		}
		if st.Screened != (c.kind != "") || st.Screen.Kind != c.kind {
			t.Fatalf("precision %d, limit %d: %q screen ran (screened %v), want %q", c.prec, c.limit, st.Screen.Kind, st.Screened, c.kind)
		}
	}
}
