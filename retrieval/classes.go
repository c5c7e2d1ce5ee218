package retrieval

import (
	"context"
	"unicode/utf8"

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
	// labels is the label string of each class id when the classes come
	// from labels (ClassesFromLabels); nil for NewClasses. The label form
	// of identities, fingerprints and artifacts is written from it.
	labels []string
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
func (c *Classes) Reverse() *Classes {
	r := NewClasses(c.Gallery, c.Query)
	r.labels = c.labels
	return r
}

// HasLabels reports whether the classes carry their label strings (they
// came from ClassesFromLabels).
func (c *Classes) HasLabels() bool { return c.labels != nil }

// QueryLabels returns the label of every query row, in row order (nil
// without label strings). The strings are shared with the classes.
func (c *Classes) QueryLabels() []string { return c.rowLabels(c.Query) }

// GalleryLabels returns the label of every gallery row, in row order (nil
// without label strings).
func (c *Classes) GalleryLabels() []string { return c.rowLabels(c.Gallery) }

func (c *Classes) rowLabels(side []int32) []string {
	if c.labels == nil {
		return nil
	}
	out := make([]string, len(side))
	for i, k := range side {
		out[i] = c.labels[k]
	}
	return out
}

// labelArray is the canonical JSON list of the labels of one side's rows,
// in row order, written from the class labels without building the list:
// the label form of SPEC §2.7 (one string per row, O(rows)).
func (c *Classes) labelArray(side []int32) canonjson.Array {
	return canonjson.Array{N: len(side), Elem: func(i int, w canonjson.Writer) error {
		return canonjson.EncodeString(w, c.labels[side[i]])
	}}
}

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

// ClassesFromLabels is the implicit relevance of one label per query and
// per gallery row (SPEC §2.7: labels are non-empty UTF-8 strings compared
// byte-exactly), keeping the label strings. Relevance artifacts that store
// labels (§10.6) are read back through it.
func ClassesFromLabels(queryLabels, galleryLabels []string) (*Classes, error) {
	return classesFromLabels(context.Background(), queryLabels, galleryLabels, len(queryLabels), len(galleryLabels))
}

// ReverseEligible reports for every gallery row whether it has an eligible
// reverse relation (SPEC §4.8): some query of its class does not exclude
// it. exclusions holds one ascending list per query, or is nil.
func (c *Classes) ReverseEligible(exclusions [][]int) []bool {
	queries := make([]int, c.NumClasses())
	for _, k := range c.Query {
		queries[k]++
	}
	excluded := make([]int, len(c.Gallery))
	for q, ex := range exclusions {
		for _, g := range ex {
			if c.Gallery[g] == c.Query[q] {
				excluded[g]++
			}
		}
	}
	has := make([]bool, len(c.Gallery))
	for g, k := range c.Gallery {
		has[g] = queries[k]-excluded[g] > 0
	}
	return has
}

// classesFromLabels assigns class ids to labels (first appearance, gallery
// then query) after the §2.7 checks.
func classesFromLabels(ctx context.Context, ql, gl []string, nq, ng int) (*Classes, error) {
	if len(ql) != nq || len(gl) != ng {
		return nil, invalid("labels must align with their input collections; got %d query labels for %d rows and %d gallery labels for %d rows", len(ql), nq, len(gl), ng)
	}
	ids := map[string]int32{}
	var labels []string
	id := func(l string) int32 {
		k, ok := ids[l]
		if !ok {
			k = int32(len(ids))
			ids[l] = k
			labels = append(labels, l)
		}
		return k
	}
	check := func(side string, i int, l string) error {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if l == "" {
			return invalid("%s labels must be non-empty UTF-8 strings; index %d is empty", side, i)
		}
		if !utf8.ValidString(l) { // the label form is hashed as JSON text (SPEC §10.1)
			return invalid("%s labels must be non-empty UTF-8 strings; index %d is not valid UTF-8", side, i)
		}
		return nil
	}
	gc := make([]int32, ng)
	for j, l := range gl {
		if err := check("gallery", j, l); err != nil {
			return nil, err
		}
		gc[j] = id(l)
	}
	qc := make([]int32, nq)
	for i, l := range ql {
		if err := check("query", i, l); err != nil {
			return nil, err
		}
		qc[i] = id(l)
	}
	c := NewClasses(qc, gc)
	c.labels = labels
	if c.labels == nil {
		c.labels = []string{} // no rows at all: still labels, none of them
	}
	return c, nil
}
