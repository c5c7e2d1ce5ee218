package rank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// screenCase is a dense problem built to stress one part of the screen.
type screenCase struct {
	name string
	q, g [][]float64
}

func gauss(r *rand.Rand, d int, scale float64) []float64 {
	v := make([]float64, d)
	for i := range v {
		v[i] = r.NormFloat64() * scale
	}
	return v
}

// screenCases builds, for width d: Gaussian rows; embedding-like rows (a
// shared direction plus small noise, cosines near 0.9); duplicated rows
// (exact ties); scaled copies (cosine 1 ± ulp); near-ties whose score
// differences span 1e-12…1e-3 around the bound; and, for dot, rows of
// magnitude 1e-30 and 1e30 (float32 underflow and overflow of the cheap
// score) mixed with ordinary ones.
func screenCases(r *rand.Rand, d, nq, ng int) []screenCase {
	var cs []screenCase
	add := func(name string, q, g [][]float64) { cs = append(cs, screenCase{name, q, g}) }
	rows := func(n int, f func(i int) []float64) [][]float64 {
		out := make([][]float64, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	add("gaussian", rows(nq, func(int) []float64 { return gauss(r, d, 1) }), rows(ng, func(int) []float64 { return gauss(r, d, 1) }))
	mean := gauss(r, d, 1)
	like := func(int) []float64 {
		v := gauss(r, d, 0.35)
		for i := range v {
			v[i] += mean[i]
		}
		return v
	}
	add("embedding-like", rows(nq, like), rows(ng, like))
	base := rows(5, func(int) []float64 { return gauss(r, d, 1) })
	add("duplicated", rows(nq, func(i int) []float64 { return append([]float64(nil), base[i%5]...) }),
		rows(ng, func(i int) []float64 { return append([]float64(nil), base[r.IntN(5)]...) }))
	q := rows(nq, func(int) []float64 { return gauss(r, d, 1) })
	add("scaled copies", q, rows(ng, func(i int) []float64 {
		v := append([]float64(nil), q[i%nq]...)
		k := r.IntN(4)
		for j := range v {
			switch k {
			case 0:
				v[j] *= 4
			case 1:
				v[j] = math.Nextafter(v[j], math.Inf(1))
			case 2:
				v[j] *= 1 + 0x1p-52*float64(r.IntN(3))
			}
		}
		return v
	}))
	// Near-ties: every gallery row is a perturbation of one of a few
	// anchors, at a log-uniform distance, so many score differences sit
	// at and around the float32 error and the bound.
	anchors := rows(3, func(int) []float64 { return gauss(r, d, 1) })
	add("near-ties", rows(nq, func(int) []float64 { return gauss(r, d, 1) }), rows(ng, func(int) []float64 {
		v := append([]float64(nil), anchors[r.IntN(3)]...)
		t := math.Pow(10, -12+9*r.Float64())
		for j := range v {
			v[j] += t * r.NormFloat64()
		}
		return v
	}))
	// A tight cluster: the nearest negative is one of many rows whose exact
	// scores differ by far less than the float32 error.
	anchor := gauss(r, d, 1)
	add("tight cluster", rows(nq, func(int) []float64 { return gauss(r, d, 1) }), rows(ng, func(int) []float64 {
		v := append([]float64(nil), anchor...)
		t := math.Pow(10, -12+4*r.Float64())
		for j := range v {
			v[j] += t * r.NormFloat64()
		}
		return v
	}))
	extreme := func(i int) []float64 {
		return gauss(r, d, []float64{1e-30, 1e30, 1, 1e-20}[i%4])
	}
	add("extreme magnitudes", rows(nq, extreme), rows(ng, extreme))
	return cs
}

func denseProblem(t testing.TB, c screenCase, r *rand.Rand) Problem {
	t.Helper()
	q, err := matrix.FromRows(c.q)
	if err != nil {
		t.Fatal(err)
	}
	g, err := matrix.FromRows(c.g)
	if err != nil {
		t.Fatal(err)
	}
	p := Problem{Queries: q, Gallery: g, Relevance: make([][]retrieval.Positive, len(c.q)), Exclusions: make([][]int, len(c.q))}
	ng := len(c.g)
	for i := range c.q {
		p.QueryIDs = append(p.QueryIDs, "q"+strconv.Itoa(i))
		perm := r.Perm(ng)
		pos := append([]int(nil), perm[:1+r.IntN(3)]...)
		slicesSort(pos)
		for _, j := range pos {
			p.Relevance[i] = append(p.Relevance[i], retrieval.Positive{Index: j, Grade: 1})
		}
		if r.IntN(2) == 0 {
			p.Exclusions[i] = []int{perm[len(pos)]}
		}
	}
	for j := range ng {
		p.GalleryIDs = append(p.GalleryIDs, "g"+strconv.Itoa(j))
	}
	return p
}

func slicesSort(v []int) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// screenedVsExhaustive scores p both ways and reports the first difference.
func screenedVsExhaustive(t *testing.T, p Problem, o Options) (diff string, st Stats) {
	t.Helper()
	o.Stats = &st
	got, err := Score(context.Background(), p, o)
	ex := o
	ex.Exhaustive, ex.Stats = true, nil
	want, werr := Score(context.Background(), p, ex)
	if fmt.Sprint(err) != fmt.Sprint(werr) {
		return fmt.Sprintf("error %v, exhaustive %v", err, werr), st
	}
	for q := range want {
		if !reflect.DeepEqual(got[q], want[q]) {
			return fmt.Sprintf("query %d:\n screened   %+v\n exhaustive %+v", q, got[q], want[q]), st
		}
	}
	return "", st
}

// Screened scoring is bit-identical to exhaustive exact scoring on every
// adversarial family, every width class, all similarities (squared_l2 and
// the float32 protocol run unscreened and must match too) and several block
// shapes; the screen must actually run and decide pairs.
func TestScreenedEqualsExhaustive(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, d := range []int{1, 3, 17, 384, 769, 1536} {
		nq, ng := 12, 160
		if d >= 769 {
			nq, ng = 6, 90
		}
		for _, c := range screenCases(r, d, nq, ng) {
			p := denseProblem(t, c, r)
			for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
				if sim != Dot && c.name == "extreme magnitudes" {
					continue // squared distances of 1e30 rows overflow; cosine normalises them away
				}
				for _, prec := range []Precision{Float64, Float32} {
					o := Options{Similarity: sim, Precision: prec, QueryBatch: 1 + r.IntN(9), GalleryBatch: 7 + r.IntN(70), Threads: 1 + r.IntN(2)}
					diff, st := screenedVsExhaustive(t, p, o)
					if diff != "" {
						t.Fatalf("d=%d %s sim %d prec %d: %s", d, c.name, sim, prec, diff)
					}
					wantScreen := prec == Float64 && sim != SquaredL2
					if st.Screened != wantScreen {
						t.Fatalf("d=%d %s sim %d prec %d: screened %v", d, c.name, sim, prec, st.Screened)
					}
					if wantScreen && st.Screen.Pairs != int64(nq*ng) {
						t.Fatalf("d=%d %s: %d pairs screened of %d", d, c.name, st.Screen.Pairs, nq*ng)
					}
				}
			}
		}
	}
}

// On ordinary data the screen decides almost every pair from the float32
// score, so the exact work is a small fraction.
func TestScreenDecidesMostPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	c := screenCases(r, 384, 16, 400)[0]
	_, st := screenedVsExhaustive(t, denseProblem(t, c, r), Options{Similarity: Cosine, QueryBatch: 8, GalleryBatch: 64})
	if !st.Screened || st.Screen.Exact*20 > st.Screen.Pairs {
		t.Fatalf("screened %v: %d of %d pairs scored exactly", st.Screened, st.Screen.Exact, st.Screen.Pairs)
	}
}

// The bit-identity tests can catch an unsafe bound: with the bound shrunk
// (a test build of the screen), the near-tie families produce a result that
// differs from exhaustive evaluation.
func TestShrunkBoundIsCaught(t *testing.T) {
	defer func() { screenBoundScale = 1 }()
	r := rand.New(rand.NewPCG(45, 46))
	caught := 0
	for _, scale := range []float64{1e-3, 0} {
		screenBoundScale = scale
		for _, d := range []int{384, 769} {
			for _, c := range screenCases(r, d, 12, 160) {
				if c.name != "near-ties" && c.name != "tight cluster" && c.name != "scaled copies" && c.name != "duplicated" {
					continue
				}
				p := denseProblem(t, c, r)
				for _, sim := range []Similarity{Cosine, Dot} {
					if diff, _ := screenedVsExhaustive(t, p, Options{Similarity: sim, QueryBatch: 4, GalleryBatch: 32}); diff != "" {
						caught++
					}
				}
			}
		}
	}
	if caught == 0 {
		t.Fatal("no case distinguishes a shrunk bound: the screening tests would not catch an unsafe bound")
	}
}

// VERTEBRAE_SCREEN=off selects the exhaustive path.
func TestScreenEnvOff(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	p := denseProblem(t, screenCases(r, 17, 4, 30)[0], r)
	t.Setenv("VERTEBRAE_SCREEN", "off")
	var st Stats
	if _, err := Score(context.Background(), p, Options{Similarity: Dot, QueryBatch: 4, GalleryBatch: 8, Stats: &st}); err != nil {
		t.Fatal(err)
	}
	if st.Screened {
		t.Fatal("VERTEBRAE_SCREEN=off still screened")
	}
}

// Nearest negatives among rows whose exact scores differ by far less than
// the float32 error: the exact maximum often has a lower cheap score than
// another row, before or after it in the row order, so every candidate
// within 2e of the cheap maximum must be verified.
func TestScreenedNearestNegativeInTightClusters(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	for _, d := range []int{16, 96} {
		anchor := gauss(r, d, 1)
		var g [][]float64
		for range 600 {
			v := append([]float64(nil), anchor...)
			s := math.Pow(10, -13+5*r.Float64())
			for j := range v {
				v[j] += s * r.NormFloat64()
			}
			g = append(g, v)
		}
		var q [][]float64
		for range 40 {
			q = append(q, gauss(r, d, 1))
		}
		p := denseProblem(t, screenCase{"tight", q, g}, r)
		for _, sim := range []Similarity{Cosine, Dot} {
			for _, gb := range []int{50, 600} {
				if diff, _ := screenedVsExhaustive(t, p, Options{Similarity: sim, QueryBatch: 8, GalleryBatch: gb}); diff != "" {
					t.Fatalf("d=%d sim %d gallery block %d: %s", d, sim, gb, diff)
				}
			}
		}
	}
}

// Queries with more positives than screenSlotScans take the one-scan,
// binary-search path of screenedRow; it is bit-identical too, on every
// family (positives among near-ties and duplicates sit inside each other's
// bands).
func TestScreenedManyPositives(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, d := range []int{3, 17, 384} {
		for _, c := range screenCases(r, d, 10, 200) {
			p := denseProblem(t, c, r)
			for i := range p.Relevance {
				n := screenSlotScans - 2 + r.IntN(12) // both sides of the cut-over
				perm := r.Perm(len(c.g))[:n]
				slicesSort(perm)
				p.Relevance[i] = p.Relevance[i][:0]
				for _, j := range perm {
					p.Relevance[i] = append(p.Relevance[i], retrieval.Positive{Index: j, Grade: 1})
				}
			}
			for _, sim := range []Similarity{Cosine, Dot} {
				if diff, _ := screenedVsExhaustive(t, p, Options{Similarity: sim, QueryBatch: 3, GalleryBatch: 64}); diff != "" {
					t.Fatalf("d=%d %s sim %d: %s", d, c.name, sim, diff)
				}
			}
		}
	}
}

// The bound itself, pair by pair: for every adversarial family and width
// (dot: the working rows are the inputs), the blocked float32 score c and
// the exact score s differ by at most the computed bound e. The decision
// tests above would also catch a violation, but only where it flips a
// comparison; this checks every pair, and that the bound is not absurdly
// loose (the largest observed |c − s|/e is reported).
func TestScreenBoundHoldsPairByPair(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, d := range []int{1, 3, 17, 33, 384, 769, 1536} {
		st := &screenState{}
		st.setBound(d)
		worst := 0.0
		for _, c := range screenCases(r, d, 6, 40) {
			for _, q := range c.q {
				q32 := make([]float32, d)
				rq, qfits := convertNormBound(q, q32)
				for _, g := range c.g {
					g32 := make([]float32, d)
					rg, gfits := convertNormBound(g, g32)
					if !qfits || !gfits {
						continue // beyond float32: scored exactly
					}
					cheap := make([]float32, 1)
					kernel.DotBlocked32(q32, 1, g32, 1, d, cheap)
					if x := cheap[0]; x-x != 0 {
						continue // overflow: the row is scored exactly
					}
					exact := kernel.DotRow64(q, g)
					e := st.bound(rq, rg)
					diff := math.Abs(float64(cheap[0]) - exact)
					if !(diff <= e) {
						t.Fatalf("d=%d %s: |c − s| = %g > e = %g (c %g, s %g)", d, c.name, diff, e, cheap[0], exact)
					}
					worst = max(worst, diff/e)
				}
			}
		}
		t.Logf("d=%d: largest |c − s|/e = %.3f", d, worst)
	}
}

// Gallery blocks split into several sub-blocks of cheap scores (as with
// thousands of queries per batch) give the same results: thresholds,
// nearest-negative candidates and counts carry across sub-blocks.
func TestScreenedSubBlocks(t *testing.T) {
	defer func(v int) { screenRowBytes = v }(screenRowBytes)
	screenRowBytes = 1 // sub-blocks of 64 gallery rows
	r := rand.New(rand.NewPCG(55, 56))
	for _, d := range []int{17, 384} {
		for _, c := range screenCases(r, d, 7, 300) {
			p := denseProblem(t, c, r)
			for _, sim := range []Similarity{Cosine, Dot} {
				diff, st := screenedVsExhaustive(t, p, Options{Similarity: sim, QueryBatch: 5, GalleryBatch: 300})
				if diff != "" {
					t.Fatalf("d=%d %s sim %d: %s", d, c.name, sim, diff)
				}
				if !st.Screened {
					t.Fatalf("d=%d %s: not screened", d, c.name)
				}
			}
		}
	}
}

// A gallery block holding values beyond float32's range cannot be screened:
// it is scored exactly (ScreenStats.ExactTiles), the other blocks are
// screened, and every number equals exhaustive evaluation. Gallery rows of
// 1e40 against queries of 1e-25 keep the float64 scores finite.
func TestBeyondFloat32BlocksScoredExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 13))
	for _, d := range []int{1, 17, 384} {
		nq, ng := 23, 300
		c := screenCase{"beyond float32",
			func() (q [][]float64) {
				for range nq {
					q = append(q, gauss(r, d, 1e-25))
				}
				return q
			}(),
			func() (g [][]float64) {
				for i := range ng {
					scale := 1.0
					if i >= 100 && i < 110 { // one block of the split below
						scale = 1e40
					}
					g = append(g, gauss(r, d, scale))
				}
				return g
			}()}
		p := denseProblem(t, c, r)
		o := Options{Similarity: Dot, Precision: Float64, QueryBatch: 1 + r.IntN(9), GalleryBatch: 50, Threads: 1 + r.IntN(2)}
		diff, st := screenedVsExhaustive(t, p, o)
		if diff != "" {
			t.Fatalf("d=%d: %s", d, diff)
		}
		if !st.Screened || st.Screen.ExactTiles == 0 || st.Screen.Pairs == 0 || st.Screen.Pairs >= int64(nq*ng) {
			t.Fatalf("d=%d: screened %v, %d blocks exact, %d of %d pairs screened", d, st.Screened, st.Screen.ExactTiles, st.Screen.Pairs, nq*ng)
		}
	}
}
