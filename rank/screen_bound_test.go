package rank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
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

// boundCheck is what checking a screen's bound pair by pair found.
type boundCheck struct {
	pairs      int     // pairs with a finite cheap score, checked
	violations int     // pairs with |c − s| > e
	skipped    int     // blocks or sub-blocks the screen refused (scored exactly by the run)
	worst      float64 // the largest |c − s| / e
	first      string  // the first violation
}

func (b *boundCheck) add(o boundCheck) {
	b.pairs += o.pairs
	b.violations += o.violations
	b.skipped += o.skipped
	b.worst = max(b.worst, o.worst)
	if b.first == "" {
		b.first = o.first
	}
}

// exactDot is the exact score of dot and cosine (SPEC §4.2) of two working
// rows, by the kernels' row definitions.
func exactDot[T working](q, g []T) float64 {
	switch q := any(q).(type) {
	case []float64:
		return kernel.DotRow64(q, any(g).([]float64))
	case []float32:
		return float64(kernel.DotRow32(q, any(g).([]float32)))
	}
	panic("unreachable")
}

// checkScreenBound prepares p as a run of the screen kind ("float32",
// "int8" or "int16", forced) would, and checks every pair of every gallery block of
// blockRows rows the screen accepts: the cheap score c of the screen's
// tile and the exact score s of the working rows satisfy |c − s| ≤ e, e
// the screen's bound for the query and the prepared (sub-)block; and every
// exact score of an accepted block is finite (the screens' range
// conditions). scale multiplies the bound (tuning.boundScale).
func checkScreenBound[T working](t *testing.T, p Problem, sim Similarity, prec Precision, kind string, blockRows, subRows int, scale float64) boundCheck {
	t.Helper()
	ctx := context.Background()
	o := Options{Similarity: sim, Precision: prec, QueryBatch: 64, GalleryBatch: 1 << 12, Threads: 1,
		tune: &tuning{screen: kind, boundScale: scale, subRows: subRows}}
	pr, err := prepare(ctx, p, o)
	if err != nil {
		t.Fatal(err)
	}
	s := newScorer[T](ctx, pr, allRows(pr.ng), 0, pr.nq)
	c, err := s.newChunk(0, pr.nq, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st screen[T]
	var f32 *screen32[T]
	if prec == Float64 {
		f32 = newScreen32(s)
	}
	switch kind {
	case "float32":
		st = f32
	case "int8", "int16":
		f := map[string]intFormat{"int8": int8Format, "int16": int16Format}[kind]
		si := newScreenInt[T](ctx, s, c, f32, f, nil)
		if si == nil {
			t.Fatalf("%v: the forced %s screen could not be prepared", prec, kind)
		}
		st = si
	}
	st.chunk(c)
	w := &worker[T]{tmp: make([]float64, pr.d)}
	var out boundCheck
	nq := pr.nq
	for g0 := 0; g0 < pr.ng; g0 += blockRows {
		b := s.pl.rows.block(g0, min(g0+blockRows, pr.ng))
		if !st.block(s, w, b) {
			out.skipped++
			continue
		}
		sub := st.subRows(b.n, nq)
		for j0 := 0; j0 < b.n; j0 += sub {
			j1 := min(j0+sub, b.n)
			if !st.sub(w, j0, j1) {
				out.skipped++
				continue
			}
			sn := j1 - j0
			cheap := make([]float32, nq*sn)
			st.tile(s, w, 0, nq, j0, j1, cheap)
			for q := range nq {
				e := st.bound(w, q)
				for j := range sn {
					x := float64(cheap[q*sn+j])
					ex := exactDot(s.qrow(q), w.cheap.rows.row(j0+j))
					if ex-ex != 0 {
						out.violations++
						if out.first == "" {
							out.first = fmt.Sprintf("pair (%d, %d) of an accepted block: exact score %v", q, b.global(j0+j), ex)
						}
						continue
					}
					if x-x != 0 {
						continue // a non-finite cheap score: the run scores the row exactly
					}
					out.pairs++
					diff := math.Abs(x - ex)
					if !(diff <= e) {
						out.violations++
						if out.first == "" {
							out.first = fmt.Sprintf("pair (%d, %d): |c − s| = %g > e = %g (c %v, s %v)", q, b.global(j0+j), diff, e, x, ex)
						}
					}
					if e > 0 {
						out.worst = max(out.worst, diff/e)
					}
				}
			}
		}
	}
	return out
}

// screenBoundCase is one cheap-score type under one protocol.
type screenBoundCase struct {
	name string
	kind string
	prec Precision
}

var screenBoundCases = []screenBoundCase{
	{"float32 screen of the float64 protocol", "float32", Float64},
	{"int16 screen of the float32 protocol", "int16", Float32},
	{"int16 screen of the float64 protocol", "int16", Float64},
	{"int8 screen of the float32 protocol", "int8", Float32},
	{"int8 screen of the float64 protocol", "int8", Float64},
}

func (c screenBoundCase) check(t *testing.T, p Problem, sim Similarity, blockRows, subRows int, scale float64) boundCheck {
	if c.prec == Float32 {
		return checkScreenBound[float32](t, p, sim, c.prec, c.kind, blockRows, subRows, scale)
	}
	return checkScreenBound[float64](t, p, sim, c.prec, c.kind, blockRows, subRows, scale)
}

// The bound itself, pair by pair, for every cheap-score type (the float32
// screen of the float64 protocol; the int16 and int8 screens of both
// protocols):
// on every adversarial family (and near-ties at the int16 bound), widths 1
// to 1536, dot and cosine, gallery blocks of one row (the tightest bound)
// and of the whole gallery (full kernel tiles; int16 sub-blocks of 32
// rows), the cheap score c and the exact score s of every pair satisfy
// |c − s| ≤ e. The decision tests catch a violation only where it flips a
// comparison; this checks every pair. The largest |c − s|/e is logged.
func TestScreenBoundsHoldPairByPair(t *testing.T) {
	t.Parallel()
	for _, bc := range screenBoundCases {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(53, uint64(len(bc.name))+uint64(bc.prec)))
			for _, d := range []int{1, 3, 17, 384, 769, 1536} {
				var all boundCheck
				for _, c := range screen16x64Cases(r, d, 13, 46) {
					p := denseProblem(t, c, r)
					for _, sim := range []Similarity{Dot, Cosine} {
						for _, blockRows := range []int{1, 46} {
							got := bc.check(t, p, sim, blockRows, kernel.Int16GalleryTile, 1)
							if got.violations > 0 {
								t.Fatalf("d=%d %s sim %d blocks of %d: %d violations; %s", d, c.name, sim, blockRows, got.violations, got.first)
							}
							all.add(got)
						}
					}
				}
				// Only the extreme family may be refused (values beyond the
				// screen's range); most pairs are checked.
				if all.pairs < 13*46*2*2*6 {
					t.Fatalf("d=%d: only %d pairs checked (%d blocks refused)", d, all.pairs, all.skipped)
				}
				t.Logf("d=%d: %d pairs, %d blocks refused, largest |c − s|/e = %.4f", d, all.pairs, all.skipped, all.worst)
			}
		})
	}
}

// The pair-by-pair check has teeth: with every bound shrunk 1000×
// (tuning.boundScale) it finds violations for every cheap-score type.
func TestScreenBoundCheckCatchesShrunkBound(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(54, 55))
	for _, bc := range screenBoundCases {
		var all boundCheck
		for _, d := range []int{3, 384} {
			for _, c := range screen16x64Cases(r, d, 13, 46) {
				p := denseProblem(t, c, r)
				for _, sim := range []Similarity{Dot, Cosine} {
					all.add(bc.check(t, p, sim, 46, 0, 1e-3))
				}
			}
		}
		if all.pairs == 0 || all.violations == 0 {
			t.Fatalf("%s: a bound shrunk 1000× gave %d violations in %d pairs", bc.name, all.violations, all.pairs)
		}
	}
}
