package pipeline

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/vertebrae-eval/vertebrae/artifact"
)

func init() {
	register.DoFn3x1[context.Context, string, func(*string) bool, error](&scoreWholeFn{})
}

// scoreWholeFn is a provisional whole-endpoint scorer (replaced by the
// partial scorer).
type scoreWholeFn struct {
	Job string
	w   worker
}

func (f *scoreWholeFn) Setup(ctx context.Context) error { return f.w.setup(ctx, f.Job) }
func (f *scoreWholeFn) Teardown()                       { f.w.teardown() }

func (f *scoreWholeFn) ProcessElement(ctx context.Context, name string, sides func(*string) bool) error {
	n := 0
	var s string
	for sides(&s) {
		n++
	}
	if n != 2 {
		return fmt.Errorf("extractor %s: %d endpoints ready, want 2", name, n)
	}
	cfg, err := f.w.job.config()
	if err != nil {
		return err
	}
	pair := f.w.job.Endpoints[name]
	_, err = f.w.st.Score(ctx, artifact.ScoreRequest{QueryKey: pair.Query, GalleryKey: pair.Gallery, RelevanceKey: f.w.job.RelevanceKey, Config: cfg})
	return err
}

func scoreStages(s beam.Scope, job *Job, ready beam.PCollection) {
	s = s.Scope("score")
	beam.ParDo0(s, &scoreWholeFn{Job: job.encode()}, beam.GroupByKey(s, ready))
}
