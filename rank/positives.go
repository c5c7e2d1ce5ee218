package rank

import (
	"context"
	"math"
	"slices"
	"sync/atomic"
)

// The positives stage: the exact scores of every eligible positive of a
// chunk's queries, their rank order (the thresholds of the pass), and the
// pooled summary's share of them.

// posTask is one task of the positives stage: the query rows qs against
// the gallery rows gs (global indices), every pair a positive.
type posTask struct {
	qs []int32 // queries
	gs []int32 // gallery rows
	// labels: the gallery rows are members m0… of the queries' class;
	// explicit: one gallery row, and each query's list position in pos.
	m0  int
	pos []int32
}

// positives scores every positive of the chunk's queries (every member of
// a query's class for labels) by the one formula, grouped into dense tiles
// so that each gallery row is produced once per group: by class for
// labels, by gallery row for explicit pairs.
//
// With fold set, the scores also go to the pooled summary's extremes and
// median window (sink.rowStats) while they are in cache.
func (s *scorer[T]) positives(ctx context.Context, c *chunk[T], fold bool) error {
	tasks := s.positiveTasks(c)
	var bad atomic.Bool
	k := 0
	newWorker := func() *posWorker[T] { // the chunks reuse the workers' buffers
		if k == len(s.posWorkers) {
			w := &posWorker[T]{}
			if s.sink != nil {
				w.part = s.sink.part(k)
			}
			s.posWorkers = append(s.posWorkers, w)
		}
		k++
		return s.posWorkers[k-1]
	}
	fold = fold && s.sink != nil
	err := parallel(ctx, s.pr.threads, len(tasks), newWorker, func(i int, w *posWorker[T]) error {
		t := tasks[i]
		out := w.score(s, t.qs, t.gs)
		gn := len(t.gs)
		if !allFinite(out[:len(t.qs)*gn]) {
			bad.Store(true)
			return errNonFinite
		}
		// Scores are held as computed: a −0 is made +0 where it is
		// reported (SPEC §1.3); it compares equal to +0 everywhere else.
		for a, q := range t.qs {
			dst := c.scores[int(q)-c.q0]
			if t.pos != nil {
				dst[t.pos[a]] = out[a]
				continue
			}
			copy(dst[t.m0:t.m0+gn], out[a*gn:(a+1)*gn])
		}
		if !fold {
			return ctx.Err()
		}
		if t.pos != nil { // explicit positives: every one is eligible
			w.part.rowStats(out[:len(t.qs)])
			for a, q := range t.qs {
				c.raiseMax(int(q)-c.q0, out[a])
			}
			return ctx.Err()
		}
		for a, q := range t.qs {
			// The eligible members of rows [m0, m0+gn) of q's class.
			row, j := out[a*gn:(a+1)*gn], 0
			ex := s.rel.excludedPos(int(q))
			e, _ := slices.BinarySearch(ex, int32(t.m0))
			hi := T(math.Inf(-1))
			for ; e < len(ex) && int(ex[e]) < t.m0+gn; e++ {
				hi = max(hi, w.part.rowStats(row[j:int(ex[e])-t.m0]))
				j = int(ex[e]) - t.m0 + 1
			}
			c.raiseMax(int(q)-c.q0, max(hi, w.part.rowStats(row[j:])))
		}
		return ctx.Err()
	})
	if err == nil && bad.Load() {
		err = errNonFinite
	}
	return err
}

// positiveTasks groups the chunk's positive pairs into dense tiles.
func (s *scorer[T]) positiveTasks(c *chunk[T]) []posTask {
	var tasks []posTask
	if cl := s.rel.classes; cl != nil {
		const gBlock, qBlock = 512, 256
		byClass := map[int32][]int32{}
		var order []int32
		for q := c.q0; q < c.q1; q++ {
			k := cl.Query[q]
			if _, ok := byClass[k]; !ok {
				order = append(order, k)
			}
			byClass[k] = append(byClass[k], int32(q))
		}
		for _, k := range order {
			qs, m := byClass[k], cl.Members(int(k))
			// The members among the positive rows (all but for a window).
			a, _ := slices.BinarySearch(m, int32(s.posRows.lo))
			b, _ := slices.BinarySearch(m, int32(s.posRows.hi))
			if s.posRows.stride > 1 {
				// A modulo window: each member it holds, by itself, at its
				// list position.
				for p := a; p < b; p++ {
					if !s.posRows.has(int(m[p])) {
						continue
					}
					for q0 := 0; q0 < len(qs); q0 += qBlock {
						t := posTask{qs: qs[q0:min(q0+qBlock, len(qs))], gs: m[p : p+1], pos: make([]int32, min(qBlock, len(qs)-q0))}
						for i := range t.pos {
							t.pos[i] = int32(p)
						}
						tasks = append(tasks, t)
					}
				}
				continue
			}
			for m0 := a; m0 < b; m0 += gBlock {
				for q0 := 0; q0 < len(qs); q0 += qBlock {
					tasks = append(tasks, posTask{qs: qs[q0:min(q0+qBlock, len(qs))], gs: m[m0:min(m0+gBlock, b)], m0: m0})
				}
			}
		}
		return tasks
	}
	// Explicit pairs among the positive rows, by gallery row: a counting
	// sort of the chunk's pairs over the rows' positions (a shard's window,
	// not the whole gallery).
	type ref struct{ q, k int32 }
	rows := s.posRows
	nw := rows.len()
	start := make([]int32, nw+1)
	for q := c.q0; q < c.q1; q++ {
		for _, g := range s.rel.list(q) {
			if rows.has(int(g)) {
				start[(int(g)-rows.lo)/rows.stride+1]++
			}
		}
	}
	for p := range nw {
		start[p+1] += start[p]
	}
	refs := make([]ref, start[nw])
	fill := slices.Clone(start[:nw])
	for q := c.q0; q < c.q1; q++ {
		for k, g := range s.rel.list(q) {
			if rows.has(int(g)) {
				p := (int(g) - rows.lo) / rows.stride
				refs[fill[p]] = ref{int32(q), int32(k)}
				fill[p]++
			}
		}
	}
	const maxGather = 256
	for p := range nw {
		g := rows.at(p)
		rs := refs[start[p]:start[p+1]]
		for lo := 0; lo < len(rs); lo += maxGather {
			part := rs[lo:min(lo+maxGather, len(rs))]
			t := posTask{qs: make([]int32, len(part)), gs: []int32{int32(g)}, pos: make([]int32, len(part))}
			for i, r := range part {
				t.qs[i], t.pos[i] = r.q, r.k
			}
			tasks = append(tasks, t)
		}
	}
	return tasks
}

// posWorker is one worker's buffers of the positives stage.
type posWorker[T working] struct {
	part        *sinkPart[T]
	qb, gb, out []T
	tmp         []float64
	qv, gv      []float64
}

// score returns the scores of the query rows qs against the gallery rows
// gs (len(qs) × len(gs), row-major) by the one formula.
func (w *posWorker[T]) score(s *scorer[T], qs, gs []int32) []T {
	d := s.d
	qn, gn := len(qs), len(gs)
	w.out = growTo(w.out, qn*gn)
	if s.pl.sparse {
		for a, q := range qs {
			var qi, gi []int32
			qi, w.qv = s.pr.q.sparseRow(int(q), w.qv)
			for j, g := range gs {
				gi, w.gv = s.g.sparseRow(int(g), w.gv)
				w.out[a*gn+j] = T(sparsePair(qi, w.qv, gi, w.gv, s.ex.sqDist, s.pl.prec))
			}
			if s.ex.sqDist {
				negate(w.out[a*gn : (a+1)*gn])
			}
		}
		return w.out
	}
	w.tmp = growTo(w.tmp, d)
	w.qb, w.gb = growTo(w.qb, qn*d), growTo(w.gb, gn*d)
	for a, q := range qs {
		if s.q != nil {
			copy(w.qb[a*d:(a+1)*d], s.qrow(int(q)))
		} else {
			copy(w.qb[a*d:(a+1)*d], produce(s.pr.q, int(q), int(q)+1, w.qb[a*d:(a+1)*d], w.tmp))
		}
	}
	grows := w.gb[:gn*d]
	if v := direct[T](s.g, block{n: gn, g0: int(gs[0]), stride: 1}); v != nil && int(gs[gn-1])-int(gs[0]) == gn-1 {
		grows = v // consecutive rows held as working values (a class of consecutive rows)
	} else {
		for j, g := range gs {
			copy(w.gb[j*d:(j+1)*d], produce(s.g, int(g), int(g)+1, w.gb[j*d:(j+1)*d], w.tmp))
		}
	}
	if gn == 1 {
		// One gallery row: it is the kernel's packed operand. Scores are
		// symmetric bit for bit (fma(a,b,c) = fma(b,a,c), (q−g)² = (g−q)²).
		s.ex.block(grows, 1, w.qb[:qn*d], qn, w.out[:qn])
	} else {
		s.ex.block(w.qb[:qn*d], qn, grows, gn, w.out[:qn*gn])
	}
	return w.out
}

// orderPositives feeds each query's eligible positive scores to the pooled
// summary and puts the positives of every query with negatives in rank
// order (its thresholds).
func (s *scorer[T]) orderPositives(ctx context.Context, c *chunk[T]) error {
	n := c.q1 - c.q0
	const group = 16
	return parallel(ctx, s.pr.threads, (n+group-1)/group, func() struct{} { return struct{}{} }, func(task int, _ struct{}) error {
		for i := task * group; i < min(n, (task+1)*group); i++ {
			q := c.q0 + i
			ex := s.rel.excludedPos(q)
			if !c.neg[i] {
				continue
			}
			th, list := &c.th[i], s.rel.list(q)
			rs := sorterPool.Get().(*sorter)
			ord, b := rankOrder(rs, c.scores[i], ex, s.pl.buckets && len(th.score) >= minBucketedThresholds, c.tab[i])
			for r, p := range ord {
				th.score[r], th.index[r], th.pos[r] = c.scores[i][p], list[p], p
			}
			th.b = b
			sorterPool.Put(rs)
		}
		return nil
	})
}

// raiseMax raises chunk query i's best positive to v (the positives
// stage's tasks of one query may run at once).
func (c *chunk[T]) raiseMax(i int, v T) {
	m := &c.maxPos[i]
	for {
		old := m.Load()
		if !(float64(v) > math.Float64frombits(old)) || m.CompareAndSwap(old, math.Float64bits(float64(v)+0)) {
			return
		}
	}
}

// sumChunk takes the ordered sum of the chunk's eligible positive scores
// (SPEC §4.7: query order, then gallery order) while the run goes on.
func (s *scorer[T]) sumChunk(c *chunk[T]) {
	done, prev := make(chan struct{}), s.lastSum
	c.a.sumDone, s.lastSum = done, done
	s.sum.Add(1)
	go func() {
		defer s.sum.Done()
		defer close(done)
		if prev != nil {
			<-prev // the chunks' sums follow query order
		}
		for i := range c.scores {
			s.sink.sum(s.rel, c.q0+i, c.scores[i])
		}
	}()
}
