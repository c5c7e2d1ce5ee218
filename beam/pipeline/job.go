package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/distributed"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/runspec"
	"github.com/vertebrae-eval/vertebrae/store/location"
)

// Options configure one pipeline run.
type Options struct {
	Spec        string // run file (SPEC §6.5); read by the launcher and every worker
	Store       string // artifact store URI (SPEC §10.5); must be reachable from the workers
	TotalShards int    // extraction shards per endpoint and gallery shards for scoring
	// QueryBlock is the number of queries per scoring block. 0 (default)
	// scores each gallery shard in the two shard-local stages of the job
	// arrays (positives stage, then count stage after every positives stage
	// is committed; a worker reads only its shard's gallery rows). > 0
	// splits every gallery shard into query blocks merged in the pipeline
	// instead: more tasks, but each score worker loads the whole gallery
	// and scores the positives itself.
	QueryBlock int
	// ShardBy is the gallery sharding layout: "contiguous" (default) or
	// "modulo" (SPEC §11.3).
	ShardBy string
	// ONNXRuntimeLib is the ONNX Runtime library for ONNX extractors on the
	// workers ("" = the default search).
	ONNXRuntimeLib string
}

// Job is what the launcher resolves before the pipeline is built: the plan
// (written by the launcher, never by a worker) and the relevance key. It
// travels inside the DoFns as JSON.
type Job struct {
	Spec           string            `json:"spec"`
	Store          string            `json:"store"`
	Plan           *distributed.Plan `json:"plan"`
	RelevanceKey   string            `json:"relevance_key"`
	Config         json.RawMessage   `json:"retrieval_config"`
	TotalShards    int               `json:"total_shards"`
	QueryBlock     int               `json:"query_block"`
	ShardBy        string            `json:"shard_by"`
	ONNXRuntimeLib string            `json:"onnxruntime_lib"`
	ScoreKeys      []string          `json:"score_keys"`
	Endpoints      map[string]Pair   `json:"endpoints"` // extractor → endpoint keys
}

// Pair is an extractor's two endpoint keys.
type Pair struct {
	Query   string `json:"query"`
	Gallery string `json:"gallery"`
	NQuery  int    `json:"n_query"`
	NGal    int    `json:"n_gallery"`
}

// Prepare loads the run file, writes the relevance artifact and plans the
// extraction (the `write-relevance` and `plan` steps of a job array,
// SPEC §6.8). It fails before any pipeline exists when the run file
// asks for what this engine does not do.
func Prepare(ctx context.Context, o Options) (*Job, error) {
	if o.TotalShards < 1 {
		return nil, fmt.Errorf("--total-shards must be >= 1; got %d", o.TotalShards)
	}
	if o.QueryBlock < 0 {
		return nil, fmt.Errorf("--query-block must be >= 0; got %d", o.QueryBlock)
	}
	switch o.ShardBy {
	case "":
		o.ShardBy = "contiguous"
	case "contiguous", "modulo":
	default:
		return nil, fmt.Errorf("--shard-by must be contiguous or modulo; got %q", o.ShardBy)
	}
	abs, err := filepath.Abs(o.Spec)
	if err != nil {
		return nil, err
	}
	specBytes, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read run file: %w", o.Spec, err)
	}
	sess, err := runspec.Open(ctx, abs, runspec.Options{DigestCache: runspec.DefaultDigestCache()})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	spec := sess.Spec
	if len(spec.Compression) > 1 || (len(spec.Compression) == 1 && spec.Compression[0].IsEnabled()) {
		return nil, fmt.Errorf("%s: paired compression is not available in the Beam pipeline; run `vertebrae retrieval compress` on the merged endpoints", o.Spec)
	}
	if err := spec.Retrieval.Validate(); err != nil {
		return nil, err
	}
	raw, err := location.Open(ctx, o.Store)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	st := artifact.New(raw)
	ds := sess.Dataset
	relKey, _, err := st.WriteRelevance(ctx, ds, "")
	if err != nil {
		return nil, err
	}
	p, err := distributed.NewPlan(abs, specBytes, ds, o.TotalShards)
	if err != nil {
		return nil, err
	}
	cfg := spec.Retrieval
	cfgJSON, err := json.Marshal(cfg.AsMap())
	if err != nil {
		return nil, err
	}
	job := &Job{Spec: abs, Store: o.Store, Plan: p, RelevanceKey: relKey, Config: cfgJSON, TotalShards: o.TotalShards,
		QueryBlock: o.QueryBlock, ShardBy: o.ShardBy, ONNXRuntimeLib: o.ONNXRuntimeLib, Endpoints: map[string]Pair{}}
	for i := range spec.Extractors {
		name := spec.Extractors[i].Name
		entry, err := sess.Entry(ctx, name, o.ONNXRuntimeLib)
		if err != nil {
			return nil, err
		}
		pe, err := distributed.PlanExtractor(ctx, st, ds, name, entry, spec.Embedding.BatchSize, p, o.TotalShards)
		if err != nil {
			return nil, err
		}
		p.Extractors = append(p.Extractors, pe)
		pair := Pair{Query: pe.Endpoints[0].OutputKey, Gallery: pe.Endpoints[1].OutputKey,
			NQuery: pe.Endpoints[0].NSamples, NGal: pe.Endpoints[1].NSamples}
		job.Endpoints[name] = pair
		ef, err := artifact.EvaluationFingerprint(pair.Query, pair.Gallery, relKey, "", cfg.ProtocolFields())
		if err != nil {
			return nil, err
		}
		job.ScoreKeys = append(job.ScoreKeys, artifact.ScoreKey(ef))
	}
	return job, nil
}

// Report reconstructs the ranked result of a finished job from its score
// artifacts (`retrieval from-artifacts`, SPEC §10.8) and returns the JSON
// report.
func Report(ctx context.Context, job *Job) ([]byte, error) {
	raw, err := location.Open(ctx, job.Store)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	rc, err := artifact.New(raw).FromArtifacts(ctx, job.ScoreKeys)
	if err != nil {
		return nil, err
	}
	return rc.MarshalReport()
}

func (j *Job) hasScoreKey(k string) bool {
	for _, s := range j.ScoreKeys {
		if s == k {
			return true
		}
	}
	return false
}

func (j *Job) config() (retrieval.Config, error) { return retrieval.ConfigFromJSON(j.Config) }

func (j *Job) encode() string {
	b, err := json.Marshal(j)
	if err != nil {
		panic(err) // a Job is plain data; marshalling cannot fail
	}
	return string(b)
}

func decodeJob(s string) (*Job, error) {
	j := &Job{}
	if err := json.Unmarshal([]byte(s), j); err != nil {
		return nil, fmt.Errorf("corrupt pipeline job: %w", err)
	}
	return j, nil
}
