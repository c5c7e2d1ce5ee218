package canonjson

import (
	"strings"
	"testing"
)

// mapMemo is a Memo in memory that counts its calls.
type mapMemo struct {
	sums            map[string]string
	lookups, stores int
}

func (m *mapMemo) LookupSum(k string) (string, bool) {
	m.lookups++
	s, ok := m.sums[k]
	return s, ok
}

func (m *mapMemo) StoreSum(k, s string) {
	m.stores++
	m.sums[k] = s
}

// triples is a keyed Array of [[0,0,1],…,[n−1,0,1]].
func triples(n int, key string) Array {
	return Array{N: n, Key: key, Elem: func(i int, w Writer) error {
		_, err := w.WriteString("[" + FormatNumber(float64(i)) + ",0,1]")
		return err
	}}
}

func TestHashMemo(t *testing.T) {
	m := &mapMemo{sums: map[string]string{}}
	value := func(n int, key, id string) map[string]any {
		return map[string]any{"relevance": triples(n, key), "dataset_identity_key": id, "ids": Strings([]string{"a", "b"})}
	}
	hash := func(v any) string {
		t.Helper()
		h, err := Hash(v)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	memo := func(v any) string {
		t.Helper()
		h, err := HashMemo(v, m)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// A miss hashes the full text and stores it; the same value then hits.
	v := value(3, "k3", "x")
	if got, want := memo(v), hash(v); got != want {
		t.Fatalf("miss: HashMemo = %s, Hash = %s", got, want)
	}
	if m.stores != 1 || len(m.sums) != 1 {
		t.Fatalf("miss stored %d entries (%d calls), want 1", len(m.sums), m.stores)
	}
	// Everything outside the keyed array is part of the memo key.
	w := value(3, "k3", "y")
	if got, want := memo(w), hash(w); got != want || len(m.sums) != 2 {
		t.Fatalf("other identity key: HashMemo = %s, Hash = %s, %d entries", got, want, len(m.sums))
	}
	// So is the array's Key (here the caller's promise is kept: k4 names
	// four triples).
	u := value(4, "k4", "x")
	if got, want := memo(u), hash(u); got != want || len(m.sums) != 3 {
		t.Fatalf("other array key: HashMemo = %s, Hash = %s, %d entries", got, want, len(m.sums))
	}
	// A hit is read from the memo: a planted sum comes back as it is, and
	// the array is not encoded.
	planted := strings.Repeat("ab", 32)
	for k := range m.sums {
		m.sums[k] = planted
	}
	stores := m.stores
	encoded := false
	spy := Array{N: 3, Key: "k3", Elem: func(i int, w Writer) error { encoded = true; return nil }}
	if got := memo(map[string]any{"relevance": spy, "dataset_identity_key": "x", "ids": Strings([]string{"a", "b"})}); got != planted || encoded || m.stores != stores {
		t.Fatalf("hit: HashMemo = %s (encoded %v, %d stores), want the planted %s", got, encoded, m.stores-stores, planted)
	}
	// A damaged memo value is ignored and replaced.
	for k := range m.sums {
		m.sums[k] = "not a sum"
	}
	if got, want := memo(v), hash(v); got != want || m.sums[firstKey(m.sums, want)] != want {
		t.Fatalf("damaged entry: HashMemo = %s, Hash = %s", got, want)
	}
	// Values without a keyed array never touch the memo.
	lookups, stores := m.lookups, m.stores
	plain := map[string]any{"relevance": triples(3, ""), "ids": []any{"a"}}
	if got, want := memo(plain), hash(plain); got != want || m.lookups != lookups || m.stores != stores {
		t.Fatalf("unkeyed: HashMemo = %s, Hash = %s, memo calls %d/%d", got, want, m.lookups-lookups, m.stores-stores)
	}
	// No memo: plain Hash.
	if got, err := HashMemo(v, nil); err != nil || got != hash(v) {
		t.Fatalf("nil memo: %s, %v", got, err)
	}
	// A NUL byte in a key could make two texts share a memo key.
	if _, err := HashMemo(value(3, "k\x003", "x"), m); err == nil {
		t.Fatal("a key with a NUL byte was accepted")
	}
}

func firstKey(m map[string]string, v string) string {
	for k, x := range m {
		if x == v {
			return k
		}
	}
	return ""
}
