package evaluate

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/report"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// reportBytes is the JSON report with the (run-dependent) timings zeroed,
// plus the TREC qrels export of the dataset.
func reportBytes(t *testing.T, ds *retrieval.Dataset, cfg retrieval.Config, depth int) []byte {
	t.Helper()
	b, err := Run(context.Background(), ds, cfg, []Backbone{Precomputed("x")}, Options{RunDepth: depth})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range b.ExtractorResults {
		r.Runtime = results.Runtime{}
	}
	out, err := b.MarshalReport()
	if err != nil {
		t.Fatal(err)
	}
	var q bytes.Buffer
	if err := report.TRECQrels(context.Background(), &q, ds.QueryIDs(), ds.GalleryIDs(), ds.EligibleOf); err != nil {
		t.Fatal(err)
	}
	return append(out, q.Bytes()...)
}

// Label runs with 1, 10 and 1,000 classes give the same JSON report (every
// metric, diagnostic, fingerprint, identity key and count) and the same
// written qrels whether relevance is held as class membership or as the
// materialised pairs (SPEC §2.7), with leave-one-out, extra exclusions,
// both directions, ties and run exports.
func TestLabelRunsEqualMaterialisedPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, nc := range []int{1, 10, 1000} {
		for _, loo := range []bool{false, true} {
			nq, ng, d := 100, 500, 4
			if loo {
				ng, nq = 300, 300
			}
			vals := func(n int) *matrix.Dense {
				v := make([]float64, n*d)
				for i := range v {
					v[i] = float64(r.IntN(5) - 2) // many exact ties
				}
				v[0] = 1
				m, _ := matrix.NewDense64(n, d, v)
				for i := range n { // no zero rows under cosine
					row := m.Float64Data()[i*d : (i+1)*d]
					row[i%d] += 3
				}
				return m
			}
			ids := func(p string, n int) []string {
				out := make([]string, n)
				for i := range out {
					out[i] = p + strconv.Itoa(i)
				}
				return out
			}
			gl := make([]string, ng)
			for i := range gl {
				gl[i] = "c" + strconv.Itoa(r.IntN(nc))
				if loo && i%2 == 1 {
					gl[i] = gl[i-1] // every item keeps a positive besides itself
				}
			}
			gl[2], gl[5], gl[4] = gl[1], gl[3], gl[3] // the exclusions below keep a positive
			cfg := retrieval.DefaultConfig()
			cfg.Ks = []int{1, 5, 100}
			cfg.PrimaryMetric = "ndcg@5"
			cfg.QueryBatchSize, cfg.GalleryBatchSize = 16, 64
			build := func(materialise bool) *retrieval.Dataset {
				var opts []retrieval.Option
				if materialise {
					opts = append(opts, retrieval.WithMaterialisedLabels())
				}
				var ds *retrieval.Dataset
				var err error
				if loo {
					g := vals(ng)
					opts = append(opts, retrieval.WithIdentity(retrieval.FromContent()),
						retrieval.WithExclusions([]retrieval.Pair{{QueryID: "g3", GalleryID: "g5"}}))
					ds, err = retrieval.NewLeaveOneOutDataset(retrieval.Embeddings(g), ids("g", ng), gl, opts...)
				} else {
					ql := make([]string, nq)
					for i := range ql {
						ql[i] = gl[r.IntN(ng)]
					}
					ql[0], ql[2] = gl[1], gl[3] // q0 loses one of two positives, q2 maybe a negative
					in := retrieval.DatasetInputs{Queries: retrieval.Embeddings(vals(nq)), Gallery: retrieval.Embeddings(vals(ng)),
						QueryIDs: ids("q", nq), GalleryIDs: ids("g", ng), Identity: retrieval.FromContent(),
						Exclusions: []retrieval.Pair{{QueryID: "q0", GalleryID: "g1"}, {QueryID: "q2", GalleryID: "g7"}}}
					ds, err = retrieval.NewDataset(in, retrieval.LabelRelevance(ql, gl), opts...)
				}
				if err != nil {
					t.Fatal(err)
				}
				return ds
			}
			seed := r.Uint64()
			r = rand.New(rand.NewPCG(seed, 1))
			implicit := build(false)
			r = rand.New(rand.NewPCG(seed, 1))
			explicit := build(true)
			if implicit.Classes() == nil || explicit.Classes() != nil {
				t.Fatal("representations not as requested")
			}
			if (implicit.CheckBidirectional() == nil) != (explicit.CheckBidirectional() == nil) {
				t.Fatal("bidirectional coverage differs")
			}
			if nc == 1 && implicit.CheckBidirectional() != nil {
				t.Fatal("one class must cover every gallery item")
			}
			for _, sim := range []string{retrieval.Cosine, retrieval.Dot, retrieval.SquaredL2} {
				for _, depth := range []int{-1, 3} {
					c := cfg.Clone()
					c.Similarity = sim
					c.Bidirectional = implicit.CheckBidirectional() == nil
					a, b := reportBytes(t, implicit, c, depth), reportBytes(t, explicit, c, depth)
					if !bytes.Equal(a, b) {
						t.Fatalf("%d classes, leave-one-out %v, %s, depth %d: reports differ\nimplicit %.600s\nexplicit %.600s", nc, loo, sim, depth, a, b)
					}
				}
			}
		}
	}
}
