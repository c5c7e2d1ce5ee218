package report

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/internal/numfmt"
	"github.com/vertebrae-eval/vertebrae/results"
)

// CSV writes the per-query metrics export of SPEC §5.7: one row per
// (result in run order, direction forward then reverse, query in index
// order), numbers formatted as in the JSON report.
func CSV(w io.Writer, b *results.Benchmark) error {
	keys := csvKeys(b)
	bw := bufio.NewWriter(w)
	var line []byte
	line = append(line, "extractor,direction,query_id"...)
	for _, k := range keys {
		line = append(line, ',')
		line = appendCSVField(line, k)
	}
	line = append(line, '\n')
	if _, err := bw.Write(line); err != nil {
		return err
	}
	for _, r := range b.ExtractorResults {
		for _, d := range []struct {
			name string
			res  *results.ScoreResult
		}{{"forward", r.Forward}, {"reverse", r.Reverse}} {
			if d.res == nil {
				continue
			}
			for _, row := range d.res.PerQuery {
				// All results share one configuration, so a row with other
				// keys is a bug; refuse instead of writing shifted columns.
				if !slices.Equal(row.Metrics.Keys, keys) || len(row.Metrics.Vals) != len(keys) {
					return fmt.Errorf("CSV export: result %s, %s query %s: metric keys %v differ from the header %v",
						msgfmt.Quote(r.Name), d.name, msgfmt.Quote(row.QueryID), row.Metrics.Keys, keys)
				}
				line = appendCSVField(line[:0], r.Name)
				line = append(line, ',')
				line = append(line, d.name...)
				line = append(line, ',')
				line = appendCSVField(line, row.QueryID)
				for i, v := range row.Metrics.Vals {
					if !finite(v) {
						return fmt.Errorf("CSV export: result %s, %s query %s: non-finite %s %v",
							msgfmt.Quote(r.Name), d.name, msgfmt.Quote(row.QueryID), keys[i], v)
					}
					line = append(line, ',')
					line = numfmt.AppendJSON(line, v, 64)
				}
				line = append(line, '\n')
				if _, err := bw.Write(line); err != nil {
					return err
				}
			}
		}
	}
	return bw.Flush()
}

// csvKeys is the metric column order: the first result's forward metric
// keys (canonical order), else its first per-query row's, else mrr,map.
func csvKeys(b *results.Benchmark) []string {
	if len(b.ExtractorResults) > 0 {
		if f := b.ExtractorResults[0].Forward; f != nil {
			if len(f.Metrics.Keys) > 0 {
				return f.Metrics.Keys
			}
			if len(f.PerQuery) > 0 {
				return f.PerQuery[0].Metrics.Keys
			}
		}
	}
	return []string{"mrr", "map"}
}

// appendCSVField quotes s only when it holds ',', '"', CR or LF (SPEC
// §5.7); encoding/csv would also quote leading spaces, which the contract
// does not allow.
func appendCSVField(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(s, `"`, `""`)...)
	return append(b, '"')
}
