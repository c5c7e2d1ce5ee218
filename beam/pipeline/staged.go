package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/rank"
)

// Shard-local scoring (SPEC §11.3), the stages of the job-array commands
// `score --stage positives`, `score` and `finalize`:
//
//	(extractor, side) ready ─GBK→ N shard tasks ─reshuffle→ positives stage
//	  ─GBK by extractor (barrier: all N committed)→ N count tasks
//	  ─reshuffle→ count stage ─GBK by extractor (barrier)→ finalize
//
// Each stage commits its artifacts in the store and emits only
// (extractor, shard index); the GroupByKey between two stages emits an
// extractor's group once every one of its N shards has finished the
// previous stage (a batch GroupByKey fires when its input is complete), so
// no count shard starts before every positives stage of its extractor is
// committed. A count shard then reads only its gallery rows
// ((*artifact.Store).ScorePartial takes every positive's score from the
// stages), so no worker reads the whole gallery.
func init() {
	register.DoFn4x1[context.Context, string, func(*string) bool, func(string), error](&shardTasksFn{})
	register.DoFn3x1[context.Context, string, func(string, int), error](&positivesFn{})
	register.DoFn4x1[context.Context, string, func(*int) bool, func(string), error](&countTasksFn{})
	register.DoFn3x1[context.Context, string, func(string, int), error](&countFn{})
	register.DoFn3x1[context.Context, string, func(*int) bool, error](&finalizeStagedFn{})
	// The emitters and iterators are registered in stages.go.
}

// shardTask is one gallery shard of one extractor's score.
type shardTask struct {
	Extractor string `json:"extractor"`
	Shard     int    `json:"shard"`
}

func shardTasks(name string, total int) []string {
	out := make([]string, total)
	for i := range out {
		out[i] = mustJSON(shardTask{name, i})
	}
	return out
}

func decodeShardTask(elem string, total int) (shardTask, error) {
	var t shardTask
	if err := json.Unmarshal([]byte(elem), &t); err != nil {
		return t, fmt.Errorf("corrupt shard task %q: %w", elem, err)
	}
	if t.Shard < 0 || t.Shard >= total {
		return t, fmt.Errorf("shard task %q: shard %d of %d", elem, t.Shard, total)
	}
	return t, nil
}

// shardTasksFn emits the N gallery-shard tasks of an extractor once both
// of its endpoints are merged.
type shardTasksFn struct {
	Job string
	job *Job
}

func (f *shardTasksFn) Setup() error {
	var err error
	f.job, err = decodeJob(f.Job)
	return err
}

func (f *shardTasksFn) ProcessElement(ctx context.Context, name string, sides func(*string) bool, emit func(string)) error {
	if err := bothEndpoints(name, sides); err != nil {
		return err
	}
	for _, t := range shardTasks(name, f.job.TotalShards) {
		emit(t)
	}
	return nil
}

// stageWorker is the state the shard stages share: the store and the
// job, and the score request and gallery layout per extractor.
type stageWorker struct {
	worker
	reqs map[string]artifact.ScoreRequest
}

func (w *stageWorker) teardown() { w.worker.teardown(); w.reqs = nil }

func (w *stageWorker) request(name string) (artifact.ScoreRequest, error) {
	if r, ok := w.reqs[name]; ok {
		return r, nil
	}
	cfg, err := w.job.config()
	if err != nil {
		return artifact.ScoreRequest{}, err
	}
	pair, ok := w.job.Endpoints[name]
	if !ok {
		return artifact.ScoreRequest{}, fmt.Errorf("the job has no extractor %q", name)
	}
	r := artifact.ScoreRequest{QueryKey: pair.Query, GalleryKey: pair.Gallery, RelevanceKey: w.job.RelevanceKey, Config: cfg}
	if w.reqs == nil {
		w.reqs = map[string]artifact.ScoreRequest{}
	}
	w.reqs[name] = r
	return r, nil
}

func (w *stageWorker) shard(i int) (rank.Shard, error) {
	layout, err := rank.ParseShardLayout(w.job.ShardBy)
	if err != nil {
		return rank.Shard{}, err
	}
	return rank.Shard{Index: i, Total: w.job.TotalShards, Layout: layout}, nil
}

// task decodes a shard task into its extractor's score request and
// gallery shard.
func (w *stageWorker) task(elem string) (shardTask, artifact.ScoreRequest, rank.Shard, error) {
	t, err := decodeShardTask(elem, w.job.TotalShards)
	if err != nil {
		return t, artifact.ScoreRequest{}, rank.Shard{}, err
	}
	req, err := w.request(t.Extractor)
	if err != nil {
		return t, req, rank.Shard{}, err
	}
	sh, err := w.shard(t.Shard)
	return t, req, sh, err
}

// planned checks that a stage wrote under the score key the launcher
// planned for the extractor.
func (w *stageWorker) planned(name, key string) error {
	if !w.job.hasScoreKey(key) {
		return fmt.Errorf("extractor %s: score key %s was not planned (%v)", name, key, w.job.ScoreKeys)
	}
	return nil
}

// positivesFn runs one gallery shard's positives stage
// ((*artifact.Store).ScorePositivesStage: the scores of the eligible
// positives among the shard's rows, committed at artifact.PositivesKey)
// and emits (extractor, shard index). A sparse gallery is read whole
// by its count shards, which then score the positives themselves: no
// stage runs for it.
type positivesFn struct {
	Job string
	w   stageWorker
}

func (f *positivesFn) Setup(ctx context.Context) error { return f.w.setup(ctx, f.Job) }
func (f *positivesFn) Teardown()                       { f.w.teardown() }

func (f *positivesFn) ProcessElement(ctx context.Context, elem string, emit func(string, int)) error {
	t, req, sh, err := f.w.task(elem)
	if err != nil {
		return err
	}
	gm, err := f.w.st.ReadEndpointMeta(ctx, req.GalleryKey)
	if err != nil {
		return err
	}
	if !gm.Sparse {
		key, doc, err := f.w.st.ScorePositivesStage(ctx, req, sh)
		if err != nil {
			return fmt.Errorf("extractor %s: positives stage of gallery shard %d of %d: %w", t.Extractor, t.Shard, sh.Total, err)
		}
		if err := f.w.planned(t.Extractor, doc.ScoreKey); err != nil {
			return err
		}
		if key != artifact.PositivesKey(doc.ScoreKey, t.Shard, sh.Total) {
			return fmt.Errorf("extractor %s: positives stage committed at %s", t.Extractor, key)
		}
	}
	emit(t.Extractor, t.Shard)
	return nil
}

// collectShards reads the shard indices of one extractor's group and
// checks that they are 0..total-1, each once: the barrier between two
// stages names a shard the pipeline itself lost.
func collectShards(name, stage string, shards func(*int) bool, total int) error {
	var got []int
	var i int
	for shards(&i) {
		got = append(got, i)
	}
	sort.Ints(got)
	ok := len(got) == total
	for k := 0; ok && k < total; k++ {
		ok = got[k] == k
	}
	if !ok {
		return fmt.Errorf("extractor %s: %s finished for gallery shards %v, want 0..%d", name, stage, got, total-1)
	}
	return nil
}

// countTasksFn is the barrier after the positives stage: it receives an
// extractor's group once every positives stage has run and emits its N
// count tasks.
type countTasksFn struct {
	Job string
	job *Job
}

func (f *countTasksFn) Setup() error {
	var err error
	f.job, err = decodeJob(f.Job)
	return err
}

func (f *countTasksFn) ProcessElement(ctx context.Context, name string, shards func(*int) bool, emit func(string)) error {
	if err := collectShards(name, "the positives stage", shards, f.job.TotalShards); err != nil {
		return err
	}
	for _, t := range shardTasks(name, f.job.TotalShards) {
		emit(t)
	}
	return nil
}

// countFn runs one gallery shard's count stage ((*artifact.Store).
// ScorePartial, committed at artifact.PartialKey) and emits (extractor,
// shard index).
type countFn struct {
	Job string
	w   stageWorker
}

func (f *countFn) Setup(ctx context.Context) error { return f.w.setup(ctx, f.Job) }
func (f *countFn) Teardown()                       { f.w.teardown() }

func (f *countFn) ProcessElement(ctx context.Context, elem string, emit func(string, int)) error {
	t, req, sh, err := f.w.task(elem)
	if err != nil {
		return err
	}
	sp, err := f.w.st.ScorePartial(ctx, req, sh)
	if err != nil {
		return fmt.Errorf("extractor %s: gallery shard %d of %d: %w", t.Extractor, t.Shard, sh.Total, err)
	}
	if err := f.w.planned(t.Extractor, sp.ScoreKey); err != nil {
		return err
	}
	emit(t.Extractor, t.Shard)
	return nil
}

// finalizeStagedFn is the barrier after the count stage: once every
// partial of an extractor is committed it merges them exactly and commits
// the score artifact ((*artifact.Store).FinalizeScore).
type finalizeStagedFn struct {
	Job string
	w   stageWorker
}

func (f *finalizeStagedFn) Setup(ctx context.Context) error { return f.w.setup(ctx, f.Job) }
func (f *finalizeStagedFn) Teardown()                       { f.w.teardown() }

func (f *finalizeStagedFn) ProcessElement(ctx context.Context, name string, shards func(*int) bool) error {
	if err := collectShards(name, "the count stage", shards, f.w.job.TotalShards); err != nil {
		return err
	}
	req, err := f.w.request(name)
	if err != nil {
		return err
	}
	sc, err := f.w.st.FinalizeScore(ctx, req, f.w.job.TotalShards, f.w.job.ShardBy)
	if err != nil {
		return fmt.Errorf("extractor %s: %w", name, err)
	}
	return f.w.planned(name, sc.Key)
}

// stagedScoreStages adds shard tasks → positives stage → barrier → count
// stage → barrier → finalize to ready, the (extractor, side) elements of
// merged endpoints.
func stagedScoreStages(s beam.Scope, job *Job, ready beam.PCollection) {
	s = s.Scope("score")
	enc := job.encode()
	tasks := beam.ParDo(s.Scope("tasks"), &shardTasksFn{Job: enc}, beam.GroupByKey(s, ready))
	// Reshuffle so the shards of one extractor spread over the workers
	// instead of staying fused with the step that listed them.
	ps := s.Scope("positives")
	positives := beam.ParDo(ps, &positivesFn{Job: enc}, beam.Reshuffle(ps, tasks))
	cs := s.Scope("count")
	counts := beam.ParDo(cs, &countTasksFn{Job: enc}, beam.GroupByKey(cs, positives))
	counted := beam.ParDo(cs, &countFn{Job: enc}, beam.Reshuffle(cs, counts))
	fs := s.Scope("finalize")
	beam.ParDo0(fs, &finalizeStagedFn{Job: enc}, beam.GroupByKey(fs, counted))
}
