package retrieval

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
