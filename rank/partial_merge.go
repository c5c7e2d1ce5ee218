package rank

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// ErrPartialMismatch reports partials that cannot be merged or finished
// together (another problem, block, layout or shard count, or a shard
// merged twice).
var ErrPartialMismatch = errors.New("partials do not belong together")

func mismatchf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPartialMismatch, fmt.Sprintf(format, args...))
}

// MergePartials merges partials of one query block over disjoint sets of
// gallery shards (SPEC §11.3): counts add (integers), best negatives take
// the maximum and top lists merge by (score desc, index asc). The result
// does not depend on the order of parts. Positive scores must agree bit
// for bit (SPEC §4.2).
func MergePartials(parts ...*Partial) (*Partial, error) {
	if len(parts) == 0 {
		return nil, mismatchf("no partials to merge")
	}
	a := parts[0]
	out := &Partial{
		Layout: a.Layout, TotalShards: a.TotalShards, NQueries: a.NQueries, NGallery: a.NGallery, QueryLo: a.QueryLo,
		Offsets: slices.Clone(a.Offsets), Positives: slices.Clone(a.Positives), Scores: slices.Clone(a.Scores),
		Counts: make([]int64, len(a.Counts)), HasNegative: make([]bool, len(a.HasNegative)),
		Nearest: make([]float64, len(a.Nearest)), TopN: a.TopN, FullRanking: a.FullRanking,
	}
	if a.keepsTop() {
		out.Top = make([][]Candidate, len(a.Top))
		for q := range out.Top {
			out.Top[q] = []Candidate{}
		}
	}
	for _, p := range parts {
		if err := out.Add(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Add merges partial p into a in place, as MergePartials(a, p) would: a's
// counts, best negatives, shard set and kept rankings change; its positive
// lists and scores are only read. A reader folds N partials into one this
// way, holding one accumulator instead of a copy per merge.
func (a *Partial) Add(p *Partial) error {
	if err := a.compatible(p); err != nil {
		return err
	}
	for _, s := range p.Shards {
		if slices.Contains(a.Shards, s) {
			return mismatchf("gallery shard %d of %d is merged twice", s, p.TotalShards)
		}
	}
	a.Shards = append(a.Shards, p.Shards...)
	slices.Sort(a.Shards)
	for i, c := range p.Counts {
		a.Counts[i] += c
	}
	for q, has := range p.HasNegative {
		if has && (!a.HasNegative[q] || p.Nearest[q] > a.Nearest[q]) {
			a.HasNegative[q], a.Nearest[q] = true, p.Nearest[q]
		}
	}
	if a.keepsTop() {
		for q := range a.Top {
			all := append(slices.Clip(a.Top[q]), p.Top[q]...)
			sortCandidates(all)
			if !a.FullRanking {
				all = all[:min(len(all), a.TopN)]
			}
			a.Top[q] = all
		}
	}
	return nil
}

// compatible checks that b covers the same problem and query block as a.
func (a *Partial) compatible(b *Partial) error {
	if err := b.validate(); err != nil {
		return err
	}
	switch {
	case b.Layout != a.Layout || b.TotalShards != a.TotalShards:
		return mismatchf("gallery shards %s of %d and %s of %d", b.Layout, b.TotalShards, a.Layout, a.TotalShards)
	case b.NQueries != a.NQueries || b.NGallery != a.NGallery:
		return mismatchf("problem of %d × %d and of %d × %d rows", b.NQueries, b.NGallery, a.NQueries, a.NGallery)
	case b.QueryLo != a.QueryLo || b.QueryHi() != a.QueryHi():
		return mismatchf("query blocks [%d, %d) and [%d, %d)", b.QueryLo, b.QueryHi(), a.QueryLo, a.QueryHi())
	case b.TopN != a.TopN || b.FullRanking != a.FullRanking:
		return mismatchf("kept rankings differ")
	case !slices.Equal(b.Offsets, a.Offsets) || !slices.Equal(b.Positives, a.Positives):
		return mismatchf("eligible positives differ")
	}
	for i := range a.Scores {
		if math.Float64bits(a.Scores[i]) != math.Float64bits(b.Scores[i]) {
			return mismatchf("positive scores differ (positive %d)", i)
		}
	}
	return nil
}

// validate checks a partial's internal consistency (lengths, ranges).
func (p *Partial) validate() error {
	if p == nil {
		return mismatchf("nil partial")
	}
	bn := len(p.Offsets) - 1
	switch {
	case p.TotalShards < 1 || len(p.Shards) == 0 || len(p.Shards) > p.TotalShards:
		return mismatchf("invalid shard set %v of %d", p.Shards, p.TotalShards)
	case p.Layout != Contiguous && p.Layout != Modulo:
		return mismatchf("invalid shard layout %d", p.Layout)
	case bn < 0 || p.QueryLo < 0 || p.QueryLo+bn > p.NQueries || p.NGallery < 1:
		// An empty block is valid: the reverse block of a gallery shard
		// when a direction has fewer queries than there are shards.
		return mismatchf("invalid query block")
	case p.Offsets[0] != 0 || len(p.Positives) != p.Offsets[bn] || len(p.Scores) != len(p.Positives) || len(p.Counts) != len(p.Positives):
		return mismatchf("invalid positive lists")
	case len(p.HasNegative) != bn || len(p.Nearest) != bn:
		return mismatchf("invalid negative lists")
	case p.TopN < 0 || (p.keepsTop() != (p.Top != nil)) || (p.Top != nil && len(p.Top) != bn):
		return mismatchf("invalid kept rankings")
	}
	for _, s := range p.Shards {
		if s < 0 || s >= p.TotalShards {
			return mismatchf("invalid shard index %d of %d", s, p.TotalShards)
		}
	}
	for q := range bn {
		if p.Offsets[q+1] < p.Offsets[q] {
			return mismatchf("invalid positive offsets")
		}
		for k := p.Offsets[q]; k < p.Offsets[q+1]; k++ {
			if p.Positives[k] < 0 || p.Positives[k] >= p.NGallery || (k > p.Offsets[q] && p.Positives[k] <= p.Positives[k-1]) {
				return mismatchf("invalid positive index %d", p.Positives[k])
			}
			if p.Counts[k] < 0 || p.Counts[k] >= int64(p.NGallery) {
				return mismatchf("invalid count %d", p.Counts[k])
			}
		}
	}
	for _, top := range p.Top {
		for _, c := range top {
			if c.Index < 0 || c.Index >= p.NGallery {
				return mismatchf("invalid candidate index %d", c.Index)
			}
		}
	}
	return nil
}

// Results hands every query's final result to fn, in query order, as
// Score computes it: blocks are complete partials (every gallery shard
// merged in) whose query blocks, in the given order, cover 0…n_q−1. p
// supplies the grades; its eligible positives must be the partials' (its
// matrices are not read and may be nil).
func Results(p Problem, blocks []*Partial, fn func(q int, r QueryResult) error) error {
	nq := len(p.QueryIDs)
	next := 0
	for _, b := range blocks {
		if err := b.validate(); err != nil {
			return err
		}
		if !b.Complete() {
			return mismatchf("query block [%d, %d) holds gallery shards %v of %d, not all", b.QueryLo, b.QueryHi(), b.Shards, b.TotalShards)
		}
		if b.NQueries != nq || b.QueryLo != next {
			return mismatchf("query block [%d, %d) of %d queries does not follow query %d of %d", b.QueryLo, b.QueryHi(), b.NQueries, next, nq)
		}
		for i := range len(b.Offsets) - 1 {
			q := b.QueryLo + i
			var el []retrieval.Positive
			var ex []int
			if p.Exclusions != nil {
				ex = p.Exclusions[q]
			}
			if p.Classes != nil {
				el = retrieval.EligiblePositives(p.Classes.Positives(q), ex)
			} else {
				el = retrieval.EligiblePositives(p.Relevance[q], ex)
			}
			lo, hi := b.Offsets[i], b.Offsets[i+1]
			if len(el) != hi-lo {
				return mismatchf("query %d: %d eligible positives, the partial holds %d", q, len(el), hi-lo)
			}
			r := QueryResult{Positives: el, Ranks: make([]int, len(el)), Scores: b.Scores[lo:hi:hi],
				NearestNegative: b.Nearest[i], HasNegative: b.HasNegative[i]}
			for k, x := range el {
				if x.Index != b.Positives[lo+k] {
					return mismatchf("query %d: eligible positives differ from the partial's", q)
				}
				r.Ranks[k] = 1 + int(b.Counts[lo+k])
			}
			if !r.HasNegative {
				r.NearestNegative = 0
			}
			if b.Top != nil {
				r.Top = b.Top[i]
			}
			if err := fn(q, r); err != nil {
				return err
			}
		}
		next = b.QueryHi()
	}
	if next != nq {
		return mismatchf("the query blocks end at query %d of %d", next, nq)
	}
	return nil
}

// partialMagic starts the binary form of a Partial (version 1).
var partialMagic = []byte("VTBPART1")

// MarshalBinary encodes p deterministically (little-endian, fixed widths):
// equal partials give equal bytes.
func (p *Partial) MarshalBinary() ([]byte, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(partialMagic)
	u := func(v uint64) { b.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	f := func(v float64) { u(math.Float64bits(v)) }
	u(uint64(p.Layout))
	u(uint64(p.TotalShards))
	u(uint64(len(p.Shards)))
	for _, s := range p.Shards {
		u(uint64(s))
	}
	u(uint64(p.NQueries))
	u(uint64(p.NGallery))
	u(uint64(p.QueryLo))
	u(uint64(len(p.Offsets)))
	for _, o := range p.Offsets {
		u(uint64(o))
	}
	for k := range p.Positives {
		u(uint64(p.Positives[k]))
		f(p.Scores[k])
		u(uint64(p.Counts[k]))
	}
	for q := range p.HasNegative {
		if p.HasNegative[q] {
			u(1)
			f(p.Nearest[q])
		} else {
			u(0)
			u(0)
		}
	}
	u(uint64(p.TopN))
	if p.FullRanking {
		u(1)
	} else {
		u(0)
	}
	if p.Top != nil {
		for _, top := range p.Top {
			u(uint64(len(top)))
			for _, c := range top {
				u(uint64(c.Index))
				f(c.Score)
			}
		}
	}
	return b.Bytes(), nil
}

// UnmarshalBinary decodes MarshalBinary's form, rejecting anything else.
func (p *Partial) UnmarshalBinary(data []byte) error {
	if !bytes.HasPrefix(data, partialMagic) {
		return fmt.Errorf("invalid partial encoding: bad header")
	}
	rest := data[len(partialMagic):]
	var bad bool
	u := func() uint64 {
		if len(rest) < 8 {
			bad = true
			return 0
		}
		v := binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
		return v
	}
	// n reads a length or index: it must fit the remaining input, which
	// bounds every allocation by the input size.
	n := func(limit uint64) int {
		v := u()
		if v > limit {
			bad = true
			return 0
		}
		return int(v)
	}
	remaining := func(per int) uint64 { return uint64(len(rest) / per) }
	f := func() float64 { return math.Float64frombits(u()) }
	var out Partial
	out.Layout = ShardLayout(n(1))
	out.TotalShards = n(math.MaxInt32)
	ns := n(remaining(8))
	for range ns {
		out.Shards = append(out.Shards, n(math.MaxInt32))
	}
	out.NQueries = n(math.MaxInt32)
	out.NGallery = n(math.MaxInt32)
	out.QueryLo = n(math.MaxInt32)
	no := n(remaining(8))
	out.Offsets = make([]int, no)
	for i := range out.Offsets {
		out.Offsets[i] = n(remaining(24) * 2)
	}
	if bad || no < 1 {
		return fmt.Errorf("invalid partial encoding: truncated or malformed")
	}
	np := out.Offsets[no-1]
	if uint64(np) > remaining(24) {
		return fmt.Errorf("invalid partial encoding: truncated or malformed")
	}
	out.Positives, out.Scores, out.Counts = make([]int, np), make([]float64, np), make([]int64, np)
	for k := range np {
		out.Positives[k] = n(math.MaxInt32)
		out.Scores[k] = f()
		out.Counts[k] = int64(n(math.MaxInt32))
	}
	out.HasNegative, out.Nearest = make([]bool, no-1), make([]float64, no-1)
	for q := range no - 1 {
		has := n(1)
		v := u()
		out.HasNegative[q] = has == 1
		if has == 1 {
			out.Nearest[q] = math.Float64frombits(v)
		} else if v != 0 {
			bad = true
		}
	}
	out.TopN = n(math.MaxInt32)
	out.FullRanking = n(1) == 1
	if out.keepsTop() && !bad {
		out.Top = make([][]Candidate, no-1)
		for q := range out.Top {
			c := n(remaining(16))
			out.Top[q] = make([]Candidate, c)
			for k := range c {
				out.Top[q][k] = Candidate{Index: n(math.MaxInt32), Score: f()}
			}
		}
	}
	if bad || len(rest) != 0 {
		return fmt.Errorf("invalid partial encoding: truncated or malformed")
	}
	if err := out.validate(); err != nil {
		return fmt.Errorf("invalid partial encoding: %w", err)
	}
	*p = out
	return nil
}
