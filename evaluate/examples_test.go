package evaluate

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

func mat(t *testing.T, rows [][]float64) *matrix.Dense {
	t.Helper()
	m, err := matrix.FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type example struct {
	q, g       [][]float64
	qids, gids []string
	rel        retrieval.Relevance
	excl       []retrieval.Pair
	cfg        func(*retrieval.Config)
}

func (e example) run(t *testing.T) (*results.Benchmark, error) {
	t.Helper()
	cfg := retrieval.DefaultConfig()
	cfg.Ks = []int{1}
	cfg.PrimaryMetric = "ndcg@1"
	if e.cfg != nil {
		e.cfg(&cfg)
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Embeddings(mat(t, e.q)), Gallery: retrieval.Embeddings(mat(t, e.g)),
		QueryIDs: e.qids, GalleryIDs: e.gids, Exclusions: e.excl, Identity: retrieval.FromContent(),
	}, e.rel)
	if err != nil {
		return nil, err
	}
	return Run(context.Background(), ds, cfg, []Backbone{Precomputed("x")}, Options{RunDepth: -1})
}

func near(a, b float64) bool { return math.Abs(a-b) < 5e-8 }

func wantMetrics(t *testing.T, r *results.ScoreResult, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		got, ok := r.Metrics.Get(k)
		if !ok || !near(got, w) {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, w)
		}
	}
}

func recs(triples ...any) retrieval.Relevance {
	var out []retrieval.Record
	for i := 0; i < len(triples); i += 3 {
		out = append(out, retrieval.Record{QueryID: triples[i].(string), GalleryID: triples[i+1].(string), Grade: triples[i+2].(float64)})
	}
	return retrieval.RecordRelevance(out)
}

// SPEC §4.10 example 1.
func TestExampleGradedBinary(t *testing.T) {
	b, err := example{
		q: [][]float64{{1, 0}, {0, 1}}, g: [][]float64{{1, 0}, {0.7, 0.7}, {0, 1}},
		rel: recs("0", "0", 3.0, "0", "1", 1.0, "1", "2", 2.0),
		cfg: func(c *retrieval.Config) { c.Ks = []int{1, 2} },
	}.run(t)
	if err != nil {
		t.Fatal(err)
	}
	f := b.ExtractorResults[0].Forward
	wantMetrics(t, f, map[string]float64{"mrr": 1, "map": 1, "precision@1": 1, "recall@1": 0.75, "hit_rate@1": 1,
		"ndcg@1": 1, "precision@2": 0.75, "recall@2": 1, "hit_rate@2": 1, "ndcg@2": 1})
	if f.Score != 1 {
		t.Errorf("score %v", f.Score)
	}
	ps := f.Diagnostics.PositiveSimilarity
	if !near(*ps.Mean, 0.9023689) || *ps.Median != 1 || !near(*ps.Min, 0.7071068) || *ps.Max != 1 {
		t.Errorf("positive similarity %v %v %v %v", *ps.Mean, *ps.Median, *ps.Min, *ps.Max)
	}
	nn := f.Diagnostics.NearestNegativeSimilarity
	if *nn.Min != 0 || !near(*nn.Max, 0.7071068) {
		t.Errorf("nearest negatives %v %v", *nn.Min, *nn.Max)
	}
	mg := f.Diagnostics.RetrievalMargin
	if !near(*mg.Min, 0.2928932) || *mg.Max != 1 {
		t.Errorf("margins %v %v", *mg.Min, *mg.Max)
	}
}

// SPEC §4.10 example 2.
func TestExampleGainChoice(t *testing.T) {
	for gain, want := range map[string]float64{"exponential": 0.7098097, "linear": 0.7967076} {
		b, err := example{
			q: [][]float64{{1, 0}}, g: [][]float64{{2, 0}, {1, 0}},
			rel: recs("0", "0", 1.0, "0", "1", 3.0),
			cfg: func(c *retrieval.Config) {
				c.Similarity, c.Ks, c.PrimaryMetric, c.Gain = "dot", []int{2}, "ndcg@2", gain
			},
		}.run(t)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.ExtractorResults[0].PrimaryScore; !near(got, want) {
			t.Errorf("%s: ndcg@2 = %v, want %v", gain, got, want)
		}
	}
}

// SPEC §4.10 example 3: ties broken by lower gallery index, zero vectors.
func TestExampleTieBreak(t *testing.T) {
	for _, sim := range []string{"dot", "squared_l2"} {
		b, err := example{
			q: [][]float64{{0, 0}, {1, 0}}, g: [][]float64{{0, 0}, {1, 0}},
			rel: recs("0", "0", 1.0, "1", "1", 1.0),
			cfg: func(c *retrieval.Config) { c.Similarity = sim },
		}.run(t)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.ExtractorResults[0].PrimaryScore; got != 1 {
			t.Errorf("%s: ndcg@1 = %v, want 1", sim, got)
		}
	}
	// With the relevant item second, a tie must rank it second.
	b, err := example{
		q: [][]float64{{0, 0}}, g: [][]float64{{0, 0}, {0, 0}},
		rel: recs("0", "1", 1.0),
		cfg: func(c *retrieval.Config) { c.Similarity = "dot" },
	}.run(t)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.ExtractorResults[0].Forward.Metrics.Get("mrr"); got != 0.5 {
		t.Errorf("tie must rank the higher index second: mrr %v", got)
	}
}

// SPEC §4.10 example 4.
func TestExampleHugeGrades(t *testing.T) {
	b, err := example{
		q: [][]float64{{1, 0}}, g: [][]float64{{1, 0}, {0.9, 0.1}},
		rel: recs("0", "0", 1024.0, "0", "1", 1023.0),
		cfg: func(c *retrieval.Config) { c.Ks, c.PrimaryMetric = []int{1, 2}, "ndcg@2" },
	}.run(t)
	if err != nil {
		t.Fatal(err)
	}
	f := b.ExtractorResults[0].Forward
	wantMetrics(t, f, map[string]float64{"ndcg@2": 1, "recall@1": 0.5})
	if len(f.Warnings) != 1 || f.Warnings[0] != `Query "0" has no negative candidates.` {
		t.Errorf("warnings %q", f.Warnings)
	}
	if f.Diagnostics.NearestNegativeSimilarity.Mean != nil || f.Diagnostics.RetrievalMargin.Max != nil {
		t.Error("nearest-negative and margin summaries must be null")
	}
	if _, err := b.MarshalReport(); err != nil {
		t.Fatal(err)
	}
}

// SPEC §4.10 example 5.
func TestExampleExtremeGrades(t *testing.T) {
	cases := []struct {
		g0, g1 float64
		gain   string
		want   float64
	}{
		{1e-300, 2e-300, "exponential", 0.8597187},
		{1e-300, 2e-300, "linear", 0.8597187},
		{5e307, 1e308, "exponential", 0.6309298},
		{5e307, 1e308, "linear", 0.8597187},
	}
	for _, c := range cases {
		b, err := example{
			q: [][]float64{{1, 0}}, g: [][]float64{{1, 0}, {0.5, 0}},
			rel: recs("0", "0", c.g0, "0", "1", c.g1),
			cfg: func(cfg *retrieval.Config) {
				cfg.Similarity, cfg.Ks, cfg.PrimaryMetric, cfg.Gain = "dot", []int{2}, "ndcg@2", c.gain
			},
		}.run(t)
		if err != nil {
			t.Fatal(err)
		}
		got := b.ExtractorResults[0].PrimaryScore
		if !near(got, c.want) || got <= 0 || got >= 1 {
			t.Errorf("grades (%g, %g) %s: ndcg@2 = %v, want %v", c.g0, c.g1, c.gain, got, c.want)
		}
	}
}

// SPEC §4.10 example 6: precision divides by k even when k > candidates.
func TestExamplePrecisionDividesByK(t *testing.T) {
	b, err := example{
		q: [][]float64{{1}}, g: [][]float64{{4}, {3}, {2}, {1}},
		rel: recs("0", "1", 1.0, "0", "3", 1.0),
		cfg: func(c *retrieval.Config) { c.Similarity, c.Ks, c.PrimaryMetric = "dot", []int{10}, "ndcg@10" },
	}.run(t)
	if err != nil {
		t.Fatal(err)
	}
	wantMetrics(t, b.ExtractorResults[0].Forward, map[string]float64{"precision@10": 0.2, "recall@10": 1, "mrr": 0.5, "map": 0.5})
}

// SPEC §4.10 example 7.
func TestExampleMissingEligiblePositive(t *testing.T) {
	_, err := example{
		q: [][]float64{{1, 0}, {0, 1}}, g: [][]float64{{1, 0}, {0, 1}},
		qids: []string{"left", "right"},
		rel:  recs("left", "0", 1.0, "right", "1", 1.0),
		excl: []retrieval.Pair{{QueryID: "right", GalleryID: "1"}},
	}.run(t)
	want := `Every query must retain at least one eligible positive relevance after exclusions; missing for ["right"]`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v", err)
	}
}

func TestMissingPositivePreviewList(t *testing.T) {
	var q, g [][]float64
	var qids []string
	var rs []any
	for i := 0; i < 12; i++ {
		q = append(q, []float64{1, float64(i)})
		qids = append(qids, "q"+string(rune('a'+i)))
	}
	g = [][]float64{{1, 0}}
	rs = append(rs, "qa", "0", 1.0)
	_, err := example{q: q, g: g, qids: qids, rel: recs(rs...),
		excl: []retrieval.Pair{{QueryID: "qa", GalleryID: "0"}}}.run(t)
	if err == nil {
		t.Fatal("expected error")
	}
	msg := err.Error()
	if !strings.Contains(msg, `missing for ["qa", "qb", "qc", "qd", "qe", "qf", "qg", "qh", "qi", "qj", ...]`) || strings.Contains(msg, `"qk"`) {
		t.Fatalf("preview list wrong: %s", msg)
	}
}

// SPEC §4.10 example 8.
func TestExampleBidirectionalCoverage(t *testing.T) {
	_, err := example{
		q: [][]float64{{1, 0}, {0, 1}}, g: [][]float64{{1, 0}, {0, 1}, {0.5, 0.5}},
		rel: recs("0", "0", 1.0, "1", "1", 1.0),
		cfg: func(c *retrieval.Config) { c.Bidirectional = true },
	}.run(t)
	if err == nil || !strings.Contains(err.Error(), "bidirectional retrieval requires") || !strings.Contains(err.Error(), `"2"`) {
		t.Fatalf("got %v", err)
	}
	var inv *retrieval.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("want *retrieval.InvalidError, got %T", err)
	}
}

func TestBidirectionalScoring(t *testing.T) {
	// Reverse: gallery rows rank the queries. g0→q0 (rank 1), g1→q1 (rank
	// 1), g2=[0.6,0.8] is relevant to q0 but nearer q1 → rank 2.
	b, err := example{
		q: [][]float64{{1, 0}, {0, 1}}, g: [][]float64{{1, 0}, {0, 1}, {0.6, 0.8}},
		rel: recs("0", "0", 1.0, "1", "1", 1.0, "0", "2", 1.0),
		cfg: func(c *retrieval.Config) { c.Bidirectional = true },
	}.run(t)
	if err != nil {
		t.Fatal(err)
	}
	r := b.ExtractorResults[0]
	if r.Reverse == nil {
		t.Fatal("reverse missing")
	}
	fwd, _ := r.Forward.Metrics.Get("mrr")
	rev, _ := r.Reverse.Metrics.Get("mrr")
	if fwd != 1 || !near(rev, (1+1+0.5)/3.0) {
		t.Errorf("mrr fwd %v rev %v", fwd, rev)
	}
	if r.Reverse.Metadata.NQueries != 3 || r.Reverse.Metadata.NGallery != 2 {
		t.Errorf("reverse counts %+v", r.Reverse.Metadata)
	}
	if !near(r.PrimaryScore, (r.Forward.Score+r.Reverse.Score)/2) {
		t.Errorf("primary score %v", r.PrimaryScore)
	}
}

// SPEC §4.10 example 9 for every block-size pair.
func TestExampleBlockInvariance(t *testing.T) {
	for _, qb := range []int{1, 2, 3, 100} {
		for _, gb := range []int{1, 2, 3, 4, 100} {
			b, err := example{
				q: [][]float64{{1, 0}, {0, 1}, {0.8, 0.2}}, g: [][]float64{{1, 0}, {0.2, 0.8}, {0, 1}, {0.8, 0.2}},
				rel: recs("0", "0", 2.0, "0", "3", 1.0, "1", "2", 2.0, "2", "3", 1.0),
				cfg: func(c *retrieval.Config) {
					c.Ks, c.PrimaryMetric, c.QueryBatchSize, c.GalleryBatchSize = []int{1, 2}, "ndcg@1", qb, gb
				},
			}.run(t)
			if err != nil {
				t.Fatal(err)
			}
			f := b.ExtractorResults[0].Forward
			want := map[string]float64{"recall@1": 0.8333333, "precision@2": 0.6666667, "mrr": 1, "map": 1,
				"precision@1": 1, "hit_rate@1": 1, "ndcg@1": 1, "recall@2": 1, "hit_rate@2": 1, "ndcg@2": 1}
			wantMetrics(t, f, want)
		}
	}
}

// SPEC §4.10 example 10.
func TestExampleSameIDsKept(t *testing.T) {
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Embeddings(mat(t, [][]float64{{1, 0}, {0, 1}})), Gallery: retrieval.Embeddings(mat(t, [][]float64{{1, 0}, {0, 1}})),
		QueryIDs: []string{"same", "q1"}, GalleryIDs: []string{"same", "g1"}, Identity: retrieval.Declared("d", "1"),
	}, recs("same", "same", 2.0, "q1", "g1", 1.0))
	if err != nil {
		t.Fatal(err)
	}
	if p := ds.Positives(0); len(p) != 1 || p[0].Index != 0 || p[0].Grade != 2 {
		t.Errorf("positives %v", p)
	}
	if s := ds.Summary(); s.NExclusions != 0 || s.NRelevancePairs != 2 {
		t.Errorf("summary %+v", s)
	}
}

func TestExclusionRemovesCandidate(t *testing.T) {
	// g0 would outrank the positive g1; excluding it lifts g1 to rank 1.
	b, err := example{
		q: [][]float64{{1, 0}}, g: [][]float64{{1, 0}, {0.9, 0.1}, {0, 1}},
		rel:  recs("0", "1", 1.0),
		excl: []retrieval.Pair{{QueryID: "0", GalleryID: "0"}, {QueryID: "0", GalleryID: "0"}},
	}.run(t)
	if err != nil {
		t.Fatal(err)
	}
	f := b.ExtractorResults[0].Forward
	wantMetrics(t, f, map[string]float64{"mrr": 1})
	// The excluded item is not the nearest negative either (g2 is, score 0).
	if *f.Diagnostics.NearestNegativeSimilarity.Max != 0 {
		t.Errorf("nearest negative %v", *f.Diagnostics.NearestNegativeSimilarity.Max)
	}
	if b.DatasetSummary.NExclusions != 1 {
		t.Errorf("duplicate exclusions must collapse: %d", b.DatasetSummary.NExclusions)
	}
}

func TestZeroNormRows(t *testing.T) {
	q := make([][]float64, 12)
	var qids []string
	var rs []any
	for i := range q {
		q[i] = []float64{0, 0}
		qids = append(qids, "query-zero-"+string(rune('a'+i)))
		rs = append(rs, qids[i], "0", 1.0)
	}
	_, err := example{q: q, g: [][]float64{{1, 0}, {0, 0}}, qids: qids, rel: recs(rs...)}.run(t)
	if err == nil {
		t.Fatal("want zero-norm error")
	}
	msg := err.Error()
	for _, frag := range []string{"Query embeddings contain 12 zero-norm row(s): index 0 (ID \"query-zero-a\"), index 1", "index 9", ", .... Cosine similarity is undefined for zero-norm embeddings."} {
		if !strings.Contains(msg, frag) {
			t.Errorf("missing %q in %s", frag, msg)
		}
	}
	if strings.Contains(msg, "index 10") {
		t.Errorf("preview too long: %s", msg)
	}
	// Gallery side: queries fine, one zero gallery row.
	_, err = example{q: [][]float64{{1, 0}}, g: [][]float64{{1, 0}, {0, 0}}, gids: []string{"g", "gallery-zero"}, rel: recs("0", "g", 1.0)}.run(t)
	want := `Gallery embeddings contain 1 zero-norm row(s): index 1 (ID "gallery-zero"). Cosine similarity is undefined for zero-norm embeddings.`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v", err)
	}
}

func TestLabelLeaveOneOut(t *testing.T) {
	items := retrieval.Embeddings(mat(t, [][]float64{{1, 0}, {0.9, 0.1}, {0, 1}, {0.1, 0.9}}))
	ds, err := retrieval.NewLeaveOneOutDataset(items, []string{"a", "b", "c", "d"}, []string{"x", "x", "y", "y"},
		retrieval.WithIdentity(retrieval.FromContent()))
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Summary()
	if s.NExclusions != 4 || s.NRelevancePairs != 4 || s.Metadata["relevance_source"] != "labels" || s.Metadata["leave_one_out"] != true {
		t.Errorf("summary %+v", s)
	}
	cfg := retrieval.DefaultConfig()
	cfg.Ks, cfg.PrimaryMetric = []int{1}, "ndcg@1"
	b, err := Run(context.Background(), ds, cfg, []Backbone{Precomputed("p")}, Options{RunDepth: -1})
	if err != nil {
		t.Fatal(err)
	}
	wantMetrics(t, b.ExtractorResults[0].Forward, map[string]float64{"mrr": 1, "ndcg@1": 1, "recall@1": 1})
	// A unique label leaves its item without an eligible positive.
	_, err = retrieval.NewLeaveOneOutDataset(items, []string{"a", "b", "c", "d"}, []string{"x", "x", "y", "z"},
		retrieval.WithIdentity(retrieval.FromContent()))
	if err == nil || !strings.Contains(err.Error(), `missing for ["c", "d"]`) {
		t.Fatalf("got %v", err)
	}
}

func TestWorstQueriesOrderAndLimit(t *testing.T) {
	// Scores are the gallery values: positives rank 2nd (q0), 3rd (q1),
	// 1st (q2) and 2nd (q3).
	b, err := example{
		q: [][]float64{{1}, {1}, {1}, {1}}, g: [][]float64{{3}, {2}, {1}},
		rel: recs("0", "1", 1.0, "1", "2", 1.0, "2", "0", 1.0, "3", "1", 1.0),
		cfg: func(c *retrieval.Config) { c.Similarity, c.WorstQueries = "dot", 3 },
	}.run(t)
	if err != nil {
		t.Fatal(err)
	}
	w := b.ExtractorResults[0].Forward.Diagnostics.WorstQueries
	var ids []string
	for _, r := range w {
		ids = append(ids, r.QueryID)
	}
	// ndcg@1: q0 0, q1 0, q2 1, q3 0 → ascending, stable: q0, q1, q3.
	if strings.Join(ids, ",") != "0,1,3" {
		t.Errorf("worst queries %v", ids)
	}
	if v, _ := w[1].Metrics.Get("mrr"); v != 1.0/3 {
		t.Errorf("worst row carries metrics: mrr %v", v)
	}
	rep, err := b.MarshalReport()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rep), `"query_id": "1"`) {
		t.Error("worst query rows must carry query_id")
	}
}

func TestDuplicateBackboneNames(t *testing.T) {
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: retrieval.Embeddings(mat(t, [][]float64{{1}})), Gallery: retrieval.Embeddings(mat(t, [][]float64{{1}})),
		Identity: retrieval.Ephemeral(),
	}, recs("0", "0", 1.0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), ds, retrieval.DefaultConfig(), []Backbone{Precomputed("a"), Precomputed("a")}, Options{RunDepth: -1})
	if !errors.Is(err, results.ErrDuplicateName) {
		t.Errorf("got %v", err)
	}
}
