package results

// PerQuery is the columnar per-query block of a score result (SPEC §6.6),
// written as `per_query` in the JSON report:
//
//	{"query_ids": ["q1", "q2", …], "metrics": {"mrr": [1, 0.5, …], …}}
//
// QueryIDs come once, in query index order; Metrics holds one array per
// metric key, aligned with QueryIDs. The arrays are what significance tests
// (SPEC §13) and `retrieval compare` read back.
type PerQuery struct {
	QueryIDs []string             `json:"query_ids"`
	Metrics  map[string][]float64 `json:"metrics"`
}

// PerQueryOf turns per-query rows (one per query, every row with the same
// keys) into the columnar form.
func PerQueryOf(rows []QueryRow) *PerQuery {
	p := &PerQuery{QueryIDs: make([]string, len(rows)), Metrics: map[string][]float64{}}
	if len(rows) == 0 {
		return p
	}
	keys := rows[0].Metrics.Keys
	cols := make([][]float64, len(keys))
	for j := range keys {
		cols[j] = make([]float64, len(rows))
	}
	for i, r := range rows {
		p.QueryIDs[i] = r.QueryID
		for j := range keys {
			cols[j][i] = r.Metrics.Vals[j]
		}
	}
	for j, k := range keys {
		p.Metrics[k] = cols[j]
	}
	return p
}

// Column returns the per-query values of metric key in query order
// (ok=false when the result holds no per-query values for it).
func (s *ScoreResult) Column(key string) ([]float64, bool) {
	if s == nil || len(s.PerQuery) == 0 {
		return nil, false
	}
	j := -1
	for i, k := range s.PerQuery[0].Metrics.Keys {
		if k == key {
			j = i
			break
		}
	}
	if j < 0 {
		return nil, false
	}
	out := make([]float64, len(s.PerQuery))
	for i, r := range s.PerQuery {
		out[i] = r.Metrics.Vals[j]
	}
	return out, true
}
