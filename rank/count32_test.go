package rank

import (
	"context"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// naive32 is naive for the float32 protocol's dot similarity: every pair
// scored by the float32 row definition, all candidates sorted by the tie
// rule.
func naive32(p Problem) []QueryResult {
	nq, ng, d := p.Queries.Rows(), p.Gallery.Rows(), p.Queries.Cols()
	row := make([]float64, d)
	to32 := func(n int, get func(int, []float64)) [][]float32 {
		out := make([][]float32, n)
		for i := range out {
			get(i, row)
			out[i] = make([]float32, d)
			for k, v := range row {
				out[i][k] = float32(v)
			}
		}
		return out
	}
	qs, gs := to32(nq, p.Queries.RowFloat64), to32(ng, p.Gallery.RowFloat64)
	out := make([]QueryResult, nq)
	for i := range nq {
		excluded := map[int]bool{}
		for _, g := range p.Exclusions[i] {
			excluded[g] = true
		}
		type cand struct {
			g int
			s float64
		}
		var cs []cand
		for j := range ng {
			if !excluded[j] {
				cs = append(cs, cand{j, float64(kernel.DotRow32(qs[i], gs[j])) + 0})
			}
		}
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].s > cs[b].s })
		rank, score := map[int]int{}, map[int]float64{}
		for r, c := range cs {
			rank[c.g], score[c.g] = r+1, c.s
		}
		res := &out[i]
		isPos := map[int]bool{}
		for _, x := range retrieval.EligiblePositives(p.Relevance[i], p.Exclusions[i]) {
			res.Positives = append(res.Positives, x)
			res.Ranks = append(res.Ranks, rank[x.Index])
			res.Scores = append(res.Scores, score[x.Index])
			isPos[x.Index] = true
		}
		for _, c := range cs {
			if !isPos[c.g] {
				res.NearestNegative, res.HasNegative = c.s, true
				break
			}
		}
	}
	return out
}

// The float32 protocol's vectorised counting (countRun32) gives the ranks,
// scores and nearest negatives of sorting everything, with many exact ties
// (integer data) at the positives, one or several positives, and runs long
// enough for the vector loop and its tail.
func TestFloat32CountingMatchesSortEverything(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for trial := range 24 {
		ties := trial%2 == 1
		p := randomProblem(r, 1+r.IntN(7), 20+r.IntN(400), 1+r.IntN(9), ties)
		if trial%3 == 0 { // one positive per query
			for i := range p.Relevance {
				p.Relevance[i] = p.Relevance[i][len(p.Relevance[i])-1:]
			}
		}
		want := naive32(p)
		for _, blocks := range [][2]int{{1, 1}, {3, 37}, {128, 10000}} {
			got, err := Score(context.Background(), p, Options{Similarity: Dot, Precision: Float32, QueryBatch: blocks[0], GalleryBatch: blocks[1], Threads: 1 + trial%2})
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				g := got[i]
				g.Top = nil
				if !reflect.DeepEqual(g, want[i]) {
					t.Fatalf("trial %d blocks %v query %d:\n got %+v\nwant %+v", trial, blocks, i, g, want[i])
				}
			}
		}
	}
}
