package retrieval

import (
	"unsafe"

	"github.com/vertebrae-eval/vertebrae/memory"
)

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
// two allocations, not 10^8. The digits are written once, into the
// string's own storage (every extraction shard of a large gallery builds
// them, so copies and side tables cost).
func rowNumberIDs(n int) []string {
	ids := make([]string, n)
	if n == 0 {
		return ids
	}
	// Fresh pages cost a fault each (about 6 µs on a virtual machine):
	// huge pages make a million IDs' 23 MB a dozen faults, not 6000.
	memory.AdviseHugePages(ids)
	digits := make([]byte, 0, rowNumberDigits(n))
	memory.AdviseHugePages(digits[:cap(digits)])
	var c decimalCounter
	for range n {
		digits = append(digits, c.digits()...)
		c.inc()
	}
	// digits is never written again: the string shares its storage.
	all := unsafe.String(unsafe.SliceData(digits), len(digits))
	start, width, next := 0, 1, 10 // next: the first row number one digit wider
	for i := range ids {
		if i == next {
			width++
			next *= 10
		}
		ids[i] = all[start : start+width]
		start += width
	}
	return ids
}

// rowNumberDigits is the number of decimal digits of 0, 1, …, n-1.
func rowNumberDigits(n int) int {
	total := 0
	for lo, hi, width := 0, 10, 1; lo < n; width++ { // [lo, hi): the numbers of width digits
		total += (min(n, hi) - lo) * width
		lo = hi
		if hi > n/10 {
			hi = n // the last width (and no overflow)
		} else {
			hi *= 10
		}
	}
	return total
}

// rowNumbers reports whether ids[i] is the canonical decimal form of i for
// every i.
func rowNumbers(ids []string) bool {
	var c decimalCounter
	for _, id := range ids {
		if string(c.digits()) != id {
			return false
		}
		c.inc()
	}
	return true
}

// decimalCounter is a decimal number (from 0) counted up digit by digit:
// the row numbers of a large endpoint without a division per row.
type decimalCounter struct {
	buf [20]byte // the digits, right-aligned
	n   int      // how many
}

// digits returns the counter's decimal form (valid until inc).
func (c *decimalCounter) digits() []byte {
	if c.n == 0 {
		c.buf[len(c.buf)-1], c.n = '0', 1
	}
	return c.buf[len(c.buf)-c.n:]
}

// inc adds one.
func (c *decimalCounter) inc() {
	c.digits()
	for i := len(c.buf) - 1; ; i-- {
		if i < len(c.buf)-c.n {
			c.buf[i] = '1' // a carry out of the top digit: one digit wider
			c.n++
			return
		}
		if c.buf[i] != '9' {
			c.buf[i]++
			return
		}
		c.buf[i] = '0'
	}
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
