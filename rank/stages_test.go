package rank

import (
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/retrieval"
)

func TestAssemblePositiveScores(t *testing.T) {
	t.Parallel()
	// Two queries over 6 gallery rows. Query 0: class 0 = rows {0, 2, 3, 5}
	// less the excluded row 3; query 1: class 1 = rows {1, 4}.
	classes := retrieval.NewClasses([]int32{0, 1}, []int32{0, 1, 0, 0, 1, 0})
	p := Problem{Classes: classes, Exclusions: [][]int{{3}, {}}}
	cases := []struct {
		name   string
		layout ShardLayout
		stages [][]float64
		want   []float64 // scores in query, then gallery order
		err    string
	}{
		// Contiguous 3 shards: rows {0,1}, {2,3}, {4,5}.
		{"contiguous", Contiguous, [][]float64{{0.0, 1.1}, {0.2}, {0.5, 1.4}}, []float64{0.0, 0.2, 0.5, 1.1, 1.4}, ""},
		// Modulo 3 shards: rows {0,3}, {1,4}, {2,5}.
		{"modulo", Modulo, [][]float64{{0.0}, {1.1, 1.4}, {0.2, 0.5}}, []float64{0.0, 0.2, 0.5, 1.1, 1.4}, ""},
		{"short stage", Contiguous, [][]float64{{0.0, 1.1}, {}, {0.5, 1.4}}, nil, "gallery shard 1 of 3 lists 0 scores, the relevance gives its rows 1 eligible positives"},
		{"long stage", Modulo, [][]float64{{0.0, 9}, {1.1, 1.4}, {0.2, 0.5}}, nil, "gallery shard 0 of 3 lists 2 scores, the relevance gives its rows 1 eligible positives"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pos, err := AssemblePositiveScores(p, 6, c.layout, c.stages)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pos.Offsets, []int{0, 3, 5}) || !slices.Equal(pos.Index, []int{0, 2, 5, 1, 4}) || !slices.Equal(pos.Scores, c.want) {
				t.Fatalf("got offsets %v index %v scores %v", pos.Offsets, pos.Index, pos.Scores)
			}
		})
	}
}

func TestEligibleRowsExplicit(t *testing.T) {
	t.Parallel()
	p := Problem{Relevance: [][]retrieval.Positive{{{Index: 1, Grade: 2}, {Index: 4, Grade: 1}, {Index: 7, Grade: 1}}}, Exclusions: [][]int{{0, 4, 9}}}
	if got := p.EligibleRows(0, nil); !slices.Equal(got, []int{1, 7}) {
		t.Fatalf("EligibleRows = %v, want [1 7]", got)
	}
}
