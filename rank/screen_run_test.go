package rank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// scoreStats scores p under o with the test-only settings tune (nil: none,
// the environment decides) and returns the results and the run's stats.
func scoreStats(ctx context.Context, p Problem, o Options, tune *tuning) ([]QueryResult, Stats, error) {
	var st Stats
	o.Stats, o.tune = &st, tune
	res, err := Score(ctx, p, o)
	return res, st, err
}

// wantOracle compares results (or an error) with the oracle's, bit for bit.
func wantOracle(t *testing.T, p Problem, sim Similarity, prec Precision, got []QueryResult, err error, what string) {
	t.Helper()
	want, werr := oracle(p, sim, prec)
	if werr != nil || err != nil {
		if werr == nil || err == nil || err.Error() != werr.Error() {
			t.Fatalf("%s: error %v, want %v", what, err, werr)
		}
		return
	}
	if d := diffPlan(want, got, nil, planPoint{}); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
}

func precName(p Precision) string {
	if p == Float32 {
		return "float32"
	}
	return "float64"
}

// Every forced screen runs where it applies, gives every pair of the
// adversarial families a cheap score (Stats.Screen.Pairs = n_q·n_g, unless
// a block is beyond its range) and yields the oracle's results bit for bit
// (the stats half of the old TestScreenedEqualsExhaustive; the plan matrix
// checks results only).
func TestForcedScreensRunOnEveryFamily(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(41, 42))
	for _, d := range []int{3, 384} {
		nq, ng := 12, 160
		for _, c := range screen16x64Cases(r, d, nq, ng) {
			p := denseProblem(t, c, r)
			for _, bc := range screenBoundCases {
				for _, sim := range []Similarity{Cosine, Dot} {
					o := Options{Similarity: sim, Precision: bc.prec, QueryBatch: 1 + r.IntN(20), GalleryBatch: 7 + r.IntN(70), Threads: 1 + r.IntN(2)}
					got, st, err := scoreStats(context.Background(), p, o, &tuning{screen: bc.kind})
					what := fmt.Sprintf("d=%d %s %s sim %d", d, c.name, bc.name, sim)
					wantOracle(t, p, sim, bc.prec, got, err, what)
					if err != nil {
						continue
					}
					if !st.Screened || st.Screen.Kind != bc.kind {
						t.Fatalf("%s: screened %v by %q", what, st.Screened, st.Screen.Kind)
					}
					if st.Screen.Pairs > int64(nq*ng) || (st.Screen.ExactTiles == 0) != (st.Screen.Pairs == int64(nq*ng)) {
						t.Fatalf("%s: %d pairs screened of %d, %d blocks exact", what, st.Screen.Pairs, nq*ng, st.Screen.ExactTiles)
					}
					if c.name != "extreme magnitudes" && (st.Screen.Pairs != int64(nq*ng) || st.Screen.ExactTiles != 0) {
						t.Fatalf("%s: %d pairs screened of %d, %d blocks exact", what, st.Screen.Pairs, nq*ng, st.Screen.ExactTiles)
					}
				}
			}
		}
	}
}

// On ordinary data the float32 screen (the plan's own choice for a small
// float64 run) decides almost every pair from the cheap score: at most 5 %
// are scored exactly.
func TestScreenDecidesMostPairs(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(43, 44))
	c := screenCases(r, 384, 16, 400)[0]
	p := denseProblem(t, c, r)
	got, st, err := scoreStats(context.Background(), p, Options{Similarity: Cosine, QueryBatch: 8, GalleryBatch: 64}, &tuning{screen: "auto"})
	wantOracle(t, p, Cosine, Float64, got, err, "gaussian")
	if !st.Screened || st.Screen.Kind != "float32" || st.Screen.Pairs != 16*400 || st.Screen.Exact*20 > st.Screen.Pairs {
		t.Fatalf("screened %v by %q: %d of %d pairs scored exactly", st.Screened, st.Screen.Kind, st.Screen.Exact, st.Screen.Pairs)
	}
}

// On ordinary data the int16 screens of both protocols decide almost every
// pair: at most 5 % are scored exactly.
func TestScreen16DecidesMostPairs(t *testing.T) {
	t.Parallel()
	for _, prec := range []Precision{Float32, Float64} {
		r := rand.New(rand.NewPCG(65, 66))
		c := screenCases(r, 384, 24, 600)[0]
		p := denseProblem(t, c, r)
		got, st, err := scoreStats(context.Background(), p, Options{Similarity: Cosine, Precision: prec, QueryBatch: 24, GalleryBatch: 200}, &tuning{screen: "int16"})
		wantOracle(t, p, Cosine, prec, got, err, precName(prec))
		if !st.Screened || st.Screen.Kind != "int16" || st.Screen.Pairs != 24*600 || st.Screen.Exact*20 > st.Screen.Pairs {
			t.Fatalf("%s: screened %v by %q: %d of %d pairs scored exactly", precName(prec), st.Screened, st.Screen.Kind, st.Screen.Exact, st.Screen.Pairs)
		}
	}
}

// VERTEBRAE_SCREEN (read when Options carry no test tuning): "off" selects
// exhaustive scoring for both protocols, plain runs and gallery shards;
// "float32" forces the float32 screen where it applies (the float64
// protocol); "int8" and "int16" force that integer screen of both
// protocols; "" or an
// unknown value leaves the choice to the plan. Every run gives the
// exhaustive results bit for bit; Options.Exhaustive wins over the
// environment, and a plan told to choose (tuning "auto") ignores it.
// (TestScreenEnvOff, TestScreen16EnvOff; it sets the environment, so it
// cannot run in parallel.)
func TestScreenEnv(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	p := denseProblem(t, screenCases(r, 17, 20, 90)[1], r)
	ctx := context.Background()
	for _, prec := range []Precision{Float64, Float32} {
		o := Options{Similarity: Dot, Precision: prec, QueryBatch: 4, GalleryBatch: 8, Threads: 2}
		want, _, err := scoreStats(ctx, p, o, &tuning{screen: "off"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			env  string
			kind map[Precision]string // "": exhaustive
		}{
			{"off", map[Precision]string{Float64: "", Float32: ""}},
			{"float32", map[Precision]string{Float64: "float32", Float32: ""}},
			{"int16", map[Precision]string{Float64: "int16", Float32: "int16"}},
			{"int8", map[Precision]string{Float64: "int8", Float32: "int8"}},
			{"", map[Precision]string{Float64: "float32", Float32: ""}},      // a small run: the plan's choice
			{"bogus", map[Precision]string{Float64: "float32", Float32: ""}}, // unknown values are ignored
		} {
			t.Setenv("VERTEBRAE_SCREEN", c.env)
			if e := ScreenEnv(); e != strings.ReplaceAll(c.env, "bogus", "") {
				t.Fatalf("ScreenEnv() = %q with VERTEBRAE_SCREEN=%q", e, c.env)
			}
			what := fmt.Sprintf("VERTEBRAE_SCREEN=%q %s", c.env, precName(prec))
			got, st, err := scoreStats(ctx, p, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := sameResults(got, want); d != "" {
				t.Fatalf("%s: %s", what, d)
			}
			if k := c.kind[prec]; st.Screened != (k != "") || st.Screen.Kind != k {
				t.Fatalf("%s: screened %v by %q, want %q", what, st.Screened, st.Screen.Kind, k)
			}
			// A gallery shard reads the same plan.
			var sst Stats
			so := o
			so.Stats = &sst
			pos, err := ScorePositives(ctx, p, so)
			if err != nil {
				t.Fatal(err)
			}
			part, err := ScoreShard(ctx, p, so, pos, ShardTask{QueryLo: 0, QueryHi: 20, Gallery: Shard{Index: 1, Total: 2, Layout: Modulo}})
			if err != nil || part == nil {
				t.Fatal(err)
			}
			if k := c.kind[prec]; sst.Screened != (k != "") || sst.Screen.Kind != k {
				t.Fatalf("%s shard: screened %v by %q, want %q", what, sst.Screened, sst.Screen.Kind, k)
			}
			// Options.Exhaustive wins over a forcing environment.
			ex := o
			ex.Exhaustive = true
			if _, st, err := scoreStats(ctx, p, ex, nil); err != nil || st.Screened {
				t.Fatalf("%s: Exhaustive run screened %v (%v)", what, st.Screened, err)
			}
		}
		// The plan's own choice ignores the environment.
		t.Setenv("VERTEBRAE_SCREEN", "off")
		got, st, err := scoreStats(ctx, p, o, &tuning{screen: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		if d := sameResults(got, want); d != "" {
			t.Fatal(d)
		}
		if wantKind := map[Precision]string{Float64: "float32", Float32: ""}[prec]; st.Screen.Kind != wantKind {
			t.Fatalf("%s: tuning auto under VERTEBRAE_SCREEN=off ran %q, want %q", precName(prec), st.Screen.Kind, wantKind)
		}
	}
}

// sampleProblem is n_q queries with one positive each against n_g
// Gaussian gallery rows of width d, stored as float32 or float64.
func sampleProblem(r *rand.Rand, nq, ng, d int, prec Precision) Problem {
	var qm, gm matrix.Matrix
	if prec == Float32 {
		q, g := make([]float32, nq*d), make([]float32, ng*d)
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		for i := range g {
			g[i] = float32(r.NormFloat64())
		}
		qm, _ = matrix.NewDense32(nq, d, q)
		gm, _ = matrix.NewDense32(ng, d, g)
	} else {
		q, g := make([]float64, nq*d), make([]float64, ng*d)
		for i := range q {
			q[i] = r.NormFloat64()
		}
		for i := range g {
			g[i] = r.NormFloat64()
		}
		qm, _ = matrix.NewDense64(nq, d, q)
		gm, _ = matrix.NewDense64(ng, d, g)
	}
	p := Problem{Queries: qm, Gallery: gm, Relevance: make([][]retrieval.Positive, nq), QueryIDs: make([]string, nq), GalleryIDs: make([]string, ng)}
	for i := range nq {
		p.QueryIDs[i] = fmt.Sprintf("q%d", i)
		p.Relevance[i] = []retrieval.Positive{{Index: r.IntN(ng), Grade: 1}}
	}
	for j := range ng {
		p.GalleryIDs[j] = fmt.Sprintf("g%d", j)
	}
	return p
}

// The run-level choice: left to the plan, a run of screenIntMinPairs pairs
// takes the int8 screen where its sample leaves few pairs undecided
// (positives near their queries, standing apart from the bulk of the
// scores), the int16 screen where only the int16 bound is tight enough
// (positives drawn at random, in the bulk, where the int8 band holds
// a large share of the pairs), and no integer screen where both leave most
// pairs undecided (width 1 under cosine: every score is ±1, a tie with the
// positive): the float64 protocol keeps the float32 screen, the float32
// protocol its exhaustive pass. A smaller run never takes an integer
// screen, and a CPU without an integer tile never does. Every run equals
// the exhaustive one bit for bit.
func TestIntScreenChoosesFromSample(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(71, 72))
	for _, prec := range []Precision{Float32, Float64} {
		other := map[Precision]string{Float32: "", Float64: "float32"}[prec]
		fast8, fast16 := int8Format.fast(prec), int16Format.fast(prec)
		t.Logf("%s: int8 tile pays %v, int16 tile pays %v", precName(prec), fast8, fast16)
		for _, c := range []struct {
			name string
			nq   int
			ng   int
			d    int
			sim  Similarity
			near bool     // positives near their queries
			want []string // the screen by preference, where the CPU runs it
		}{
			{"near positives", 32, screenIntMinPairs / 32, 64, Cosine, true, []string{"int8", "int16"}},
			{"random positives", 32, screenIntMinPairs / 32, 8, Dot, false, []string{"int16"}},
			{"all ties", 32, screenIntMinPairs / 32, 1, Cosine, false, nil},
			{"near positives, below screenIntMinPairs", 32, screenIntMinPairs/32 - 1, 64, Cosine, true, nil},
		} {
			p := sampleProblem(r, c.nq, c.ng, c.d, prec)
			if c.near {
				nearPositives(r, p)
			}
			o := Options{Similarity: c.sim, Precision: prec, QueryBatch: 32, GalleryBatch: 1 << 15}
			got, st, err := scoreStats(context.Background(), p, o, &tuning{screen: "auto"})
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := scoreStats(context.Background(), p, o, &tuning{screen: "off"})
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s %s", precName(prec), c.name)
			if d := sameResults(got, want); d != "" {
				t.Fatalf("%s: %s", what, d)
			}
			kind := other
			for _, k := range c.want {
				if k == "int8" && fast8 || k == "int16" && fast16 {
					kind = k
					break
				}
			}
			if st.Screened != (kind != "") || st.Screen.Kind != kind {
				t.Fatalf("%s: screened %v by %q, want %q", what, st.Screened, st.Screen.Kind, kind)
			}
		}
	}
}

// nearPositives moves each query's positive next to the query: the
// positive's row becomes the query's plus 1 % noise, as relevant items sit
// near their queries in real embeddings.
func nearPositives(r *rand.Rand, p Problem) {
	switch q := p.Queries.(type) {
	case *matrix.Dense:
		d := q.Cols()
		g := p.Gallery.(*matrix.Dense)
		for i, pos := range p.Relevance {
			j := pos[0].Index
			if q.DType() == matrix.Float32 {
				qd, gd := q.Float32Data(), g.Float32Data()
				for k := range d {
					gd[j*d+k] = qd[i*d+k] + float32(0.01*r.NormFloat64())
				}
			} else {
				qd, gd := q.Float64Data(), g.Float64Data()
				for k := range d {
					gd[j*d+k] = qd[i*d+k] + 0.01*r.NormFloat64()
				}
			}
		}
	}
}

// The integer screens of both protocols run only when the memory budget in
// the context has room for what they hold, even when forced; otherwise the
// float64 protocol takes the float32 screen (which needs none of it) and
// the float32 protocol its exhaustive pass, with the same results.
func TestScreenIntMemoryBudget(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(95, 96))
	p := denseProblem(t, screenCases(r, 384, 20, 200)[1], r)
	for _, c := range []struct {
		prec  Precision
		limit int64
		kind  string // "": not screened
		force string
	}{{Float64, 1 << 10, "float32", "int16"}, {Float64, 1 << 40, "int16", "int16"}, {Float32, 1 << 10, "", "int16"}, {Float32, 1 << 40, "int16", "int16"},
		{Float64, 1 << 10, "float32", "int8"}, {Float64, 1 << 40, "int8", "int8"}, {Float32, 1 << 10, "", "int8"}, {Float32, 1 << 40, "int8", "int8"}} {
		o := Options{Similarity: Cosine, Precision: c.prec, QueryBatch: 8, GalleryBatch: 64}
		got, st, err := scoreStats(memory.WithLimit(context.Background(), c.limit), p, o, &tuning{screen: c.force})
		what := fmt.Sprintf("%s forced, %s limit %d", c.force, precName(c.prec), c.limit)
		wantOracle(t, p, Cosine, c.prec, got, err, what)
		if st.Screened != (c.kind != "") || st.Screen.Kind != c.kind {
			t.Fatalf("%s: %q screen ran (screened %v), want %q", what, st.Screen.Kind, st.Screened, c.kind)
		}
	}
}

// Gallery blocks holding values a screen does not bound are scored
// exhaustively while the other blocks are screened, and every number is
// the oracle's (TestBeyondFloat32BlocksScoredExactly,
// TestScreen16UnboundedBlocksScoredExactly,
// TestScreen16x64BeyondRangeBlocksScoredExactly):
//   - rows of 1e40 (beyond float32) against queries of 1e-25: the float32
//     screen and the float64 protocol's int16 screen score their block
//     exactly (Stats.Screen.ExactTiles);
//   - rows of 1e37 against queries of 0.1 under the float32 protocol: the
//     norm product exceeds the int16 screen's range (2¹²⁰);
//   - rows of 1e30 against queries of 1e10 under the float64 protocol:
//     within float32 but their cheap scores overflow, so those rows are
//     scored exactly, row by row (Stats.Screen.Exact), no block exactly;
//   - rows of 1e300 against queries of 1e30: the exact scores overflow and
//     the run fails naming the oracle's pair.
func TestScreenedBeyondRangeBlocksScoredExactly(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 13))
	for _, d := range []int{1, 17, 384} {
		for _, c := range []struct {
			kind      string
			prec      Precision
			big, qval float64
			want      string // "tiles", "rows" or "error"
		}{
			{"float32", Float64, 1e40, 1e-25, "tiles"},
			{"int16", Float64, 1e40, 1e-25, "tiles"},
			{"int16", Float32, 1e37, 0.1, "tiles"},
			{"int8", Float64, 1e40, 1e-25, "tiles"},
			{"int8", Float32, 1e37, 0.1, "tiles"},
			{"float32", Float64, 1e30, 1e10, "rows"},
			{"int16", Float64, 1e30, 1e10, "rows"},
			{"int8", Float64, 1e30, 1e10, "rows"},
			{"float32", Float64, 1e300, 1e30, "error"},
			{"int16", Float64, 1e300, 1e30, "error"},
			{"int8", Float64, 1e300, 1e30, "error"},
		} {
			nq, ng := 23, 300
			sc := screenCase{name: "beyond range"}
			for range nq {
				sc.q = append(sc.q, gauss(r, d, c.qval))
			}
			for i := range ng {
				scale := 1.0
				if i >= 100 && i < 110 { // inside one gallery block of 50
					scale = c.big
				}
				sc.g = append(sc.g, gauss(r, d, scale))
			}
			p := denseProblem(t, sc, r)
			o := Options{Similarity: Dot, Precision: c.prec, QueryBatch: 1 + r.IntN(30), GalleryBatch: 50, Threads: 1 + r.IntN(2)}
			got, st, err := scoreStats(context.Background(), p, o, &tuning{screen: c.kind})
			what := fmt.Sprintf("d=%d %s screen %s rows %g", d, c.kind, precName(c.prec), c.big)
			wantOracle(t, p, Dot, c.prec, got, err, what)
			switch c.want {
			case "error":
				if err == nil || !strings.Contains(err.Error(), `gallery "g10`) {
					t.Fatalf("%s: error %v, want one naming a row of the overflowing block", what, err)
				}
			case "tiles":
				if !st.Screened || st.Screen.Kind != c.kind || st.Screen.ExactTiles == 0 || st.Screen.Pairs == 0 || st.Screen.Pairs >= int64(nq*ng) {
					t.Fatalf("%s: screened %v by %q, %d blocks exact, %d of %d pairs screened", what, st.Screened, st.Screen.Kind, st.Screen.ExactTiles, st.Screen.Pairs, nq*ng)
				}
			case "rows":
				if st.Screen.Kind != c.kind || st.Screen.ExactTiles != 0 || st.Screen.Pairs != int64(nq*ng) || st.Screen.Exact < int64(10*nq) {
					t.Fatalf("%s: screen %q, %d blocks exact, %d of %d pairs screened, %d exact", what, st.Screen.Kind, st.Screen.ExactTiles, st.Screen.Pairs, nq*ng, st.Screen.Exact)
				}
			}
		}
	}
}

// Nearest negatives among rows whose exact scores differ by far less than
// the cheap scores' error: the exact maximum often has a lower cheap score
// than another row, before or after it in the row order, so every
// candidate within 2e of the cheap maximum must be verified; one gallery
// block and several. Every screen gives the oracle's results.
func TestScreenedNearestNegativeInTightClusters(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(49, 50))
	for _, d := range []int{16, 96} {
		anchor := gauss(r, d, 1)
		var g, q [][]float64
		for range 600 {
			v := slices.Clone(anchor)
			s := math.Pow(10, -13+5*r.Float64())
			for j := range v {
				v[j] += s * r.NormFloat64()
			}
			g = append(g, v)
		}
		for range 40 {
			q = append(q, gauss(r, d, 1))
		}
		p := denseProblem(t, screenCase{"tight", q, g}, r)
		for _, bc := range screenBoundCases {
			for _, sim := range []Similarity{Cosine, Dot} {
				for _, gb := range []int{50, 600} {
					o := Options{Similarity: sim, Precision: bc.prec, QueryBatch: 8, GalleryBatch: gb, Threads: 2}
					got, st, err := scoreStats(context.Background(), p, o, &tuning{screen: bc.kind})
					what := fmt.Sprintf("d=%d %s sim %d gallery block %d", d, bc.name, sim, gb)
					wantOracle(t, p, sim, bc.prec, got, err, what)
					if st.Screen.Kind != bc.kind || st.Screen.Exact == 0 {
						t.Fatalf("%s: screen %q verified %d pairs", what, st.Screen.Kind, st.Screen.Exact)
					}
				}
			}
		}
	}
}

// runScreen32 scores p as Score does, with the float32 screen's tiles cut
// at rowBytes bytes of cheap scores (sub-blocks of at least 64 rows).
func runScreen32(ctx context.Context, p Problem, o Options, rowBytes int) ([]QueryResult, Stats, int, error) {
	var st Stats
	o.Stats = &st
	pr, err := prepare(ctx, p, o)
	if err != nil {
		return nil, st, 0, err
	}
	s := newScorer[float64](ctx, pr, allRows(pr.ng), 0, pr.nq)
	out := make([]QueryResult, pr.nq)
	s.emit = func(q int, r QueryResult) error {
		r.Ranks = slices.Clone(r.Ranks)
		out[q] = r
		return nil
	}
	sc := newScreen32(s)
	sc.rowBytes = rowBytes
	s.screen, s.chosen = sc, true
	err = s.scoreAll(ctx)
	return out, st, sc.subRows(s.pl.gb, min(o.QueryBatch, pr.nq)), err
}

// Gallery blocks split into several sub-blocks of float32 cheap scores (as
// with thousands of queries per batch) give the oracle's results:
// thresholds, nearest-negative candidates and counts carry across
// sub-blocks (TestScreenedSubBlocks).
func TestScreen32SubBlocks(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(55, 56))
	for _, d := range []int{17, 384} {
		nq, ng := 7, 1200
		for _, c := range screenCases(r, d, nq, ng) {
			p := denseProblem(t, c, r)
			for _, sim := range []Similarity{Cosine, Dot} {
				o := Options{Similarity: sim, Precision: Float64, QueryBatch: 5, GalleryBatch: 1200, Threads: 2}
				got, st, sub, err := runScreen32(context.Background(), p, o, 1)
				what := fmt.Sprintf("d=%d %s sim %d", d, c.name, sim)
				wantOracle(t, p, sim, Float64, got, err, what)
				if err != nil {
					continue
				}
				if sub != 64 || !st.Screened || (st.Screen.ExactTiles == 0) != (st.Screen.Pairs == int64(nq*ng)) {
					t.Fatalf("%s: sub-blocks of %d rows, screened %v, %d pairs", what, sub, st.Screened, st.Screen.Pairs)
				}
			}
		}
	}
}

// The plan screens only where a proven bound exists and exact scores are
// needed only where a decision is uncertain: never squared_l2, a run
// export (TopN, FullRanking), sparse endpoints or Options.Exhaustive, even
// with a screen forced; and the float32 screen only under the float64
// protocol. Results stay the oracle's.
func TestScreenApplicability(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(57, 58))
	p := denseProblem(t, screenCases(r, 17, 10, 60)[1], r)
	sq, _ := randomSparseRows(r, 10, 40, 5)
	sg, _ := randomSparseRows(r, 60, 40, 5)
	sparse := p
	sparse.Queries, sparse.Gallery = sq, sg
	for _, kind := range []string{"float32", "int8", "int16"} {
		for _, prec := range []Precision{Float64, Float32} {
			for _, c := range []struct {
				name   string
				p      Problem
				o      Options
				screen bool
			}{
				{"dot", p, Options{Similarity: Dot}, kind != "float32" || prec == Float64},
				{"cosine", p, Options{Similarity: Cosine}, kind != "float32" || prec == Float64},
				{"squared_l2", p, Options{Similarity: SquaredL2}, false},
				{"top 3", p, Options{Similarity: Dot, TopN: 3}, false},
				{"full ranking", p, Options{Similarity: Cosine, FullRanking: true}, false},
				{"exhaustive", p, Options{Similarity: Dot, Exhaustive: true}, false},
				{"sparse", sparse, Options{Similarity: Dot}, false},
			} {
				o := c.o
				o.Precision, o.QueryBatch, o.GalleryBatch, o.Threads = prec, 4, 16, 2
				got, st, err := scoreStats(context.Background(), c.p, o, &tuning{screen: kind})
				what := fmt.Sprintf("%s forced, %s %s", kind, c.name, precName(prec))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if st.Screened != c.screen || (c.screen && st.Screen.Kind != kind) {
					t.Fatalf("%s: screened %v by %q, want %v", what, st.Screened, st.Screen.Kind, c.screen)
				}
				want, err := oracle(c.p, o.Similarity, prec)
				if err != nil {
					t.Fatal(err)
				}
				pp := planPoint{export: o.TopN}
				if o.FullRanking {
					pp.export = -1
				}
				if d := diffPlan(want, got, nil, pp); d != "" {
					t.Fatalf("%s: %s", what, d)
				}
			}
		}
	}
}
