package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/numfmt"
)

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

// appendPerQueryIndented appends the columnar block of rows in the
// report's layout, as encoding/json with a 2-space indent writes it when
// the block's key line is indented by `indent` spaces:
// {"metrics": {<sorted keys>: […]}, "query_ids": […]}, one array element
// per line, numbers in encoding/json's float format (internal/numfmt).
func appendPerQueryIndented(b []byte, rows []QueryRow, indent int) ([]byte, error) {
	var keys []string
	if len(rows) > 0 {
		keys = rows[0].Metrics.Keys
	}
	for _, r := range rows {
		if len(r.Metrics.Keys) != len(keys) || len(r.Metrics.Vals) != len(keys) {
			return nil, fmt.Errorf("query %q: %d metric values, want %d", r.QueryID, len(r.Metrics.Vals), len(keys))
		}
		for j, k := range r.Metrics.Keys {
			if k != keys[j] {
				return nil, fmt.Errorf("query %q: metric keys differ from query %q's", r.QueryID, rows[0].QueryID)
			}
		}
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, c int) bool { return keys[order[a]] < keys[order[c]] })
	nl := func(b []byte, depth int) []byte {
		b = append(b, '\n')
		for i := 0; i < indent+2*depth; i++ {
			b = append(b, ' ')
		}
		return b
	}
	b = append(b, '{')
	b = nl(b, 1)
	b = append(b, `"metrics": {`...)
	if len(keys) == 0 {
		b = b[:len(b)-1]
		b = append(b, "{}"...)
	}
	for n, j := range order {
		if n > 0 {
			b = append(b, ',')
		}
		b = nl(b, 2)
		b = appendJSONString(b, keys[j])
		b = append(b, ": ["...)
		if len(rows) == 0 {
			b = append(b, ']')
			continue
		}
		for i, r := range rows {
			if i > 0 {
				b = append(b, ',')
			}
			b = nl(b, 3)
			v := r.Metrics.Vals[j]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("query %q: non-finite %s %v", r.QueryID, keys[j], v)
			}
			b = numfmt.AppendJSON(b, v, 64)
		}
		b = nl(b, 2)
		b = append(b, ']')
	}
	if len(keys) > 0 {
		b = nl(b, 1)
		b = append(b, '}')
	}
	b = append(b, ',')
	b = nl(b, 1)
	b = append(b, `"query_ids": [`...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = nl(b, 2)
		b = appendJSONString(b, r.QueryID)
	}
	if len(rows) > 0 {
		b = nl(b, 1)
	}
	b = append(b, ']')
	b = nl(b, 0)
	return append(b, '}'), nil
}

// appendJSONString writes s as a JSON string. Printable ASCII without '"'
// and '\' is copied; anything else goes through encoding/json so the
// escaping is exactly the report encoder's.
func appendJSONString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Invalid UTF-8 becomes U+FFFD as the report's decode-and-re-encode
	// pass makes it (the encoder alone would write the escape \ufffd).
	_ = enc.Encode(strings.ToValidUTF8(s, "\uFFFD")) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
