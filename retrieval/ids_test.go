package retrieval

import (
	"slices"
	"strconv"
	"testing"
)

func rowIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return ids
}

func TestIDIndex(t *testing.T) {
	num := indexIDs(rowIDs(120))
	if num.byID != nil {
		t.Fatal("row-number IDs were hashed")
	}
	for _, tc := range []struct {
		id   string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"119", 119, true}, {"120", 0, false}, {"1000", 0, false},
		{"", 0, false}, {"00", 0, false}, {"07", 0, false}, {"-1", 0, false}, {"+1", 0, false},
		{"1 ", 0, false}, {"x", 0, false}, {"99999999999999999999999", 0, false},
	} {
		if got, ok := num.find(tc.id); ok != tc.ok || ok && got != tc.want {
			t.Errorf("find(%q) = %d, %v; want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
	// Other IDs, including row numbers out of order, use the map.
	for _, ids := range [][]string{{"a", "b"}, {"1", "0"}, {"0", "01"}, {"0", "1", "3"}} {
		x := indexIDs(ids)
		if x.byID == nil {
			t.Fatalf("%v: not hashed", ids)
		}
		for i, id := range ids {
			if got, ok := x.find(id); !ok || got != i {
				t.Errorf("%v: find(%q) = %d, %v", ids, id, got, ok)
			}
		}
	}
	if _, ok := indexIDs(nil).find("0"); ok {
		t.Error("found an ID of an empty endpoint")
	}
}

// The parsed index answers every ID as the map of the same IDs does.
func FuzzIDIndex(f *testing.F) {
	for _, s := range []string{"0", "12", "012", "", "9", "10", "-0", "1e3"} {
		f.Add(s, uint16(11))
	}
	f.Fuzz(func(t *testing.T, id string, n uint16) {
		ids := rowIDs(int(n % 2000))
		m := make(map[string]int, len(ids))
		for i, s := range ids {
			m[s] = i
		}
		want, wok := m[id]
		got, ok := indexIDs(ids).find(id)
		if ok != wok || got != want && ok {
			t.Fatalf("find(%q) with %d rows = %d, %v; map says %d, %v", id, len(ids), got, ok, want, wok)
		}
	})
}

func TestRowNumberIDs(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, 12345, 100000, 100001} {
		got := rowNumberIDs(n)
		if want := rowIDs(n); len(got) != n || !slices.Equal(got, want) {
			t.Errorf("n=%d: %q, want %q", n, got, want)
		}
		digits := 0
		for i := range n {
			digits += len(strconv.Itoa(i))
		}
		if d := rowNumberDigits(n); d != digits {
			t.Errorf("rowNumberDigits(%d) = %d, want %d", n, d, digits)
		}
	}
}

// The digit-by-digit counter gives every number's canonical decimal form,
// across every change of width, and rowNumbers accepts exactly the row
// numbers.
func TestDecimalCounter(t *testing.T) {
	var c decimalCounter
	for i := range 1_234_567 {
		if got := string(c.digits()); got != strconv.Itoa(i) {
			t.Fatalf("counter at %d reads %q", i, got)
		}
		c.inc()
	}
	ids := rowIDs(1001)
	if !rowNumbers(ids) {
		t.Error("row numbers not recognised")
	}
	for _, i := range []int{0, 9, 10, 99, 1000} {
		bad := slices.Clone(ids)
		bad[i] += "0"
		if rowNumbers(bad) {
			t.Errorf("IDs with %q at row %d taken for row numbers", bad[i], i)
		}
	}
}
