package pipeline

import (
	"context"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/rank"
)

// scoreJob is the §10.7-checked score request of one extractor
// (artifact.PrepareScore: the same checks, fingerprints and key as
// `vertebrae retrieval score`).
func scoreJob(ctx context.Context, st *artifact.Store, job *Job, name string) (*artifact.ScoreJob, error) {
	cfg, err := job.config()
	if err != nil {
		return nil, err
	}
	pair, ok := job.Endpoints[name]
	if !ok {
		return nil, fmt.Errorf("the job has no extractor %q", name)
	}
	sj, err := st.PrepareScore(ctx, artifact.ScoreRequest{QueryKey: pair.Query, GalleryKey: pair.Gallery, RelevanceKey: job.RelevanceKey, Config: cfg})
	if err != nil {
		return nil, err
	}
	if !job.hasScoreKey(sj.Key()) {
		return nil, fmt.Errorf("extractor %s: score key %s was not planned (%v)", name, sj.Key(), job.ScoreKeys)
	}
	return sj, nil
}

// problems are one extractor's scoring problems with their matrices, per
// direction, as scoreFn keeps them for its tasks.
type problems struct {
	job     *artifact.ScoreJob
	forward rank.Problem
	reverse rank.Problem
}

func loadProblems(ctx context.Context, st *artifact.Store, job *Job, name string) (*problems, error) {
	sj, err := scoreJob(ctx, st, job, name)
	if err != nil {
		return nil, err
	}
	p, err := st.LoadProblem(ctx, sj)
	if err != nil {
		return nil, err
	}
	return &problems{job: sj, forward: p, reverse: evaluate.Reverse(p)}, nil
}

// finish computes an extractor's result centrally from its complete query
// blocks, in query order (evaluate.PairFromPartials, bit-identical to
// evaluate.Pair), and commits the score artifact (artifact.CommitScore).
func finish(ctx context.Context, st *artifact.Store, job *Job, name string, fwd, rev []*rank.Partial) error {
	sj, err := scoreJob(ctx, st, job, name)
	if err != nil {
		return err
	}
	_, warnings, err := sj.Compression()
	if err != nil {
		return err
	}
	res, err := evaluate.PairFromPartials(sj.Problem(), sj.Config(), warnings, -1, fwd, rev)
	if err != nil {
		return fmt.Errorf("extractor %s: %w", name, err)
	}
	_, err = st.CommitScore(ctx, sj, res)
	return err
}
