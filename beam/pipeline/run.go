package pipeline

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Build adds the pipeline of job to a new Beam pipeline. Scoring runs the
// shard-local stages of the job-array commands (positives stage, count
// stage, finalize: stagedScoreStages; no worker reads the whole gallery)
// unless the job asks for query blocks (QueryBlock > 0), which split each
// gallery shard's work into query block × gallery shard tasks merged in the
// pipeline (scoreStages; every score worker then loads the whole gallery).
func Build(job *Job) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	ready := extractStages(s, job)
	if job.QueryBlock > 0 {
		scoreStages(s, job, ready)
	} else {
		stagedScoreStages(s, job, ready)
	}
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
