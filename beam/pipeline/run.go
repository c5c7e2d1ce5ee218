package pipeline

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Build adds the pipeline of job to a new Beam pipeline.
func Build(job *Job) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	ready := extractStages(s, job)
	scoreStages(s, job, ready)
	return p
}

// Run prepares the job (plan, relevance), runs the pipeline on runner
// (registered by the caller's imports, e.g. "prism" or beamx's set) and
// returns the reconstructed JSON report (SPEC §10.8). beam.Init must have
// run.
func Run(ctx context.Context, runner string, o Options) ([]byte, *Job, error) {
	job, err := Prepare(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	if _, err := beam.Run(ctx, runner, Build(job)); err != nil {
		return nil, job, err
	}
	rep, err := Report(ctx, job)
	return rep, job, err
}
