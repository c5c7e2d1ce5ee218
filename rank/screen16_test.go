package rank

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vertebrae-eval/vertebrae/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// forceScreen16 screens every eligible float32 run with the int16 screen
// (whatever the CPU, the run size and the sample) until the test ends.
func forceScreen16(t *testing.T) {
	t.Helper()
	screen16Force = true
	t.Cleanup(func() { screen16Force = false })
}

// manyPositives gives every query of p 10 positives (beyond the
// per-positive scans of screenedSlots), the first one excluded again for
// some queries.
func manyPositives(p Problem, r *rand.Rand) Problem {
	ng := p.Gallery.Rows()
	for q := range p.Relevance {
		perm := r.Perm(ng)[:min(10, ng)]
		slicesSort(perm)
		p.Relevance[q] = p.Relevance[q][:0]
		for _, j := range perm {
			p.Relevance[q] = append(p.Relevance[q], retrieval.Positive{Index: j, Grade: 1 + float64(r.IntN(3))})
		}
		p.Exclusions[q] = nil
		if r.IntN(2) == 0 {
			p.Exclusions[q] = []int{perm[0]}
		}
	}
	return p
}

// The int16 screen of the float32 protocol is bit-identical to exhaustive
// float32 evaluation on every adversarial family (random, embedding-like,
// duplicated rows, scaled copies, near-ties around the bound, tight
// clusters, extreme magnitudes with float32 underflow and overflow), every
// width class, dot and cosine, few and many positives, several block
// shapes, sub-block sizes and thread counts; squared_l2 stays unscreened.
func TestScreened16EqualsExhaustive(t *testing.T) {
	forceScreen16(t)
	defer func(n int) { screen16SubRows = n }(screen16SubRows)
	r := rand.New(rand.NewPCG(61, 62))
	for _, d := range []int{1, 3, 17, 384, 769, 1536} {
		nq, ng := 26, 160
		if d >= 769 {
			nq, ng = 13, 90
		}
		for _, c := range screenCases(r, d, nq, ng) {
			base := denseProblem(t, c, r)
			for _, many := range []bool{false, true} {
				p := base
				if many {
					p = manyPositives(denseProblem(t, c, r), r)
				}
				for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
					if sim != Dot && c.name == "extreme magnitudes" {
						continue // as TestScreenedEqualsExhaustive
					}
					screen16SubRows = []int{32, 64, 512}[r.IntN(3)] // several sub-blocks per gallery block, or one
					o := Options{Similarity: sim, Precision: Float32, QueryBatch: 1 + r.IntN(30), GalleryBatch: 7 + r.IntN(90), Threads: 1 + r.IntN(2)}
					diff, st := screenedVsExhaustive(t, p, o)
					if diff != "" {
						t.Fatalf("d=%d %s many=%v sim %d: %s", d, c.name, many, sim, diff)
					}
					if c.name != "extreme magnitudes" && st.Screened != (sim != SquaredL2) { // extreme dot products may fail the run
						t.Fatalf("d=%d %s sim %d: screened %v", d, c.name, sim, st.Screened)
					}
					if sim != SquaredL2 && c.name != "extreme magnitudes" && (st.Screen.Pairs != int64(nq*ng) || st.Screen.ExactTiles != 0) {
						t.Fatalf("d=%d %s sim %d: %d pairs screened of %d, %d blocks exact", d, c.name, sim, st.Screen.Pairs, nq*ng, st.Screen.ExactTiles)
					}
				}
			}
		}
	}
}

// The bound holds pair by pair: |c − s| ≤ e for the cheap score c of the
// kernel and the exact float32 score s, on every family and width.
func TestScreen16BoundHoldsPairByPair(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	for _, d := range []int{1, 3, 17, 384, 769} {
		worst := 0.0
		for _, c := range screenCases(r, d, 13, 70) {
			for _, cosine := range []bool{false, true} {
				q32, g32 := rows32(c.q, cosine), rows32(c.g, cosine)
				nq, ng := len(c.q), len(c.g)
				st := &screen16State{qp: make([]int32, kernel.Int16QueryLen(nq, d)), qs: make([]float32, nq),
					qn: make([]float64, nq), qr: make([]float64, nq), qR: make([]float64, nq), gd: gamma(d, u32), g3: gamma(3, u32), tau: float64(d+2) * 0x1p-149}
				row := make([]int16, d)
				for q := range nq {
					sg, n, rr, R, ok := quantise16(q32[q*d:(q+1)*d], row)
					if !ok {
						t.Fatalf("d=%d %s: query %d not quantised", d, c.name, q)
					}
					kernel.PackInt16Query(row, q, st.qp)
					st.qs[q], st.qn[q], st.qr[q], st.qR[q] = float32(sg), n, rr, R
				}
				x := &ws16{}
				cheap := make([]float32, nq*ng)
				exact := make([]float32, nq*ng)
				kernel.Dot32(q32, nq, g32, ng, d, exact)
				for j := range ng { // one block per row: the tightest bound
					b := st.quantiseBlock(x, g32[j*d:(j+1)*d], 1, d, nil)
					out := make([]float32, nq)
					kernel.DotInt16(st.qp, nq, x.gp, 1, d, st.qs, x.gs, out)
					for q := range nq {
						cheap[q*ng+j] = out[q]
						s := float64(exact[q*ng+j])
						if st.qR[q]*b.R > screen16Fits || math.IsInf(float64(out[q]), 0) || math.IsInf(s, 0) {
							continue // never screened
						}
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

// rows32 is the float32 working matrix of the float32 protocol (SPEC §4.1).
func rows32(rows [][]float64, cosine bool) []float32 {
	d := len(rows[0])
	out := make([]float32, 0, len(rows)*d)
	for _, x := range rows {
		if !cosine {
			for _, v := range x {
				out = append(out, float32(v))
			}
			continue
		}
		m := 0.0
		for _, v := range x {
			m = max(m, math.Abs(v))
		}
		acc := 0.0
		for _, v := range x {
			acc = math.FMA(v/m, v/m, acc)
		}
		norm := m * math.Sqrt(acc)
		for _, v := range x {
			out = append(out, float32(v/norm))
		}
	}
	return out
}

// On ordinary data the int16 screen decides almost every pair.
func TestScreen16DecidesMostPairs(t *testing.T) {
	forceScreen16(t)
	r := rand.New(rand.NewPCG(65, 66))
	c := screenCases(r, 384, 24, 600)[0]
	_, st := screenedVsExhaustive(t, denseProblem(t, c, r), Options{Similarity: Cosine, Precision: Float32, QueryBatch: 24, GalleryBatch: 200})
	if !st.Screened || st.Screen.Exact*20 > st.Screen.Pairs {
		t.Fatalf("screened %v: %d of %d pairs scored exactly", st.Screened, st.Screen.Exact, st.Screen.Pairs)
	}
}

// The bit-identity tests catch an unsafe bound: shrunk, some near-tie
// family differs from exhaustive evaluation.
func TestScreen16ShrunkBoundIsCaught(t *testing.T) {
	forceScreen16(t)
	defer func() { screenBoundScale = 1 }()
	r := rand.New(rand.NewPCG(67, 68))
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
					if diff, _ := screenedVsExhaustive(t, p, Options{Similarity: sim, Precision: Float32, QueryBatch: 12, GalleryBatch: 64}); diff != "" {
						caught++
					}
				}
			}
		}
	}
	if caught == 0 {
		t.Fatal("no case distinguishes a shrunk bound: the int16 screening tests would not catch an unsafe bound")
	}
}

// VERTEBRAE_SCREEN=off selects the exhaustive path of both protocols even
// where the int16 screens are forced.
func TestScreen16EnvOff(t *testing.T) {
	forceScreen16(t)
	r := rand.New(rand.NewPCG(69, 70))
	p := denseProblem(t, screenCases(r, 17, 4, 30)[0], r)
	t.Setenv("VERTEBRAE_SCREEN", "off")
	for _, prec := range []Precision{Float32, Float64} {
		var st Stats
		if _, err := Score(context.Background(), p, Options{Similarity: Dot, Precision: prec, QueryBatch: 4, GalleryBatch: 8, Stats: &st}); err != nil {
			t.Fatal(err)
		}
		if st.Screened {
			t.Fatalf("precision %v: VERTEBRAE_SCREEN=off still screened", prec)
		}
	}
}

// The run-level choice: without forcing, a large run of ordinary rows is
// screened where the CPU runs the integer tile, and a run whose sample
// leaves most pairs undecided (width 1 under cosine: every score is ±1, a
// tie with the positive) is not; both stay bit-identical.
func TestScreen16ChoosesFromSample(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	mk := func(nq, ng, d int) Problem {
		q := make([]float32, nq*d)
		g := make([]float32, ng*d)
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		for i := range g {
			g[i] = float32(r.NormFloat64())
		}
		qm, _ := matrix.NewDense32(nq, d, q)
		gm, _ := matrix.NewDense32(ng, d, g)
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
		name   string
		d      int
		sim    Similarity
		screen bool
	}{{"gaussian", 8, Dot, true}, {"all ties", 1, Cosine, false}} {
		p := mk(32, screen16MinPairs/32, c.d)
		diff, st := screenedVsExhaustive(t, p, Options{Similarity: c.sim, Precision: Float32, QueryBatch: 32, GalleryBatch: 1 << 15})
		if diff != "" {
			t.Fatalf("%s: %s", c.name, diff)
		}
		if want := c.screen && kernel.Int16Fast(); st.Screened != want {
			t.Fatalf("%s: screened %v, want %v", c.name, st.Screened, want)
		}
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// A gallery block whose products the int16 screen does not bound (norm
// product above 2¹²⁰) is scored exactly (ScreenStats.ExactTiles) while the
// other blocks are screened, and every number equals exhaustive float32
// evaluation: rows of 1e37 against queries of 0.1 keep the scores finite.
func TestScreen16UnboundedBlocksScoredExactly(t *testing.T) {
	forceScreen16(t)
	r := rand.New(rand.NewPCG(71, 73))
	for _, d := range []int{1, 17, 384} {
		nq, ng := 23, 300
		var c screenCase
		c.name = "beyond the int16 bound"
		for range nq {
			c.q = append(c.q, gauss(r, d, 0.1))
		}
		for i := range ng {
			scale := 1.0
			if i >= 100 && i < 110 { // inside one gallery block of 50
				scale = 1e37
			}
			c.g = append(c.g, gauss(r, d, scale))
		}
		p := denseProblem(t, c, r)
		o := Options{Similarity: Dot, Precision: Float32, QueryBatch: 1 + r.IntN(30), GalleryBatch: 50, Threads: 1 + r.IntN(2)}
		diff, st := screenedVsExhaustive(t, p, o)
		if diff != "" {
			t.Fatalf("d=%d: %s", d, diff)
		}
		if !st.Screened || st.Screen.ExactTiles == 0 || st.Screen.Pairs == 0 {
			t.Fatalf("d=%d: screened %v, %d blocks exact, %d pairs screened", d, st.Screened, st.Screen.ExactTiles, st.Screen.Pairs)
		}
	}
}
