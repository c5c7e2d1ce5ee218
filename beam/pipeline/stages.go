package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/distributed"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/runspec"
	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/location"
)

// Every DoFn and emitter/iterator type is registered: Beam's Go SDK needs
// it to run DoFns on remote workers (and for its fast call path).
func init() {
	register.DoFn3x1[context.Context, string, func(string, int), error](&embedFn{})
	register.DoFn4x1[context.Context, string, func(*int) bool, func(string, string), error](&mergeFn{})
	register.Emitter1[string]()
	register.Emitter2[string, int]()
	register.Emitter2[string, string]()
	register.Iter1[int]()
	register.Iter1[string]()
}

// worker is the per-DoFn-instance state: the job, the store and (only
// for encoding) the loaded run file. Instances are reused across bundles.
type worker struct {
	job  *Job
	raw  store.Store
	st   *artifact.Store
	sess *runspec.Session
}

func (w *worker) setup(ctx context.Context, jobJSON string) error {
	if w.job != nil {
		return nil
	}
	job, err := decodeJob(jobJSON)
	if err != nil {
		return err
	}
	raw, err := location.Open(ctx, job.Store)
	if err != nil {
		return err
	}
	w.job, w.raw, w.st = job, raw, artifact.New(raw)
	return nil
}

func (w *worker) spec(ctx context.Context) (*runspec.Session, error) {
	if w.sess == nil {
		sess, err := runspec.Open(ctx, w.job.Spec, runspec.Options{DigestCache: runspec.DefaultDigestCache()})
		if err != nil {
			return nil, err
		}
		if sess.Dataset.IdentityKey() != w.job.Plan.DatasetIdentityKey {
			sess.Close()
			return nil, fmt.Errorf("%s: the dataset changed since planning (identity %s, plan says %s)", w.job.Spec, sess.Dataset.IdentityKey(), w.job.Plan.DatasetIdentityKey)
		}
		w.sess = sess
	}
	return w.sess, nil
}

func (w *worker) teardown() {
	if w.sess != nil {
		w.sess.Close()
		w.sess = nil
	}
	if w.raw != nil {
		_ = w.raw.Close()
		w.raw = nil
	}
	w.job = nil
}

// embedTask is one extraction shard (Shard ≥ 0) or the marker of an
// endpoint the plan found cached (Shard = -1, nothing to encode).
type embedTask struct {
	Extractor string `json:"extractor"`
	Side      string `json:"side"`
	Shard     int    `json:"shard"`
}

func endpointKey(extractor, side string) string { return extractor + "\x00" + side }

func splitEndpointKey(k string) (extractor, side string) {
	extractor, side, _ = strings.Cut(k, "\x00")
	return
}

// embedTasks lists every extraction shard of the plan, in plan order.
func embedTasks(p *distributed.Plan) []string {
	var out []string
	for _, pe := range p.Extractors {
		for _, ep := range pe.Endpoints {
			if len(ep.Shards) == 0 {
				out = append(out, mustJSON(embedTask{pe.Name, ep.Side, -1}))
			}
			for _, sh := range ep.Shards {
				out = append(out, mustJSON(embedTask{pe.Name, ep.Side, sh.ShardIndex}))
			}
		}
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain data
	}
	return string(b)
}

// embedFn encodes one extraction shard into the store (`embed-shard`,
// SPEC §11.2) and emits (endpoint, shard index).
type embedFn struct {
	Job     string
	w       worker
	entries map[string]extract.Entry
}

func (f *embedFn) Setup(ctx context.Context) error { return f.w.setup(ctx, f.Job) }
func (f *embedFn) Teardown()                       { f.w.teardown(); f.entries = nil }

// entry builds an extractor once per worker, checks its recipe against the
// plan and loads its fitted state (workers never fit, SPEC §11.2).
func (f *embedFn) entry(ctx context.Context, sess *runspec.Session, pe *distributed.Extractor) (extract.Entry, error) {
	if e, ok := f.entries[pe.Name]; ok {
		return e, nil
	}
	entry, err := sess.Entry(ctx, pe.Name, f.w.job.ONNXRuntimeLib)
	if err != nil {
		return entry, err
	}
	if rh, err := artifact.RecipeHash(entry.Extractor.Recipe()); err != nil || rh != pe.RecipeHash {
		return entry, fmt.Errorf("%s: the recipe of extractor %s changed since planning", f.w.job.Spec, pe.Name)
	}
	if err := distributed.LoadState(ctx, f.w.st, pe, entry.Extractor); err != nil {
		return entry, err
	}
	if f.entries == nil {
		f.entries = map[string]extract.Entry{}
	}
	f.entries[pe.Name] = entry
	return entry, nil
}

func (f *embedFn) ProcessElement(ctx context.Context, elem string, emit func(string, int)) error {
	var t embedTask
	if err := json.Unmarshal([]byte(elem), &t); err != nil {
		return fmt.Errorf("corrupt embed task %q: %w", elem, err)
	}
	if t.Shard >= 0 {
		pe, ep, err := f.w.job.Plan.Endpoint(t.Extractor, t.Side)
		if err != nil {
			return err
		}
		if t.Shard >= len(ep.Shards) {
			return fmt.Errorf("endpoint %s has no shard %d", ep.OutputKey, t.Shard)
		}
		sess, err := f.w.spec(ctx)
		if err != nil {
			return err
		}
		entry, err := f.entry(ctx, sess, pe)
		if err != nil {
			return err
		}
		sh := ep.Shards[t.Shard]
		m, ids, err := distributed.Encode(ctx, sess.Dataset, entry, sess.Spec.Embedding.StreamingEnabled, t.Side, sh)
		if err != nil {
			return err
		}
		if err := distributed.Write(ctx, f.w.st, pe, ep, sh, entry.Extractor.Recipe(), m, ids); err != nil {
			return err
		}
	}
	emit(endpointKey(t.Extractor, t.Side), t.Shard)
	return nil
}

// mergeFn validates and merges the shards of one endpoint (`merge`,
// SPEC §11.2) once all of them are encoded, and emits (extractor, side).
type mergeFn struct {
	Job string
	w   worker
}

func (f *mergeFn) Setup(ctx context.Context) error { return f.w.setup(ctx, f.Job) }
func (f *mergeFn) Teardown()                       { f.w.teardown() }

func (f *mergeFn) ProcessElement(ctx context.Context, key string, shards func(*int) bool, emit func(string, string)) error {
	name, side := splitEndpointKey(key)
	pe, ep, err := f.w.job.Plan.Endpoint(name, side)
	if err != nil {
		return err
	}
	var got []int
	var i int
	for shards(&i) {
		got = append(got, i)
	}
	sort.Ints(got)
	if len(ep.Shards) == 0 {
		emit(name, side) // cached endpoint (SPEC §9.5): nothing to merge
		return nil
	}
	// distributed.Merge re-checks every shard artifact; this only names a shard
	// the pipeline itself lost.
	if len(got) != len(ep.Shards) || got[0] != 0 || got[len(got)-1] != len(ep.Shards)-1 {
		return fmt.Errorf("endpoint %s: encoded shards %v, want 0..%d", ep.OutputKey, got, len(ep.Shards)-1)
	}
	if _, _, err := distributed.WriteMerged(ctx, f.w.st, pe, ep); err != nil {
		return err
	}
	emit(name, side)
	return nil
}

// extract builds the embed → merge part: one (extractor, side) element per
// ready endpoint.
func extractStages(s beam.Scope, job *Job) beam.PCollection {
	s = s.Scope("extract")
	enc := job.encode()
	tasks := beam.CreateList(s, embedTasks(job.Plan))
	encoded := beam.ParDo(s, &embedFn{Job: enc}, tasks)
	return beam.ParDo(s, &mergeFn{Job: enc}, beam.GroupByKey(s, encoded))
}
