package rank

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// oracle is exact retrieval written from the SPEC formulas alone: working
// rows by §4.1, every pair scored by the §4.2 chain (math.FMA, or the
// correctly rounded float32 FMA), every eligible candidate sorted by the
// tie rule, ranks read off positions (§4.3). Top holds every eligible
// candidate in rank order. A non-finite score fails with the pair of the
// lowest gallery index, then query index.
func oracle(p Problem, sim Similarity, prec Precision) ([]QueryResult, error) {
	nq, ng, d := p.Queries.Rows(), p.Gallery.Rows(), p.Queries.Cols()
	work := func(m matrix.Matrix, i int) []float64 {
		v := make([]float64, d)
		m.RowFloat64(i, v)
		if sim == Cosine {
			var mx float64
			for _, x := range v {
				mx = max(mx, math.Abs(x))
			}
			var acc float64
			for _, x := range v {
				y := x / mx
				acc = math.FMA(y, y, acc)
			}
			n := mx * math.Sqrt(acc)
			for k := range v {
				v[k] /= n
			}
		}
		if prec == Float32 {
			for k := range v {
				v[k] = float64(float32(v[k]))
			}
		}
		return v
	}
	qs, gs := make([][]float64, nq), make([][]float64, ng)
	for i := range qs {
		qs[i] = work(p.Queries, i)
	}
	for j := range gs {
		gs[j] = work(p.Gallery, j)
	}
	score := func(a, b []float64) float64 {
		if prec == Float32 {
			var acc float32
			for k := range a {
				x, y := float32(a[k]), float32(b[k])
				if sim == SquaredL2 {
					t := x - y
					acc = kernel.FMA32(t, t, acc)
				} else {
					acc = kernel.FMA32(x, y, acc)
				}
			}
			if sim == SquaredL2 {
				acc = -acc
			}
			return float64(acc) + 0
		}
		var acc float64
		for k := range a {
			if sim == SquaredL2 {
				t := a[k] - b[k]
				acc = math.FMA(t, t, acc)
			} else {
				acc = math.FMA(a[k], b[k], acc)
			}
		}
		if sim == SquaredL2 {
			acc = -acc
		}
		return acc + 0
	}
	scores := make([][]float64, nq)
	badQ, badG := -1, -1
	for i := range nq {
		scores[i] = make([]float64, ng)
		for j := range ng {
			s := score(qs[i], gs[j])
			scores[i][j] = s
			if math.IsNaN(s) || math.IsInf(s, 0) {
				if badG < 0 || j < badG || (j == badG && i < badQ) {
					badQ, badG = i, j
				}
			}
		}
	}
	if badG >= 0 {
		return nil, fmt.Errorf("non-finite similarity score for query %q and gallery %q", p.QueryIDs[badQ], p.GalleryIDs[badG])
	}
	rel := p.Relevance
	if p.Classes != nil {
		rel = p.Classes.Materialise()
	}
	out := make([]QueryResult, nq)
	for i := range nq {
		var ex []int
		if p.Exclusions != nil {
			ex = p.Exclusions[i]
		}
		var cs []Candidate
		for j := range ng {
			if !slices.Contains(ex, j) {
				cs = append(cs, Candidate{Index: j, Score: scores[i][j]})
			}
		}
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].Score > cs[b].Score })
		pos := map[int]int{}
		for r, c := range cs {
			pos[c.Index] = r + 1
		}
		res := &out[i]
		isPos := map[int]bool{}
		for _, x := range retrieval.EligiblePositives(rel[i], ex) {
			res.Positives = append(res.Positives, x)
			res.Ranks = append(res.Ranks, pos[x.Index])
			res.Scores = append(res.Scores, scores[i][x.Index])
			isPos[x.Index] = true
		}
		for _, c := range cs {
			if !isPos[c.Index] && !res.HasNegative {
				res.NearestNegative, res.HasNegative = c.Score, true
			}
		}
		res.Top = cs
	}
	return out, nil
}

// planProblem is one input of the plan matrix: a family of rows (the
// adversarial families of the screen), a width and a relevance kind.
type planProblem struct {
	name string
	p    Problem
}

// relevance kinds of the plan matrix.
var planRelevance = []string{"graded", "binary-many", "labels-1", "labels-3-interleaved", "labels-9-contiguous"}

func withRelevance(r *rand.Rand, c screenCase, kind string) Problem {
	q, _ := matrix.FromRows(c.q)
	g, _ := matrix.FromRows(c.g)
	nq, ng := len(c.q), len(c.g)
	p := Problem{Queries: q, Gallery: g, Exclusions: make([][]int, nq)}
	for i := range nq {
		p.QueryIDs = append(p.QueryIDs, "q"+strconv.Itoa(i))
	}
	for j := range ng {
		p.GalleryIDs = append(p.GalleryIDs, "g"+strconv.Itoa(j))
	}
	var lists [][]int
	switch kind {
	case "graded", "binary-many":
		p.Relevance = make([][]retrieval.Positive, nq)
		lists = make([][]int, nq)
		for i := range nq {
			n := 1 + r.IntN(4)
			if kind == "binary-many" {
				n = []int{1, 7, 9, 33, ng - 3}[i%5] // both sides of the slot scans and of the bucket tables
			}
			perm := r.Perm(ng)[:min(n, ng-1)]
			slices.Sort(perm)
			for _, j := range perm {
				grade := 1.0
				if kind == "graded" {
					grade = float64(1 + r.IntN(3))
				}
				p.Relevance[i] = append(p.Relevance[i], retrieval.Positive{Index: j, Grade: grade})
			}
			lists[i] = perm
		}
	default:
		k := map[string]int{"labels-1": 1, "labels-3-interleaved": 3, "labels-9-contiguous": 9}[kind]
		qc, gc := make([]int32, nq), make([]int32, ng)
		for j := range gc {
			gc[j] = int32(j % k)
			if kind == "labels-9-contiguous" {
				gc[j] = int32(j * k / ng)
			}
		}
		for i := range qc {
			qc[i] = int32(r.IntN(k))
			if kind == "labels-3-interleaved" {
				qc[i] = int32(i % k)
			}
		}
		p.Classes = retrieval.NewClasses(qc, gc)
		lists = make([][]int, nq)
		for i := range nq {
			for _, g := range p.Classes.Members(int(qc[i])) {
				lists[i] = append(lists[i], int(g))
			}
		}
	}
	// Exclusions: the query's own row (leave-one-out style), another row,
	// sometimes a positive; every query keeps an eligible positive.
	for i := range nq {
		var ex []int
		if r.IntN(2) == 0 && i < ng {
			ex = append(ex, i)
		}
		if r.IntN(3) == 0 {
			ex = append(ex, r.IntN(ng))
		}
		slices.Sort(ex)
		ex = slices.Compact(ex)
		kept := 0
		for _, g := range lists[i] {
			if !slices.Contains(ex, g) {
				kept++
			}
		}
		if kept == 0 {
			ex = nil
		}
		p.Exclusions[i] = ex
	}
	return p
}

// planProblems builds every family × relevance kind, the widths cycling
// through 1, 3, 17, 384, 769 and 1536.
func planProblems(seed uint64) []planProblem {
	r := rand.New(rand.NewPCG(seed, 77))
	widths := []int{1, 3, 17, 384, 769, 1536}
	var out []planProblem
	n := 0
	for _, kind := range planRelevance {
		nq, ng := 13, 46
		for f := range 7 {
			d := widths[n%len(widths)]
			n++
			c := screenCases(r, d, nq, ng)[f]
			out = append(out, planProblem{name: fmt.Sprintf("%s/%s/d=%d", kind, c.name, d), p: withRelevance(r, c, kind)})
		}
	}
	return out
}

// plan is one point of the matrix.
type planPoint struct {
	screen string // off, auto (""), float32, int8, int16
	shards int    // 0: a whole run
	layout ShardLayout
	window bool // contiguous shards that hold only their rows (Problem.GalleryTotal)
	pooled bool
	sorted bool
	export int // 0 none, >0 TopN, −1 FullRanking
}

func (pp planPoint) String() string {
	s := "screen=" + pp.screen
	if pp.screen == "" {
		s = "screen=auto"
	}
	if pp.shards > 0 {
		s += fmt.Sprintf(" shards=%d/%s", pp.shards, pp.layout)
	}
	if pp.window {
		s += " window"
	}
	if pp.pooled {
		s += " pooled"
	}
	if pp.sorted {
		s += " sorted"
	}
	switch {
	case pp.export > 0:
		s += " top=" + strconv.Itoa(pp.export)
	case pp.export < 0:
		s += " full"
	}
	return s
}

// planPoints is every feasible plan for a problem (labels: sorted ranks).
func planPoints(labels bool) []planPoint {
	var out []planPoint
	for _, screen := range []string{"off", "", "float32", "int8", "int16"} {
		for _, export := range []int{0, 5, -1} {
			for _, pooled := range []bool{false, true} {
				out = append(out, planPoint{screen: screen, export: export, pooled: pooled, sorted: labels && pooled})
				if labels && !pooled {
					out = append(out, planPoint{screen: screen, export: export, sorted: true})
				}
			}
			for _, n := range []int{1, 2, 3, 7} {
				for _, l := range []ShardLayout{Contiguous, Modulo} {
					out = append(out, planPoint{screen: screen, export: export, shards: n, layout: l})
				}
				for _, l := range []ShardLayout{Contiguous, Modulo} {
					out = append(out, planPoint{screen: screen, export: export, shards: n, layout: l, window: true})
				}
			}
		}
	}
	return out
}

// runPlan scores p under the plan, with block sizes, threads and the
// plan's tuning drawn from r.
func runPlan(r *rand.Rand, p Problem, sim Similarity, prec Precision, pp planPoint, tune *tuning) ([]QueryResult, *metrics.Summary, error) {
	o := Options{Similarity: sim, Precision: prec, QueryBatch: []int{1, 3, 8, 128}[r.IntN(4)], GalleryBatch: []int{1, 4, 7, 16, 10000}[r.IntN(5)],
		Threads: 1 + r.IntN(3), SortedRanks: pp.sorted}
	switch {
	case pp.export > 0:
		o.TopN = pp.export
	case pp.export < 0:
		o.FullRanking = true
	}
	t := *tune
	t.screen = pp.screen
	if t.screen == "" {
		t.screen = "auto"
	}
	o.tune = &t
	ctx := context.Background()
	if pp.shards == 0 {
		if pp.pooled {
			o.Pooled = &Pooled{}
		}
		res, err := Score(ctx, p, o)
		if err != nil || !pp.pooled {
			return res, nil, err
		}
		return res, &o.Pooled.Summary, nil
	}
	pos, err := ScorePositives(ctx, p, o)
	if err != nil {
		return nil, nil, err
	}
	// With windows, shard i holds only its rows: its positives stage scores
	// the positives among them, the merged stages must be ScorePositives
	// bit for bit, and the shard's pass runs on the window.
	shardProblem := func(int) Problem { return p }
	if pp.window {
		wins := make([]Problem, pp.shards)
		var stages [][]float64
		for i := range pp.shards {
			if wins[i], err = windowOf(p, Shard{Index: i, Total: pp.shards, Layout: pp.layout}); err != nil {
				return nil, nil, err
			}
			wp, err := ScoreWindowPositives(ctx, wins[i], o)
			if err != nil {
				return nil, nil, err
			}
			stages = append(stages, wp.Scores)
		}
		merged, err := AssemblePositiveScores(p, p.Gallery.Rows(), pp.layout, stages)
		if err != nil {
			return nil, nil, err
		}
		bits := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
		if !slices.Equal(merged.Offsets, pos.Offsets) || !slices.Equal(merged.Index, pos.Index) || !slices.EqualFunc(merged.Scores, pos.Scores, bits) {
			return nil, nil, fmt.Errorf("merged window positives differ from ScorePositives")
		}
		pos, shardProblem = merged, func(i int) Problem { return wins[i] }
	}
	nq := p.Queries.Rows()
	cuts := []int{0}
	for q := 1; q < nq; q++ {
		if r.IntN(4) == 0 {
			cuts = append(cuts, q)
		}
	}
	cuts = append(cuts, nq)
	var blocks []*Partial
	for b := range len(cuts) - 1 {
		var parts []*Partial
		for i := range pp.shards {
			pt, err := ScoreShard(ctx, shardProblem(i), o, pos, ShardTask{QueryLo: cuts[b], QueryHi: cuts[b+1], Gallery: Shard{Index: i, Total: pp.shards, Layout: pp.layout}})
			if err != nil {
				return nil, nil, err
			}
			parts = append(parts, pt)
		}
		r.Shuffle(len(parts), func(a, b int) { parts[a], parts[b] = parts[b], parts[a] })
		m, err := MergePartials(parts...)
		if err != nil {
			return nil, nil, err
		}
		blocks = append(blocks, m)
	}
	out := make([]QueryResult, nq)
	err = Results(Problem{QueryIDs: p.QueryIDs, GalleryIDs: p.GalleryIDs, Relevance: p.Relevance, Classes: p.Classes, Exclusions: p.Exclusions},
		blocks, func(q int, res QueryResult) error { out[q] = res; return nil })
	return out, nil, err
}

// diffPlan compares a plan's results with the oracle's, bit for bit.
func diffPlan(want []QueryResult, got []QueryResult, sum *metrics.Summary, pp planPoint) string {
	bits := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	var pooled []float64
	for q := range want {
		w, g := want[q], got[q]
		pooled = append(pooled, w.Scores...)
		if g.HasNegative != w.HasNegative || !bits(g.NearestNegative, w.NearestNegative) {
			return fmt.Sprintf("query %d: nearest negative %v %v, want %v %v", q, g.HasNegative, g.NearestNegative, w.HasNegative, w.NearestNegative)
		}
		ranks := w.Ranks
		if pp.sorted {
			ranks = slices.Sorted(slices.Values(w.Ranks))
			if g.Positives != nil {
				return fmt.Sprintf("query %d: sorted ranks with positives", q)
			}
		} else if !slices.Equal(g.Positives, w.Positives) {
			return fmt.Sprintf("query %d: positives %v, want %v", q, g.Positives, w.Positives)
		}
		if !slices.Equal(g.Ranks, ranks) {
			return fmt.Sprintf("query %d: ranks %v, want %v", q, g.Ranks, ranks)
		}
		if pp.pooled {
			if g.Scores != nil || !bits(g.MaxPositive, slices.Max(w.Scores)) {
				return fmt.Sprintf("query %d: max positive %v, want %v", q, g.MaxPositive, slices.Max(w.Scores))
			}
		} else if !slices.EqualFunc(g.Scores, w.Scores, bits) {
			return fmt.Sprintf("query %d: scores %v, want %v", q, g.Scores, w.Scores)
		}
		top := w.Top
		switch {
		case pp.export > 0:
			top = top[:min(len(top), pp.export)]
		case pp.export == 0:
			top = nil
		}
		if len(g.Top) != len(top) || !slices.EqualFunc(g.Top, top, func(a, b Candidate) bool { return a.Index == b.Index && bits(a.Score, b.Score) }) {
			return fmt.Sprintf("query %d: top %v, want %v", q, g.Top, top)
		}
	}
	if pp.pooled {
		ws := metrics.Summarise(pooled)
		for k, pair := range [][2]*float64{{sum.Mean, ws.Mean}, {sum.Median, ws.Median}, {sum.Min, ws.Min}, {sum.Max, ws.Max}} {
			if pair[0] == nil || !bits(*pair[0], *pair[1]) {
				return fmt.Sprintf("pooled summary field %d: %v, want %v", k, *pair[0], *pair[1])
			}
		}
	}
	return ""
}

// randomTuning draws the test-only settings that reach every path with
// small inputs: tiny query chunks and median windows, plain searches,
// short integer screen sub-blocks, early verification.
func randomTuning(r *rand.Rand) *tuning {
	return &tuning{
		chunkPairs: []int{0, 1, 7, 50}[r.IntN(4)],
		windowCap:  []int{0, 1, 20}[r.IntN(3)],
		noBuckets:  r.IntN(4) == 0,
		static:     r.IntN(2) == 0,
		subRows:    []int{kernel.Int16GalleryTile, 0}[r.IntN(2)],
		verify:     []int{0, 1, 5}[r.IntN(3)],
		longRows:   []int{0, 0, 7, 1 << 30}[r.IntN(4)],
	}
}

// TestEveryPlanEqualsOracle runs every feasible plan — each relevance kind
// × each screen (off, the plan's choice, float32, int8, int16 forced) × a whole
// run and 1/2/3/7 gallery shards, contiguous and modulo × both precisions
// × three similarities × pooled summary on/off × run export off/top/full —
// on the adversarial families of the screen (near-ties at the bound,
// duplicated rows, scaled copies, extreme magnitudes, tight clusters) at
// widths 1 to 1536, with random block sizes, threads, query chunks,
// windows and integer screen sub-blocks, and requires the oracle's results (or its
// error) bit for bit.
func TestEveryPlanEqualsOracle(t *testing.T) {
	t.Parallel()
	for pi, pb := range planProblems(1) {
		t.Run(pb.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(pi), 3))
			for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
				for _, prec := range []Precision{Float64, Float32} {
					want, werr := oracle(pb.p, sim, prec)
					for _, pp := range planPoints(pb.p.Classes != nil) {
						if pp.window && werr != nil {
							continue // a window reports its own rows' first failure (TestWindowErrorsNameGlobalRows)
						}
						got, sum, err := runPlan(r, pb.p, sim, prec, pp, randomTuning(r))
						if werr != nil || err != nil {
							if prec == Float32 && err != nil && strings.Contains(err.Error(), "cannot be represented in float32") {
								continue // the family's values exceed float32: a §4.1 refusal
							}
							if werr == nil || err == nil || err.Error() != werr.Error() {
								t.Fatalf("%v %v %v: error %v, want %v", sim, prec, pp, err, werr)
							}
							continue
						}
						if d := diffPlan(want, got, sum, pp); d != "" {
							t.Fatalf("%v %v %v: %s", sim, prec, pp, d)
						}
					}
				}
			}
		})
	}
}

// mismatches counts the problems on which a tuned plan's results differ
// from the oracle's.
func mismatches(t *testing.T, sims []Similarity, prec Precision, pp planPoint, tune func() *tuning) int {
	t.Helper()
	n := 0
	r := rand.New(rand.NewPCG(5, 5))
	for _, pb := range planProblems(2) {
		for _, sim := range sims {
			want, werr := oracle(pb.p, sim, prec)
			if werr != nil {
				continue
			}
			got, sum, err := runPlan(r, pb.p, sim, prec, pp, tune())
			if err != nil || diffPlan(want, got, sum, pp) != "" {
				n++
			}
		}
	}
	return n
}

// A screen whose bound is shrunk decides pairs it has no right to decide:
// the plan matrix's families must catch it, for every cheap-score type.
func TestShrunkScreenBoundIsCaught(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		screen string
		prec   Precision
	}{{"float32", Float64}, {"int16", Float32}, {"int16", Float64}, {"int8", Float32}, {"int8", Float64}} {
		t.Run(c.screen+"/"+map[Precision]string{Float64: "float64", Float32: "float32"}[c.prec], func(t *testing.T) {
			t.Parallel()
			pp := planPoint{screen: c.screen}
			if n := mismatches(t, []Similarity{Cosine, Dot}, c.prec, pp, func() *tuning { return &tuning{} }); n != 0 {
				t.Fatalf("%d mismatches with the proven bound", n)
			}
			if n := mismatches(t, []Similarity{Cosine, Dot}, c.prec, pp, func() *tuning { return &tuning{boundScale: 1e-3} }); n == 0 {
				t.Fatal("a bound shrunk 1000× went unnoticed")
			}
		})
	}
}

// Counts of several workers merged with max instead of sum must be caught.
func TestCountsMergedWithMaxAreCaught(t *testing.T) {
	t.Parallel()
	for _, screen := range []string{"off", "float32", "int8", "int16"} {
		pp := planPoint{screen: screen}
		if n := mismatches(t, []Similarity{Cosine, Dot, SquaredL2}, Float64, pp, func() *tuning { return &tuning{mergeMax: true, static: true} }); n == 0 {
			t.Fatalf("screen %s: counts merged with max went unnoticed", screen)
		}
	}
}

// windowOf is p's gallery shard as a worker that read only its rows holds
// it (a copy: nothing outside the window is reachable).
func windowOf(p Problem, sh Shard) (Problem, error) {
	ng := p.Gallery.Rows()
	rows := sh.Rows(ng)
	w := p
	w.GalleryTotal = ng
	w.GalleryFirst = int(int64(sh.Index) * int64(ng) / int64(sh.Total))
	if sh.Layout == Modulo {
		w.GalleryFirst, w.GalleryStride = sh.Index, sh.Total
	}
	m, err := retrieval.SelectRows(p.Gallery, rows)
	if err != nil {
		return Problem{}, err
	}
	w.Gallery = m
	return w, nil
}

// A window's row checks cover its rows and name them by their global
// index and ID; a window is scored only as the shard it is.
func TestWindowErrorsNameGlobalRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nq, ng, d := 2, 10, 3
	qv := make([]float64, nq*d)
	gv := make([]float64, ng*d)
	for i := range qv {
		qv[i] = float64(i%5 + 1)
	}
	for i := range gv {
		gv[i] = float64(i%7 + 1)
	}
	q, _ := matrix.NewDense64(nq, d, qv)
	p := Problem{Queries: q, QueryIDs: []string{"q0", "q1"}, GalleryIDs: make([]string, ng), Relevance: [][]retrieval.Positive{{{Index: 1, Grade: 1}}, {{Index: 8, Grade: 1}}}}
	for i := range p.GalleryIDs {
		p.GalleryIDs[i] = fmt.Sprintf("g%d", i)
	}
	window := func(edit func(v []float64)) Problem {
		v := slices.Clone(gv[5*d:])
		if edit != nil {
			edit(v)
		}
		g, _ := matrix.NewDense64(5, d, v)
		w := p
		w.Gallery, w.GalleryFirst, w.GalleryTotal = g, 5, ng
		return w
	}
	o := Options{Similarity: Cosine, Precision: Float64, QueryBatch: 4, GalleryBatch: 4}
	for _, c := range []struct {
		name string
		edit func(v []float64)
		o    Options
		want string
	}{
		{"zero norm", func(v []float64) { clear(v[2*d : 3*d]) }, o, `Gallery embeddings contain 1 zero-norm row(s): index 7 (ID "g7")`},
		{"non-finite", func(v []float64) { v[3*d+1] = math.NaN() }, o, "Gallery embeddings must contain only finite numeric values; row 8, column 1"},
		{"float32 range", func(v []float64) { v[4*d+2] = 1e300 }, Options{Similarity: Dot, Precision: Float32, QueryBatch: 4, GalleryBatch: 4},
			`Gallery embeddings: value at row 9 (ID "g9"), column 2 cannot be represented in float32`},
	} {
		if _, err := ScoreWindowPositives(ctx, window(c.edit), c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	w := window(nil)
	if _, err := ScorePositives(ctx, w, o); err == nil {
		t.Error("ScorePositives took a window")
	}
	wp, err := ScoreWindowPositives(ctx, w, o)
	if err != nil || !slices.Equal(wp.Index, []int{8}) || !slices.Equal(wp.Offsets, []int{0, 0, 1}) {
		t.Fatalf("window positives %+v, %v", wp, err)
	}
	w.GalleryFirst = 6
	if _, err := ScoreWindowPositives(ctx, w, o); err == nil || !strings.Contains(err.Error(), "not rows of a 10-row gallery") {
		t.Errorf("a window past the gallery: %v", err)
	}
	w.GalleryFirst = 5
	if _, err := ScoreShard(ctx, w, o, wp, ShardTask{QueryLo: 0, QueryHi: 2, Gallery: Shard{Index: 0, Total: 2}}); err == nil || !strings.Contains(err.Error(), "is not the rows 5, 6, … below 10") {
		t.Errorf("the wrong shard of a window: %v", err)
	}
	// A modulo window (rows 1, 4, 7 of 10) names its rows globally too.
	v := slices.Clone(gv[:3*d])
	clear(v[1*d : 2*d])
	g, _ := matrix.NewDense64(3, d, v)
	m := p
	m.Gallery, m.GalleryFirst, m.GalleryStride, m.GalleryTotal = g, 1, 3, ng
	if _, err := ScoreWindowPositives(ctx, m, o); err == nil || !strings.Contains(err.Error(), `zero-norm row(s): index 4 (ID "g4")`) {
		t.Errorf("modulo window: %v", err)
	}
}

// Count, Holds and Range agree with Rows: 10 rows in 3 shards.
func TestShardRowHelpers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sh     Shard
		rows   []int
		lo, hi int
	}{
		{Shard{Index: 0, Total: 3}, []int{0, 1, 2}, 0, 3},
		{Shard{Index: 2, Total: 3}, []int{6, 7, 8, 9}, 6, 10},
		{Shard{Index: 1, Total: 3, Layout: Modulo}, []int{1, 4, 7}, 3, 6},
		{Shard{Index: 0, Total: 12}, nil, 0, 0},
	} {
		if got := c.sh.Rows(10); !slices.Equal(got, c.rows) && len(got)+len(c.rows) > 0 {
			t.Errorf("%+v: rows %v, want %v", c.sh, got, c.rows)
		}
		if lo, hi := c.sh.Range(10); c.sh.Count(10) != len(c.rows) || lo != c.lo || hi != c.hi {
			t.Errorf("%+v: count %d, range [%d, %d)", c.sh, c.sh.Count(10), lo, hi)
		}
		for g := -1; g <= 10; g++ {
			if c.sh.Holds(10, g) != slices.Contains(c.rows, g) {
				t.Errorf("%+v: Holds(%d) = %v", c.sh, g, c.sh.Holds(10, g))
			}
		}
	}
}
