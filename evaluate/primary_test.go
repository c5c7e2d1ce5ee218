package evaluate

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// TestPrimaryMetricIsTheScore runs every reportable metric as the primary
// metric (SPEC §3.1): score = metrics[primary] in both directions,
// primary_score follows, the ranking is by it, the worst queries are sorted
// by it, the comparison compares it first, and the report verifies and
// survives a JSON round trip (what compare and from-artifacts read).
func TestPrimaryMetricIsTheScore(t *testing.T) {
	const nq, ng, dim = 9, 14, 4
	rng := rand.New(rand.NewPCG(7, 27))
	randMat := func(rows int) [][]float64 {
		out := make([][]float64, rows)
		for i := range out {
			out[i] = make([]float64, dim)
			for j := range out[i] {
				out[i][j] = rng.NormFloat64()
			}
		}
		return out
	}
	q, g := randMat(nq), randMat(ng)
	var records []retrieval.Record
	for i := range nq {
		for j := range 3 {
			records = append(records, retrieval.Record{QueryID: strconv.Itoa(i), GalleryID: strconv.Itoa((i*5 + j*3) % ng), Grade: float64(1 + (i+j)%3)})
		}
	}
	// Three backbones of different quality: the data, a noisy copy, noise.
	noisy := func(m [][]float64, scale float64) [][]float64 {
		out := make([][]float64, len(m))
		for i := range m {
			out[i] = make([]float64, dim)
			for j := range m[i] {
				out[i][j] = m[i][j] + scale*rng.NormFloat64()
			}
		}
		return out
	}
	sides := map[string][2][][]float64{
		"clean": {q, g}, "noisy": {noisy(q, 0.8), noisy(g, 0.8)}, "random": {randMat(nq), randMat(ng)},
	}
	backbone := func(name string) Backbone {
		return Backbone{Name: name, Type: "custom", Encode: func(_ context.Context, side string, _ retrieval.Items) (matrix.Matrix, error) {
			if side == "query" {
				return mat(t, sides[name][0]), nil
			}
			return mat(t, sides[name][1]), nil
		}}
	}
	ks := []int{1, 3, 5}
	for _, bidir := range []bool{false, true} {
		for _, primary := range retrieval.PrimaryMetrics(ks) {
			t.Run(primary+map[bool]string{false: "", true: "/bidirectional"}[bidir], func(t *testing.T) {
				cfg := retrieval.DefaultConfig()
				cfg.Ks, cfg.PrimaryMetric, cfg.Bidirectional, cfg.WorstQueries = ks, primary, bidir, nq
				if err := cfg.Validate(); err != nil {
					t.Fatal(err)
				}
				ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
					Queries: retrieval.Embeddings(mat(t, q)), Gallery: retrieval.Embeddings(mat(t, g)),
					Identity: retrieval.FromContent(),
				}, retrieval.RecordRelevance(records))
				if err != nil {
					t.Fatal(err)
				}
				b, err := Run(context.Background(), ds, cfg, []Backbone{backbone("random"), backbone("clean"), backbone("noisy")}, Options{RunDepth: -1})
				if err != nil {
					t.Fatal(err)
				}
				check := func(b *results.Benchmark) {
					t.Helper()
					if err := b.Verify(); err != nil {
						t.Fatalf("Verify: %v", err)
					}
					if b.Metadata.RetrievalConfig.PrimaryMetric != primary {
						t.Errorf("retrieval_config.primary_metric = %q", b.Metadata.RetrievalConfig.PrimaryMetric)
					}
					for _, r := range b.ExtractorResults {
						want := 0.0
						for _, s := range []*results.ScoreResult{r.Forward, r.Reverse} {
							if s == nil {
								continue
							}
							v, ok := s.Metrics.Get(primary)
							if !ok || s.Score != v || s.PrimaryMetric != primary {
								t.Errorf("%s: score %v, metrics[%s] = %v (%v), primary_metric %q", r.Name, s.Score, primary, v, ok, s.PrimaryMetric)
							}
							want += v
						}
						if bidir {
							want /= 2
						}
						if !near(r.PrimaryScore, want) {
							t.Errorf("%s: primary_score %v, want %v", r.Name, r.PrimaryScore, want)
						}
						worst := r.Forward.Diagnostics.WorstQueries
						if len(worst) != nq {
							t.Errorf("%s: %d worst queries", r.Name, len(worst))
						}
						if !sort.SliceIsSorted(worst, func(i, j int) bool {
							a, _ := worst[i].Metrics.Get(primary)
							c, _ := worst[j].Metrics.Get(primary)
							return a < c
						}) {
							t.Errorf("%s: worst queries not ascending by %s", r.Name, primary)
						}
					}
					if len(b.Ranking) != 3 {
						t.Fatalf("ranking %v", b.Ranking)
					}
					for i := 1; i < len(b.Ranking); i++ {
						if b.Ranking[i-1].PrimaryScore < b.Ranking[i].PrimaryScore {
							t.Errorf("ranking not by %s: %v", primary, b.Ranking)
						}
					}
					if b.Comparison == nil || len(b.Comparison.Settings.Metrics) == 0 || b.Comparison.Settings.Metrics[0] != primary ||
						b.Comparison.Blocks[0].Metric != primary {
						t.Errorf("comparison does not lead with %s: %+v", primary, b.Comparison)
					}
				}
				check(b)
				data, err := json.Marshal(b)
				if err != nil {
					t.Fatal(err)
				}
				back, err := results.ReadReport(data)
				if err != nil {
					t.Fatal(err)
				}
				check(back)
			})
		}
	}
}
