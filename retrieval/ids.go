package retrieval

import "strconv"

// idIndex finds the row of an endpoint ID. IDs that are the decimal row
// numbers 0, 1, …, n-1 — what an endpoint without IDs gets (SPEC §2.2) —
// are parsed instead of hashed: building a map of a large gallery's IDs
// costs more than the few lookups relevance and exclusions make.
type idIndex struct {
	byID map[string]int // nil when the IDs are the row numbers
	rows int
}

func indexIDs(ids []string) idIndex {
	if rowNumbers(ids) {
		return idIndex{rows: len(ids)}
	}
	m := make(map[string]int, len(ids))
	for i, id := range ids {
		m[id] = i
	}
	return idIndex{byID: m, rows: len(ids)}
}

// rowNumberIDs returns the IDs "0", "1", …, of n rows, each a substring of
// one string of all their digits: a gallery of 10^8 rows gets its IDs from
// two allocations, not 10^8.
func rowNumberIDs(n int) []string {
	ids := make([]string, n)
	if n == 0 {
		return ids
	}
	digits := make([]byte, 0, n*len(strconv.Itoa(n-1)))
	ends := make([]int, n)
	for i := range n {
		digits = strconv.AppendInt(digits, int64(i), 10)
		ends[i] = len(digits)
	}
	all := string(digits)
	start := 0
	for i, end := range ends {
		ids[i] = all[start:end]
		start = end
	}
	return ids
}

// rowNumbers reports whether ids[i] is the canonical decimal form of i for
// every i.
func rowNumbers(ids []string) bool {
	var buf [20]byte
	for i, id := range ids {
		if string(strconv.AppendInt(buf[:0], int64(i), 10)) != id {
			return false
		}
	}
	return true
}

// find returns id's row.
func (x idIndex) find(id string) (int, bool) {
	if x.byID != nil {
		i, ok := x.byID[id]
		return i, ok
	}
	if id == "" || len(id) > 1 && id[0] == '0' { // row numbers have no leading zeros
		return 0, false
	}
	n := 0
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c < '0' || c > '9' || n > (x.rows-int(c-'0'))/10 { // n*10 + digit must stay below rows
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n < x.rows
}

// at returns the row of an ID known to be present.
func (x idIndex) at(id string) int {
	i, _ := x.find(id)
	return i
}
