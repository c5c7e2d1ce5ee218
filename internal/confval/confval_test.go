package confval

import (
	"encoding/json"
	"testing"
)

func TestInt64AndFloat(t *testing.T) {
	for _, c := range []struct {
		v  any
		n  int64
		ok bool
	}{{3, 3, true}, {int64(-2), -2, true}, {json.Number("7"), 7, true}, {json.Number("7.0"), 7, true}, {4.0, 4, true},
		{4.5, 0, false}, {json.Number("1e400"), 0, false}, {true, 0, false}, {"3", 0, false}, {nil, 0, false}} {
		n, ok := Int64(c.v)
		if ok != c.ok || (ok && n != c.n) {
			t.Errorf("Int64(%#v) = %d, %v", c.v, n, ok)
		}
	}
	if f, ok := Float(json.Number("0.25")); !ok || f != 0.25 {
		t.Errorf("Float = %v %v", f, ok)
	}
	if f, ok := Float(3); !ok || f != 3 {
		t.Errorf("Float(int) = %v %v", f, ok)
	}
	if Describe("x") != `string "x"` || Describe(nil) != "null" || Describe(json.Number("2")) != "number 2" {
		t.Error("Describe")
	}
	if k := SortedKeys(map[string]any{"b": 1, "a": 2}); k[0] != "a" || k[1] != "b" {
		t.Error("SortedKeys")
	}
}
