package retrieval

import (
	"runtime"
	"strconv"
	"sync"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
)

// Classes is label-derived relevance held implicitly (SPEC §2.7): query q
// and gallery row g are relevant (grade 1) exactly when Query[q] ==
// Gallery[g]. Holding class membership instead of Σ(class size)² pairs keeps
// memory and setup linear in the rows; every observable result is as if the
// pairs were stored.
type Classes struct {
	Query   []int32 // class of each query row
	Gallery []int32 // class of each gallery row
	members [][]int32
}

// NewClasses builds the implicit relevance of class ids per row (ids are
// small non-negative integers; equal ids mean equal labels).
func NewClasses(query, gallery []int32) *Classes {
	n := int32(0)
	for _, c := range query {
		n = max(n, c+1)
	}
	for _, c := range gallery {
		n = max(n, c+1)
	}
	counts := make([]int32, n)
	for _, c := range gallery {
		counts[c]++
	}
	members := make([][]int32, n)
	for c := range members {
		members[c] = make([]int32, 0, counts[c])
	}
	for g, c := range gallery {
		members[c] = append(members[c], int32(g))
	}
	return &Classes{Query: query, Gallery: gallery, members: members}
}

// NumClasses is the number of class ids.
func (c *Classes) NumClasses() int { return len(c.members) }

// Members returns the gallery rows of class k in ascending order (shared:
// callers must not modify it).
func (c *Classes) Members(k int) []int32 { return c.members[k] }

// Positives materialises query q's stored positives (before exclusions).
func (c *Classes) Positives(q int) []Positive {
	m := c.members[c.Query[q]]
	out := make([]Positive, len(m))
	for i, g := range m {
		out[i] = Positive{Index: int(g), Grade: 1}
	}
	return out
}

// Reverse is the transposed relevance (SPEC §4.8): the roles swap.
func (c *Classes) Reverse() *Classes { return NewClasses(c.Gallery, c.Query) }

// Materialise lists every stored positive, as the explicit forms hold them.
func (c *Classes) Materialise() [][]Positive {
	out := make([][]Positive, len(c.Query))
	for q := range out {
		out[q] = c.Positives(q)
	}
	return out
}

// EligibleCount is the number of query q's positives that are not excluded
// (excl ascending).
func (c *Classes) EligibleCount(q int, excl []int) int {
	k := c.Query[q]
	n := len(c.members[k])
	for _, g := range excl {
		if c.Gallery[g] == k {
			n--
		}
	}
	return n
}

// classesFromLabels assigns class ids to labels (first appearance, gallery
// then query) after the §2.7 checks.
func classesFromLabels(ql, gl []string, nq, ng int) (*Classes, error) {
	if len(ql) != nq || len(gl) != ng {
		return nil, invalid("labels must align with their input collections; got %d query labels for %d rows and %d gallery labels for %d rows", len(ql), nq, len(gl), ng)
	}
	ids := map[string]int32{}
	id := func(l string) int32 {
		k, ok := ids[l]
		if !ok {
			k = int32(len(ids))
			ids[l] = k
		}
		return k
	}
	gc := make([]int32, ng)
	for j, l := range gl {
		if l == "" {
			return nil, invalid("gallery labels must be non-empty strings; index %d is empty", j)
		}
		gc[j] = id(l)
	}
	qc := make([]int32, nq)
	for i, l := range ql {
		if l == "" {
			return nil, invalid("query labels must be non-empty strings; index %d is empty", i)
		}
		qc[i] = id(l)
	}
	return NewClasses(qc, gc), nil
}

// labelTriples is the canonical [qi, gi, 1] list of every stored pair,
// generated while it is hashed (the same text as the []any of the explicit
// forms, SPEC §10.3).
func (c *Classes) labelTriples() canonjson.Array {
	// One element per query with positives: its triples as one
	// comma-separated run "[q,g,1],[q,g,1],…". The run of a query depends
	// on its class and its own digits only, so each (class, width of q)
	// has one template with the query digits left blank, and a query's
	// text is a copy of its template with its digits stored into the
	// blanks. Batches of queries are formatted in parallel, the next batch
	// while the hash consumes the current one.
	type key struct{ k, w int32 }
	type template struct {
		text  []byte
		slots []int32 // offsets of the query-digit blanks
	}
	templates := map[key]*template{}
	var qs []int32
	for q, k := range c.Query {
		if len(c.members[k]) == 0 {
			continue
		}
		qs = append(qs, int32(q))
		kw := key{k, int32(len(strconv.Itoa(q)))}
		if templates[kw] != nil {
			continue
		}
		t := &template{slots: make([]int32, 0, len(c.members[k]))}
		for i, g := range c.members[k] {
			if i > 0 {
				t.text = append(t.text, ',')
			}
			t.text = append(t.text, '[')
			t.slots = append(t.slots, int32(len(t.text)))
			for range kw.w {
				t.text = append(t.text, '0')
			}
			t.text = append(t.text, ',')
			t.text = strconv.AppendInt(t.text, int64(g), 10)
			t.text = append(t.text, ",1]"...)
		}
		templates[kw] = t
	}
	format := func(buf []byte, q int32) []byte {
		var digits [12]byte
		d := strconv.AppendInt(digits[:0], int64(q), 10)
		t := templates[key{c.Query[q], int32(len(d))}]
		buf = append(buf[:0], t.text...)
		for _, off := range t.slots {
			copy(buf[off:int(off)+len(d)], d)
		}
		return buf
	}
	const batch = 64
	workers := max(1, runtime.GOMAXPROCS(0))
	type batchBufs struct {
		bufs [][]byte
		done chan struct{}
	}
	sets := [2]*batchBufs{{bufs: make([][]byte, batch)}, {bufs: make([][]byte, batch)}}
	start := func(bi int) {
		set := sets[bi%2]
		set.done = make(chan struct{})
		part := qs[bi*batch : min((bi+1)*batch, len(qs))]
		go func() {
			defer close(set.done)
			var wg sync.WaitGroup
			for t := range min(workers, len(part)) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for b := t; b < len(part); b += workers {
						set.bufs[b] = format(set.bufs[b], part[b])
					}
				}()
			}
			wg.Wait()
		}()
	}
	return canonjson.Array{N: len(qs), Elem: func(i int, w canonjson.Writer) error {
		bi := i / batch
		set := sets[bi%2]
		if i%batch == 0 {
			if bi == 0 {
				start(0)
			}
			<-set.done
			if (bi+1)*batch < len(qs) {
				start(bi + 1) // the other set: its batch was written already
			}
		}
		_, err := w.Write(set.bufs[i%batch])
		return err
	}}
}
