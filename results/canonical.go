package results

import (
	"slices"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
)

// CanonicalRows is the canonical JSON (RFC 8785) array of per-query rows,
// each the object QueryRow.MarshalJSON writes, encoded from the rows as
// they are: a bidirectional score over a large gallery has a row per
// gallery row, which as a tree of JSON values costs far more than its
// text. Nil rows are null, as encoding/json writes them.
func CanonicalRows(rows []QueryRow) any {
	if rows == nil {
		return nil
	}
	var c rowKeys
	return canonjson.Array{N: len(rows), Elem: func(i int, w canonjson.Writer) error { return c.write(w, rows[i]) }}
}

// rowKeys caches the canonical member order of the last key set seen (the
// rows of one result share theirs).
type rowKeys struct {
	keys  []string // the metric keys the order is for
	order []int    // member order: -1 is query_id, j ≥ 0 metric j
}

func (c *rowKeys) write(w canonjson.Writer, r QueryRow) error {
	if !slices.Equal(c.keys, r.Metrics.Keys) || c.order == nil {
		c.keys = r.Metrics.Keys
		names := append([]string{"query_id"}, r.Metrics.Keys...)
		sorted := slices.Clone(names)
		canonjson.SortKeys(sorted)
		c.order = c.order[:0]
		for _, k := range sorted {
			c.order = append(c.order, slices.Index(names, k)-1)
		}
	}
	_ = w.WriteByte('{')
	for n, j := range c.order {
		if n > 0 {
			_ = w.WriteByte(',')
		}
		var err error
		if j < 0 {
			_ = canonjson.EncodeString(w, "query_id")
			_ = w.WriteByte(':')
			err = canonjson.EncodeString(w, r.QueryID)
		} else {
			_ = canonjson.EncodeString(w, r.Metrics.Keys[j])
			_ = w.WriteByte(':')
			err = canonjson.EncodeFloat(w, r.Metrics.Vals[j])
		}
		if err != nil {
			return err
		}
	}
	return w.WriteByte('}')
}

// CanonicalPerQuery is the canonical JSON of PerQueryOf(rows) (the
// columnar block), each column written from the rows as it is encoded:
// the columns are never built (a score over a large gallery has a row per
// gallery row in its reverse direction).
func CanonicalPerQuery(rows []QueryRow) any {
	metrics := map[string]any{}
	if len(rows) > 0 {
		for j, k := range rows[0].Metrics.Keys {
			metrics[k] = canonjson.Array{N: len(rows), Elem: func(i int, w canonjson.Writer) error {
				return canonjson.EncodeFloat(w, rows[i].Metrics.Vals[j])
			}}
		}
	}
	ids := canonjson.Array{N: len(rows), Elem: func(i int, w canonjson.Writer) error {
		return canonjson.EncodeString(w, rows[i].QueryID)
	}}
	return map[string]any{"query_ids": ids, "metrics": metrics}
}
