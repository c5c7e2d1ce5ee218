package rank

import (
	"slices"

	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// relevance is the view of a problem's relevance every stage reads, the
// same for explicit pairs and for label classes (which it never
// materialises). Per query it gives a sorted list of gallery indices, the
// positive list: the eligible positives (explicit), or every member of the
// query's class (labels), whose excluded members are marked by position.
// Positive scores are held by position in that list.
type relevance struct {
	classes  *retrieval.Classes
	eligible [][]retrieval.Positive // explicit: eligible positives per query
	lists    [][]int32              // explicit: their gallery indices
	excl     [][]int                // exclusions per query (nil: none)
	exPos    [][]int32              // labels: positions of excluded members in the list, ascending
	counts   []int                  // eligible positives per query
	binary   bool                   // every positive has the same grade
}

func newRelevance(p Problem) *relevance {
	nq := p.Queries.Rows()
	r := &relevance{classes: p.Classes, excl: p.Exclusions, counts: make([]int, nq), binary: true}
	if c := p.Classes; c != nil {
		r.exPos = make([][]int32, nq)
		for q := range nq {
			m := c.Members(int(c.Query[q]))
			for _, g := range r.exclusions(q) { // ascending gallery index, so ascending position
				if c.Gallery[g] == c.Query[q] {
					i, _ := slices.BinarySearch(m, int32(g))
					r.exPos[q] = append(r.exPos[q], int32(i))
				}
			}
			r.counts[q] = len(m) - len(r.exPos[q])
		}
		return r
	}
	r.eligible, r.lists = make([][]retrieval.Positive, nq), make([][]int32, nq)
	grade := 0.0
	for q := range nq {
		el := retrieval.EligiblePositives(p.Relevance[q], r.exclusions(q))
		r.eligible[q], r.counts[q] = el, len(el)
		r.lists[q] = make([]int32, len(el))
		for k, x := range el {
			r.lists[q][k] = int32(x.Index)
			if grade == 0 {
				grade = x.Grade
			}
			r.binary = r.binary && x.Grade == grade
		}
	}
	return r
}

// count is the number of query q's eligible positives.
func (r *relevance) count(q int) int { return r.counts[q] }

// list is query q's positive list (ascending gallery indices).
func (r *relevance) list(q int) []int32 {
	if c := r.classes; c != nil {
		return c.Members(int(c.Query[q]))
	}
	return r.lists[q]
}

// excludedPos is the ascending positions of q's list that are excluded.
func (r *relevance) excludedPos(q int) []int32 {
	if r.exPos == nil {
		return nil
	}
	return r.exPos[q]
}

func (r *relevance) exclusions(q int) []int {
	if r.excl == nil {
		return nil
	}
	return r.excl[q]
}

// eligibleScores is the values of q's eligible positives, in list order,
// from its values by list position (vals): vals itself when no position is
// excluded, else a copy in *buf (reused; a fresh slice when buf is nil).
func eligibleScores[E any](r *relevance, q int, vals []E, buf *[]E) []E {
	ex := r.excludedPos(q)
	if len(ex) == 0 {
		return vals
	}
	var dst []E
	if buf != nil {
		dst = (*buf)[:0]
	}
	prev := 0
	for _, e := range ex {
		dst = append(dst, vals[prev:e]...)
		prev = int(e) + 1
	}
	dst = append(dst, vals[prev:]...)
	if buf != nil {
		*buf = dst
	}
	return dst
}

// negatives is the number of q's eligible negatives among rows.
func (r *relevance) negatives(q int, rows rowSet) int {
	n := rows.len()
	list := r.list(q)
	if rows.stride == 1 {
		lo, _ := slices.BinarySearch(list, int32(rows.lo))
		hi, _ := slices.BinarySearch(list, int32(rows.hi))
		n -= hi - lo
	} else {
		for _, g := range list {
			if rows.has(int(g)) {
				n--
			}
		}
	}
	ex := r.exclusions(q)
	if len(ex) == 0 {
		return n
	}
	for _, g := range ex {
		if !rows.has(g) {
			continue
		}
		if _, in := slices.BinarySearch(list, int32(g)); !in {
			n-- // an excluded member of the list was counted above
		}
	}
	return n
}

// rowSet is the gallery rows a pass scores: lo, lo+stride, … below hi (a
// whole gallery, a contiguous shard or a modulo shard), in ascending
// order. Positions index the set; every result keeps global indices.
type rowSet struct{ lo, hi, stride int }

func allRows(ng int) rowSet { return rowSet{0, ng, 1} }

func (s rowSet) len() int {
	if s.hi <= s.lo {
		return 0
	}
	return (s.hi - s.lo + s.stride - 1) / s.stride
}

// same reports whether two row sets hold the same rows.
func (s rowSet) same(o rowSet) bool {
	n := s.len()
	return n == o.len() && (n == 0 || s.lo == o.lo && (n == 1 || s.stride == o.stride))
}

// count is how many of the ascending global rows gs lie in the set.
func (s rowSet) count(gs []int32) int {
	if s.stride == 1 {
		lo, _ := slices.BinarySearch(gs, int32(s.lo))
		hi, _ := slices.BinarySearch(gs, int32(s.hi))
		return hi - lo
	}
	n := 0
	for _, g := range gs {
		if s.has(int(g)) {
			n++
		}
	}
	return n
}

// at is the global index of position p.
func (s rowSet) at(p int) int { return s.lo + p*s.stride }

// has reports whether global row g is in the set.
func (s rowSet) has(g int) bool {
	return g >= s.lo && g < s.hi && (s.stride == 1 || (g-s.lo)%s.stride == 0)
}

// block is positions [p0, p0+n) of a row set: global rows g0, g0+stride, ….
type block struct {
	p0, n      int
	g0, stride int
}

func (s rowSet) block(p0, p1 int) block {
	return block{p0: p0, n: p1 - p0, g0: s.at(p0), stride: s.stride}
}

// sub is rows [j0, j1) of the block.
func (b block) sub(j0, j1 int) block {
	return block{p0: b.p0 + j0, n: j1 - j0, g0: b.g0 + j0*b.stride, stride: b.stride}
}

func (b block) global(j int) int { return b.g0 + j*b.stride }

// last is one past the global index of the block's last row.
func (b block) end() int { return b.g0 + (b.n-1)*b.stride + 1 }

// local is the block offset of global row g, or −1 when the block does
// not hold it.
func (b block) local(g int) int {
	d := g - b.g0
	if d < 0 {
		return -1
	}
	if b.stride != 1 {
		if d%b.stride != 0 {
			return -1
		}
		d /= b.stride
	}
	if d >= b.n {
		return -1
	}
	return d
}

// negRun is a half-open range of block offsets.
type negRun [2]int32

// specials walks the special entries of query q in a block: members of its
// positive list and its exclusions, ascending. Every other row of the
// block is an eligible negative.
type specials struct {
	b      block
	list   []int32
	ex     []int
	li, ei int
}

func (r *relevance) specials(q int, b block) specials {
	sp := specials{b: b, list: r.list(q), ex: r.exclusions(q)}
	sp.li, _ = slices.BinarySearch(sp.list, int32(b.g0))
	sp.ei, _ = slices.BinarySearch(sp.ex, b.g0)
	return sp
}

// next returns the offset of the next special entry (b.n: none left) and
// whether it is an eligible positive.
func (sp *specials) next() (j int, positive bool) {
	end := sp.b.end()
	for {
		gl, ge := end, end
		if sp.li < len(sp.list) {
			gl = int(sp.list[sp.li])
		}
		if sp.ei < len(sp.ex) {
			ge = sp.ex[sp.ei]
		}
		g := min(gl, ge)
		if g >= end {
			return sp.b.n, false
		}
		// An excluded member of the list is excluded (labels list every
		// member of the class; explicit lists hold eligible positives).
		excluded := ge == g
		if gl == g {
			sp.li++
		}
		if excluded {
			sp.ei++
		}
		if j := sp.b.local(g); j >= 0 {
			return j, !excluded
		}
	}
}

// runs appends the runs of eligible negatives of query q in block b (and,
// when pos is not nil, the offsets of its eligible positives to *pos).
func (r *relevance) runs(q int, b block, dst []negRun, pos *[]int32) []negRun {
	sp := r.specials(q, b)
	j := 0
	for {
		k, positive := sp.next()
		if k > j {
			dst = append(dst, negRun{int32(j), int32(k)})
		}
		if k == b.n {
			return dst
		}
		if positive && pos != nil {
			*pos = append(*pos, int32(k))
		}
		j = k + 1
	}
}

// excludedIn appends the offsets of q's excluded rows in block b.
func (r *relevance) excludedIn(q int, b block, dst []int32) []int32 {
	ex := r.exclusions(q)
	i, _ := slices.BinarySearch(ex, b.g0)
	for ; i < len(ex) && ex[i] < b.end(); i++ {
		if j := b.local(ex[i]); j >= 0 {
			dst = append(dst, int32(j))
		}
	}
	return dst
}
