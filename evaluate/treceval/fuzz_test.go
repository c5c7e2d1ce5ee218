package treceval

import (
	"math"
	"testing"

	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// FuzzParseRun feeds arbitrary bytes to the run parser and checks that it
// never panics, reports every rejection as a line error of the run file, and
// agrees bit for bit with the reference evaluator on what it accepts.
func FuzzParseRun(f *testing.F) {
	for _, s := range []string{
		"a Q0 x 1 0.5 t\na Q0 y 2 0.5 t\nb Q0 z 1 -1e-3 t\n",
		"# c\n\na\tQ0\ty\t3\t2\tt\r\na Q0 x 1 2 t\r\n",
		"a Q0 x 1 2 t\nb Q0 z 1 1 t\na Q0 y 1 1 t\n",
		"a Q0 x 1 2 t\na Q0 x 2 1 t\n",
		"a Q0 x 1 nan t\n",
		"a Q0 x 1.0 1 t\n",
		"a Q0 x 1 0x1p3 t\n",
		"a\u00a0Q0 x 1 1 t\n",
		"\ufeffa Q0 x 1 1 t\n",
		"c Q0 w 1 1 t\nunknown Q0 x 1 1 other\n",
		"a Q0 y 1 1 t\na Q0 x 1 1 t\na Q0 q 0 1 t\n",
	} {
		f.Add([]byte(s))
	}
	q := mustQrels(f, "a 0 x 1\na 0 y 2\na 0 q 0\nb 0 z 1\nb 0 v 3\nc 0 w 0\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ties := range []Ties{TiesTREC, TiesRank} {
			res := checkAgainstReference(t, q, string(data), opts([]int{1, 2, 10}, "ndcg@2", retrieval.GainExponential, ties))
			if res == nil {
				continue
			}
			for _, row := range res.Benchmark.ExtractorResults[0].Forward.PerQuery {
				for i, v := range row.Metrics.Vals {
					if math.IsNaN(v) || v < 0 || v > 1 {
						t.Fatalf("query %q: %s = %v", row.QueryID, row.Metrics.Keys[i], v)
					}
				}
			}
			if _, err := res.Benchmark.MarshalReport(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
