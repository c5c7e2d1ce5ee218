package results

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/vertebrae-eval/vertebrae/metrics"
)

// ReadReport parses a JSON report (SPEC §5.4) back into a Benchmark, for
// `retrieval compare` (SPEC §6.6). Metric objects regain the canonical key
// order of their configuration's ks, and `per_query` blocks become the
// per-query rows again, so a report read back renders and compares as the
// run that wrote it. Unknown keys are ignored (a newer writer may add some).
func ReadReport(data []byte) (*Benchmark, error) {
	var b Benchmark
	if err := json.Unmarshal(data, &b); err != nil { // no Decoder: it would copy data
		return nil, fmt.Errorf("not a vertebrae JSON report: %w", err)
	}
	if b.SchemaVersion != 1 {
		return nil, fmt.Errorf("unsupported report schema_version %d (want 1)", b.SchemaVersion)
	}
	for i, r := range b.ExtractorResults {
		if r == nil || r.Forward == nil {
			return nil, fmt.Errorf("extractor_results[%d] has no forward score result", i)
		}
	}
	return &b, nil
}

// orderedKeys lists the keys of m: the canonical ones for ks that occur,
// then any others in byte order.
func orderedKeys[V any](m map[string]V, ks []int) []string {
	var keys []string
	for _, k := range metrics.Keys(ks) {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range m {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(keys, rest...)
}

// UnmarshalJSON reads a score result, its metrics in canonical order and
// its `per_query` block as rows.
func (s *ScoreResult) UnmarshalJSON(data []byte) error {
	type plain ScoreResult
	var aux struct {
		plain
		Metrics     map[string]float64 `json:"metrics"`
		Diagnostics struct {
			Diagnostics
			WorstQueries []map[string]json.RawMessage `json:"worst_queries"`
		} `json:"diagnostics"`
		PerQuery *PerQuery `json:"per_query"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*s = ScoreResult(aux.plain)
	ks := s.Metadata.Config.Ks
	s.Metrics = MetricObject{valuesOf(aux.Metrics, ks)}
	s.Diagnostics = aux.Diagnostics.Diagnostics
	s.Diagnostics.WorstQueries = []QueryRow{}
	for i, row := range aux.Diagnostics.WorstQueries {
		var id string
		vals := map[string]float64{}
		for k, raw := range row {
			var err error
			if k == "query_id" {
				err = json.Unmarshal(raw, &id)
			} else {
				var v float64
				err = json.Unmarshal(raw, &v)
				vals[k] = v
			}
			if err != nil {
				return fmt.Errorf("diagnostics.worst_queries[%d].%s: %w", i, k, err)
			}
		}
		s.Diagnostics.WorstQueries = append(s.Diagnostics.WorstQueries, QueryRow{QueryID: id, Metrics: valuesOf(vals, ks)})
	}
	s.PerQuery = nil
	if aux.PerQuery != nil {
		rows, err := aux.PerQuery.rows(ks)
		if err != nil {
			return err
		}
		s.PerQuery = rows
	}
	return nil
}

func valuesOf(m map[string]float64, ks []int) metrics.Values {
	keys := orderedKeys(m, ks)
	v := metrics.Values{Keys: keys, Vals: make([]float64, len(keys))}
	for i, k := range keys {
		v.Vals[i] = m[k]
	}
	return v
}

// rows converts the columnar block back to rows sharing one key slice.
func (p *PerQuery) rows(ks []int) ([]QueryRow, error) {
	keys := orderedKeys(p.Metrics, ks)
	n := len(p.QueryIDs)
	for _, k := range keys {
		if len(p.Metrics[k]) != n {
			return nil, fmt.Errorf("per_query: metric %q has %d values for %d query IDs", k, len(p.Metrics[k]), n)
		}
	}
	rows := make([]QueryRow, n)
	vals := make([]float64, n*len(keys))
	for i, id := range p.QueryIDs {
		v := vals[i*len(keys) : (i+1)*len(keys) : (i+1)*len(keys)]
		for j, k := range keys {
			v[j] = p.Metrics[k][i]
		}
		rows[i] = QueryRow{QueryID: id, Metrics: metrics.Values{Keys: keys, Vals: v}}
	}
	return rows, nil
}
