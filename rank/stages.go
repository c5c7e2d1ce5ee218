package rank

import (
	"fmt"

	"github.com/vertebrae-eval/vertebrae/memory"
)

// EligibleRows appends the eligible positives of query q (SPEC §4.3: its
// stored positives less its exclusions), as ascending global gallery rows,
// to buf[:0]. Label classes are read in place, never materialised.
func (p Problem) EligibleRows(q int, buf []int) []int {
	buf = buf[:0]
	var ex []int
	if p.Exclusions != nil {
		ex = p.Exclusions[q]
	}
	keep := func(g int) bool {
		for len(ex) > 0 && ex[0] < g {
			ex = ex[1:]
		}
		return len(ex) == 0 || ex[0] != g
	}
	if p.Classes != nil {
		for _, g := range p.Classes.Members(int(p.Classes.Query[q])) {
			if keep(int(g)) {
				buf = append(buf, int(g))
			}
		}
		return buf
	}
	for _, x := range p.Relevance[q] {
		if keep(x.Index) {
			buf = append(buf, x.Index)
		}
	}
	return buf
}

// AssemblePositiveScores is the positive scores of problem p (ng gallery
// rows) from the positives stages of its len(stages) gallery shards of the
// layout: stage i holds the scores of the eligible positives among shard
// i's rows, in query order, then gallery order (the Scores of
// ScoreWindowPositives). The positions come from the relevance, so a stage
// need not list them; a stage whose length differs from its rows' eligible
// positives is an error naming the shard. The result equals
// ScorePositives(p) bit for bit.
func AssemblePositiveScores(p Problem, ng int, layout ShardLayout, stages [][]float64) (*PositiveScores, error) {
	n := len(stages)
	if n == 0 {
		return nil, fmt.Errorf("rank: no positives stages to assemble")
	}
	nq := len(p.QueryIDs)
	if p.Classes != nil {
		nq = len(p.Classes.Query)
	} else if p.Relevance != nil {
		nq = len(p.Relevance)
	}
	total := 0
	for _, s := range stages {
		total += len(s)
	}
	out := &PositiveScores{Offsets: make([]int, nq+1), Index: make([]int, 0, total), Scores: make([]float64, 0, total)}
	memory.AdviseHugePages(out.Index[:total])
	memory.AdviseHugePages(out.Scores[:total])
	// his[i] is one past shard i's last row (contiguous layout).
	his := make([]int, n)
	for i := range his {
		_, his[i] = Shard{Index: i, Total: n}.Range(ng)
	}
	next := make([]int, n) // per stage, its next unread score (past its end: counting only)
	short := false
	var rows []int
	for q := range nq {
		rows = p.EligibleRows(q, rows)
		i := 0
		for _, g := range rows {
			if layout == Modulo {
				i = g % n
			} else {
				for i < n-1 && g >= his[i] {
					i++
				}
			}
			if next[i] >= len(stages[i]) {
				short = true // keep counting, to report how many the stage should hold
			} else if !short {
				out.Index, out.Scores = append(out.Index, g), append(out.Scores, stages[i][next[i]])
			}
			next[i]++
		}
		out.Offsets[q+1] = len(out.Index)
	}
	for i, k := range next {
		if k != len(stages[i]) {
			return nil, &StageLengthError{Shard: i, Total: n, Scores: len(stages[i]), Eligible: k}
		}
	}
	return out, nil
}

// StageLengthError reports a positives stage whose number of scores is not
// the number of eligible positives among its shard's rows (a stage of
// another relevance, or a damaged one).
type StageLengthError struct {
	Shard, Total     int // the gallery shard
	Scores, Eligible int // what the stage lists, what the relevance gives its rows
}

func (e *StageLengthError) Error() string {
	return fmt.Sprintf("the positives stage of gallery shard %d of %d lists %d scores, the relevance gives its rows %d eligible positives", e.Shard, e.Total, e.Scores, e.Eligible)
}
