package confval

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Int64 accepts an integer in any decoded representation; bools and
// fractional numbers are not integers.
func Int64(v any) (int64, bool) {
	switch t := v.(type) {
	case int:
		return int64(t), true
	case int32:
		return int64(t), true
	case int64:
		return t, true
	case uint:
		if uint64(t) <= math.MaxInt64 {
			return int64(t), true
		}
	case uint32:
		return int64(t), true
	case uint64:
		if t <= math.MaxInt64 {
			return int64(t), true
		}
	case json.Number:
		if n, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return n, true
		}
		if f, err := t.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), true
		}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t), true
		}
	}
	return 0, false
}

// Float accepts any decoded number.
func Float(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, true
	case float32:
		return float64(t), true
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	}
	if n, ok := Int64(v); ok {
		return float64(n), true
	}
	return 0, false
}

// Describe names a value's type and value for messages.
func Describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("bool %v", t)
	case string:
		return fmt.Sprintf("string %q", t)
	case json.Number, float64, float32, int, int32, int64, uint, uint32, uint64:
		return fmt.Sprintf("number %v", t)
	}
	return fmt.Sprintf("%T", v)
}

// SortedKeys returns m's keys in byte order, so the first error reported
// for a config object does not depend on map iteration.
func SortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
