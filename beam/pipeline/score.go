package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/rank"
)

func init() {
	register.DoFn4x1[context.Context, string, func(*string) bool, func(string), error](&scoreTasksFn{})
	register.DoFn3x1[context.Context, string, func(string, []byte), error](&scoreFn{})
	register.DoFn4x1[context.Context, string, func(*[]byte) bool, func(string, []byte), error](&mergeBlockFn{})
	register.DoFn3x1[context.Context, string, func(*[]byte) bool, error](&finalizeFn{})
	register.Emitter2[string, []byte]()
	register.Iter1[[]byte]()
}

// Directions of a score task (SPEC §4.8): forward scores the queries
// against the gallery, reverse the gallery items against the queries, the
// original query endpoint sharded the same way (SPEC §11.3).
const (
	forward = "forward"
	reverse = "reverse"
)

// scoreTask is one query block × gallery shard of one direction.
type scoreTask struct {
	Extractor string `json:"extractor"`
	Direction string `json:"direction"`
	QueryLo   int    `json:"query_lo"`
	QueryHi   int    `json:"query_hi"`
	Shard     int    `json:"shard"`
}

func (t scoreTask) block() string {
	return fmt.Sprintf("%s\x00%s\x00%d", t.Extractor, t.Direction, t.QueryLo)
}

// bothEndpoints checks that an extractor's group of merged endpoints
// (its sides) holds the query and the gallery side.
func bothEndpoints(name string, sides func(*string) bool) error {
	seen := map[string]bool{}
	var s string
	for sides(&s) {
		seen[s] = true
	}
	if !seen["query"] || !seen["gallery"] {
		return fmt.Errorf("extractor %s: endpoints %v ready, want query and gallery", name, seen)
	}
	return nil
}

// scoreTasksFn emits every score task of an extractor once both of its
// endpoints are merged.
type scoreTasksFn struct {
	Job string
	job *Job
}

func (f *scoreTasksFn) Setup() error {
	var err error
	f.job, err = decodeJob(f.Job)
	return err
}

func (f *scoreTasksFn) ProcessElement(ctx context.Context, name string, sides func(*string) bool, emit func(string)) error {
	if err := bothEndpoints(name, sides); err != nil {
		return err
	}
	cfg, err := f.job.config()
	if err != nil {
		return err
	}
	pair := f.job.Endpoints[name]
	for _, t := range tasksOf(name, pair, cfg.Bidirectional, f.job.QueryBlock, f.job.TotalShards) {
		emit(mustJSON(t))
	}
	return nil
}

// tasksOf lists the score tasks of one extractor: query blocks of block
// rows (0 = one block) × total gallery shards, per direction.
func tasksOf(name string, pair Pair, bidirectional bool, block, total int) []scoreTask {
	var out []scoreTask
	dirs := []struct {
		name string
		nq   int
	}{{forward, pair.NQuery}}
	if bidirectional {
		dirs = append(dirs, struct {
			name string
			nq   int
		}{reverse, pair.NGal})
	}
	for _, d := range dirs {
		b := block
		if b <= 0 || b > d.nq {
			b = d.nq
		}
		for lo := 0; lo < d.nq; lo += b {
			for j := 0; j < total; j++ {
				out = append(out, scoreTask{name, d.name, lo, min(d.nq, lo+b), j})
			}
		}
	}
	return out
}

// scoreFn scores one task (rank.ScoreShard) and emits (query block,
// serialised partial). The endpoints are read from the store once per
// worker and extractor; the positives once per direction.
type scoreFn struct {
	Job string
	w   worker
	pr  map[string]*problems
	pos map[string]*rank.PositiveScores
}

func (f *scoreFn) Setup(ctx context.Context) error { return f.w.setup(ctx, f.Job) }
func (f *scoreFn) Teardown()                       { f.w.teardown(); f.pr, f.pos = nil, nil }

func (f *scoreFn) ProcessElement(ctx context.Context, elem string, emit func(string, []byte)) error {
	var t scoreTask
	if err := json.Unmarshal([]byte(elem), &t); err != nil {
		return fmt.Errorf("corrupt score task %q: %w", elem, err)
	}
	pr, err := f.problems(ctx, t.Extractor)
	if err != nil {
		return err
	}
	p := pr.forward
	if t.Direction == reverse {
		p = pr.reverse
	}
	layout, err := rank.ParseShardLayout(f.w.job.ShardBy)
	if err != nil {
		return err
	}
	// No ranking is kept (run depth -1): the score artifact holds metrics
	// and per-query rows only, as `retrieval score` writes it.
	opts, err := evaluate.DirectionOptions(pr.job.Config(), 0, -1)
	if err != nil {
		return err
	}
	pk := t.Extractor + "\x00" + t.Direction
	if f.pos == nil {
		f.pos = map[string]*rank.PositiveScores{}
	}
	pos := f.pos[pk]
	if pos == nil {
		if pos, err = rank.ScorePositives(ctx, p, opts); err != nil {
			return err
		}
		f.pos[pk] = pos
	}
	part, err := rank.ScoreShard(ctx, p, opts, pos, rank.ShardTask{QueryLo: t.QueryLo, QueryHi: t.QueryHi,
		Gallery: rank.Shard{Index: t.Shard, Total: f.w.job.TotalShards, Layout: layout}})
	if err != nil {
		return err
	}
	b, err := part.MarshalBinary()
	if err != nil {
		return err
	}
	emit(t.block(), b)
	return nil
}

func (f *scoreFn) problems(ctx context.Context, name string) (*problems, error) {
	if f.pr == nil {
		f.pr = map[string]*problems{}
	}
	if pr := f.pr[name]; pr != nil {
		return pr, nil
	}
	pr, err := loadProblems(ctx, f.w.st, f.w.job, name)
	if err != nil {
		return nil, err
	}
	f.pr[name] = pr
	return pr, nil
}

// mergeBlockFn merges the gallery-shard partials of one query block
// (rank.MergePartials: integer counts add, best negatives take the
// maximum, top lists merge by (score desc, index asc); no floating-point
// sum is formed) and emits (extractor, direction-tagged merged block).
type mergeBlockFn struct{}

func (f *mergeBlockFn) ProcessElement(ctx context.Context, block string, parts func(*[]byte) bool, emit func(string, []byte)) error {
	var ps []*rank.Partial
	var b []byte
	for parts(&b) {
		p := &rank.Partial{}
		if err := p.UnmarshalBinary(b); err != nil {
			return fmt.Errorf("query block %q: %w", block, err)
		}
		if len(p.Shards) == 0 {
			return fmt.Errorf("query block %q: a partial of no gallery shard", block)
		}
		ps = append(ps, p)
	}
	// Merging is exact and order-free; sorting by shard only makes the
	// error, if any, deterministic.
	sort.Slice(ps, func(i, j int) bool { return ps[i].Shards[0] < ps[j].Shards[0] })
	m, err := rank.MergePartials(ps...)
	if err != nil {
		return fmt.Errorf("query block %q: %w", block, err)
	}
	if !m.Complete() {
		return fmt.Errorf("query block %q: gallery shards %v of %d merged; some are missing", block, m.Shards, m.TotalShards)
	}
	out, err := m.MarshalBinary()
	if err != nil {
		return err
	}
	name, dir, _ := strings.Cut(block, "\x00")
	dir, _, _ = strings.Cut(dir, "\x00")
	tag := byte('F')
	if dir == reverse {
		tag = 'R'
	}
	emit(name, append([]byte{tag}, out...))
	return nil
}

// finalizeFn computes an extractor's metrics, diagnostics and aggregates
// centrally, in query order, from its complete query blocks
// (evaluate.PairFromPartials) and commits the score artifact.
type finalizeFn struct {
	Job string
	w   worker
}

func (f *finalizeFn) Setup(ctx context.Context) error { return f.w.setup(ctx, f.Job) }
func (f *finalizeFn) Teardown()                       { f.w.teardown() }

func (f *finalizeFn) ProcessElement(ctx context.Context, name string, blocks func(*[]byte) bool) error {
	var fwd, rev []*rank.Partial
	var b []byte
	for blocks(&b) {
		if len(b) == 0 {
			return fmt.Errorf("extractor %s: empty query block", name)
		}
		p := &rank.Partial{}
		if err := p.UnmarshalBinary(b[1:]); err != nil {
			return fmt.Errorf("extractor %s: %w", name, err)
		}
		if b[0] == 'R' {
			rev = append(rev, p)
		} else {
			fwd = append(fwd, p)
		}
	}
	for _, bs := range [][]*rank.Partial{fwd, rev} {
		sort.Slice(bs, func(i, j int) bool { return bs[i].QueryLo < bs[j].QueryLo })
		next := 0
		for _, p := range bs {
			if p.QueryLo != next {
				return fmt.Errorf("extractor %s: query blocks do not cover the queries in order (block at %d, expected %d)", name, p.QueryLo, next)
			}
			next = p.QueryHi()
		}
		if len(bs) > 0 && next != bs[0].NQueries {
			return fmt.Errorf("extractor %s: query blocks end at %d of %d queries", name, next, bs[0].NQueries)
		}
	}
	return finish(ctx, f.w.st, f.w.job, name, fwd, rev)
}

// scoreStages adds score → group by query block → merge → group by
// extractor → finalize to ready, the (extractor, side) elements of merged
// endpoints.
func scoreStages(s beam.Scope, job *Job, ready beam.PCollection) {
	s = s.Scope("score")
	enc := job.encode()
	tasks := beam.ParDo(s, &scoreTasksFn{Job: enc}, beam.GroupByKey(s, ready))
	// Reshuffle so the tasks of one extractor spread over the workers
	// instead of staying fused with the step that listed them.
	tasks = beam.Reshuffle(s, tasks)
	parts := beam.ParDo(s, &scoreFn{Job: enc}, tasks)
	blocks := beam.ParDo(s, &mergeBlockFn{}, beam.GroupByKey(s, parts))
	beam.ParDo0(s, &finalizeFn{Job: enc}, beam.GroupByKey(s, blocks))
}
