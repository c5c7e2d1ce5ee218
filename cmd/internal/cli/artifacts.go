package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/runspec"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/cmd/internal/outputset"
	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/distributed"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/report"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/location"
)

// DefaultStore is the --store default (SPEC §6.8).
const DefaultStore = location.DefaultURI

// artifactFlags are the flags every artifact command shares.
type artifactFlags struct {
	store      string
	outputJSON string
}

func (a *artifactFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.store, "store", DefaultStore, "artifact store: a path, file://, s3://bucket/prefix, gs://bucket/prefix or mem://")
	cmd.Flags().StringVar(&a.outputJSON, "output-json", "", "write the command's JSON document to PATH instead of stdout")
	// Targets are checked before any work (SPEC §6.1, exit 2).
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		set := a.outputs(cmd)
		if a.outputJSON != "" && a.outputJSON != "-" {
			set.Add("--output-json", a.outputJSON, nil)
		}
		return set.Check()
	}
}

// outputs is an empty output set guarding the files the command reads
// (--spec, --plan, --config) against being overwritten by an output.
func (a *artifactFlags) outputs(cmd *cobra.Command) *outputset.Set {
	var set outputset.Set
	for _, name := range []string{"spec", "plan", "config"} {
		if f := cmd.Flags().Lookup(name); f != nil {
			set.Input(f.Value.String())
		}
	}
	return &set
}

func (a *artifactFlags) open(ctx context.Context) (*artifact.Store, func(), error) {
	st, err := location.Open(ctx, a.store)
	if err != nil {
		return nil, nil, err
	}
	return artifact.New(st), func() { _ = st.Close() }, nil
}

// print writes doc as one JSON document (2-space indent, sorted keys) to
// stdout or, through the output set, to --output-json.
func (a *artifactFlags) print(cmd *cobra.Command, doc any, stdout io.Writer) error {
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	out, err := results.Canonicalize(raw)
	if err != nil {
		return err
	}
	return a.commit(cmd, a.outputs(cmd), out, stdout)
}

// commit writes set, plus doc at --output-json (or doc to stdout), as one
// all-or-nothing set (SPEC §6.1).
func (a *artifactFlags) commit(cmd *cobra.Command, set *outputset.Set, doc []byte, stdout io.Writer) error {
	if a.outputJSON == "" || a.outputJSON == "-" {
		if err := set.Commit(cmd.Context()); err != nil {
			return err
		}
		_, err := stdout.Write(doc)
		return err
	}
	set.AddBytes("--output-json", a.outputJSON, doc)
	return set.Commit(cmd.Context())
}

// newArtifactCmds returns the §6.8 commands.
func newArtifactCmds(stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{
		newPlanCmd(stdout), newEmbedShardCmd(stdout), newMergeCmd(stdout), newWriteRelevanceCmd(stdout),
		newCompressArtifactCmd(stdout), newScoreCmd(stdout), newFromArtifactsCmd(stdout), newLsCmd(stdout),
	}
}

// ---- ls ----

func newLsCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var prefix string
	cmd := &cobra.Command{
		Use: "ls", Short: "List the committed artifact keys of a store (optionally below --prefix)", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKeys(prefix); err != nil {
				return err
			}
			st, done, err := af.open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			keys := []string{}
			for k, err := range st.Keys(cmd.Context(), prefix) {
				if err != nil {
					return err
				}
				keys = append(keys, k)
			}
			return af.print(cmd, map[string]any{"keys": keys}, stdout)
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&prefix, "prefix", "", "list only keys at or below this key (e.g. retrieval/scores)")
	return cmd
}

// checkKeys rejects malformed artifact keys given on the command line as
// usage errors (SPEC §10.4 "invalid artifact key").
func checkKeys(keys ...string) error {
	for _, k := range keys {
		if k == "" {
			continue
		}
		if err := artifact.ValidateKey(k); err != nil {
			return &UsageError{Msg: err.Error()}
		}
	}
	return nil
}

// loadSpecContext loads a run file and its dataset (runspec.Open) with the
// environment's digest cache.
func loadSpecContext(ctx context.Context, path string) (*runspec.Session, error) {
	if path == "" {
		return nil, usagef("--spec is required")
	}
	return runspec.Open(ctx, path, runspec.Options{DigestCache: runspec.DefaultDigestCache()})
}

// buildExtractor builds the run file's extractor called name.
func buildExtractor(ctx context.Context, sc *runspec.Session, name, onnxLib string) (*runspec.Extractor, extract.Extractor, error) {
	e, err := sc.Lookup(name)
	if err != nil {
		return nil, nil, err
	}
	x, err := sc.Build(ctx, e, onnxLib)
	return e, x, err
}

// ---- write-relevance ----

func newWriteRelevanceCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var spec, outputKey string
	cmd := &cobra.Command{
		Use: "write-relevance", Short: "Write the relevance artifact of a run file's dataset", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKeys(outputKey); err != nil {
				return err
			}
			sc, err := loadSpecContext(cmd.Context(), spec)
			if err != nil {
				return err
			}
			defer sc.Close()
			st, done, err := af.open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			key, doc, err := st.WriteRelevance(cmd.Context(), sc.Dataset, outputKey)
			if err != nil {
				return err
			}
			return af.print(cmd, map[string]any{"artifact_type": artifact.TypeRelevance, "key": key,
				"dataset_identity_key": doc.DatasetIdentityKey, "protocol_fingerprint": doc.ProtocolFingerprint,
				"n_queries": doc.NQueries, "n_gallery": doc.NGallery, "n_exclusions": len(doc.Exclusions)}, stdout)
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&spec, "spec", "", "run file naming the dataset")
	cmd.Flags().StringVar(&outputKey, "output-key", "", "artifact key (default retrieval/relevance/<dataset key>)")
	return cmd
}

// ---- plan / embed-shard / merge ----
// The logic lives in package shard (engine-free, shared with the Beam
// pipeline); these commands load the run file and print the documents.

// Plan is the document `plan` writes (SPEC §11.2).
type Plan = distributed.Plan

// PlanExtractor is one extractor of a plan.
type PlanExtractor = distributed.Extractor

// PlanEndpoint is one endpoint of a plan extractor.
type PlanEndpoint = distributed.Endpoint

// PlanShard is one extraction shard.
type PlanShard = distributed.Shard

func newPlanCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var spec, only, onnxLib string
	var total int
	cmd := &cobra.Command{
		Use: "plan", Short: "Resolve endpoint keys, cache status and extraction shards of a run file", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if total < 1 {
				return usagef("--total-shards must be >= 1; got %d", total)
			}
			ctx := cmd.Context()
			sc, err := loadSpecContext(cmd.Context(), spec)
			if err != nil {
				return err
			}
			defer sc.Close()
			st, done, err := af.open(ctx)
			if err != nil {
				return err
			}
			defer done()
			specBytes, err := os.ReadFile(spec)
			if err != nil {
				return err
			}
			abs, err := filepath.Abs(spec)
			if err != nil {
				return err
			}
			p, err := distributed.NewPlan(abs, specBytes, sc.Dataset, total)
			if err != nil {
				return err
			}
			found := only == ""
			for i := range sc.Spec.Extractors {
				e := &sc.Spec.Extractors[i]
				if only != "" && e.Name != only {
					continue
				}
				found = true
				_, x, err := buildExtractor(ctx, sc, e.Name, onnxLib)
				if err != nil {
					return err
				}
				pe, err := planExtractor(ctx, st, sc, e, x, p, total)
				if err != nil {
					return err
				}
				p.Extractors = append(p.Extractors, pe)
			}
			if !found {
				_, _, err := buildExtractor(ctx, sc, only, onnxLib)
				return err
			}
			return af.print(cmd, p, stdout)
		},
	}
	af.register(cmd)
	cmd.Flags().StringVar(&spec, "spec", "", "run file")
	cmd.Flags().IntVar(&total, "total-shards", 1, "extraction shards per endpoint")
	cmd.Flags().StringVar(&only, "extractor", "", "plan only this extractor")
	cmd.Flags().StringVar(&onnxLib, "onnxruntime-lib", "", "ONNX Runtime shared library for ONNX extractors")
	return cmd
}

func planExtractor(ctx context.Context, st *artifact.Store, sc *runspec.Session, e *runspec.Extractor, x extract.Extractor, p *Plan, total int) (PlanExtractor, error) {
	return distributed.PlanExtractor(ctx, st, sc.Dataset, e.Name, e.Entry(x), sc.Spec.Embedding.BatchSize, p, total)
}

func readPlan(path string) (*Plan, error) {
	if path == "" {
		return nil, usagef("--plan is required")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read plan: %w", path, err)
	}
	return distributed.ParsePlan(path, data)
}

// planEndpoint is (*Plan).Endpoint with its errors as usage errors.
// planEndpoint reads the plan file and finds the endpoint of extractor
// name on side; an unknown extractor or side is a usage error.
func planEndpoint(planPath, name, side string) (*Plan, *PlanExtractor, *PlanEndpoint, error) {
	p, err := readPlan(planPath)
	if err != nil {
		return nil, nil, nil, err
	}
	pe, ep, err := p.Endpoint(name, side)
	var ee *distributed.EndpointError
	if errors.As(err, &ee) {
		return nil, nil, nil, &UsageError{Msg: ee.Msg}
	}
	return p, pe, ep, err
}

// shardIndex resolves --shard-index, JOB_COMPLETION_INDEX, then
// SLURM_ARRAY_TASK_ID (SPEC §6.8).
func shardIndex(cmd *cobra.Command, flag int, total int) (int, error) {
	v, src := "", ""
	switch {
	case cmd.Flags().Changed("shard-index"):
		v, src = strconv.Itoa(flag), "--shard-index"
	case os.Getenv("JOB_COMPLETION_INDEX") != "":
		v, src = os.Getenv("JOB_COMPLETION_INDEX"), "JOB_COMPLETION_INDEX"
	case os.Getenv("SLURM_ARRAY_TASK_ID") != "":
		v, src = os.Getenv("SLURM_ARRAY_TASK_ID"), "SLURM_ARRAY_TASK_ID"
	default:
		return 0, usagef("shard index required (--shard-index, JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID)")
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 || i >= total {
		return 0, usagef("%s=%s: shard index must lie in [0, %d)", src, v, total)
	}
	return i, nil
}

func newEmbedShardCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var planPath, name, side, onnxLib string
	var index int
	cmd := &cobra.Command{
		Use: "embed-shard", Short: "Encode one extraction shard of a planned endpoint", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, pe, ep, err := planEndpoint(planPath, name, side)
			if err != nil {
				return err
			}
			out := map[string]any{"artifact_type": artifact.TypeEmbeddingShard, "extractor": name, "side": side,
				"endpoint_key": ep.OutputKey, "cache_status": ep.CacheStatus}
			if ep.CacheStatus == artifact.CacheHit {
				out["key"] = nil
				return af.print(cmd, out, stdout)
			}
			i, err := shardIndex(cmd, index, len(ep.Shards))
			if err != nil {
				return err
			}
			sh := ep.Shards[i]
			sc, err := loadSpecContext(ctx, p.Spec)
			if err != nil {
				return err
			}
			defer sc.Close()
			if sc.Dataset.IdentityKey() != p.DatasetIdentityKey {
				return fmt.Errorf("plan %s: the dataset of %s changed since planning (identity %s, plan says %s)", planPath, p.Spec, sc.Dataset.IdentityKey(), p.DatasetIdentityKey)
			}
			e, x, err := buildExtractor(ctx, sc, name, onnxLib)
			if err != nil {
				return err
			}
			rh, err := artifact.RecipeHash(x.Recipe())
			if err != nil {
				return fmt.Errorf("plan %s: extractor %s: %w", planPath, name, err)
			}
			if rh != pe.RecipeHash {
				return fmt.Errorf("plan %s: the recipe of extractor %s changed since planning (recipe hash %s, plan says %s)", planPath, name, rh, pe.RecipeHash)
			}
			st, done, err := af.open(ctx)
			if err != nil {
				return err
			}
			defer done()
			// Before encoding: the plan's key may receive a shard (a plan is
			// user-editable; it never overwrites another artifact).
			if err := st.CheckOutput(ctx, sh.OutputKey, artifact.TypeEmbeddingShard); err != nil {
				return err
			}
			if err := distributed.LoadState(ctx, st, pe, x); err != nil { // workers never fit (SPEC §11.2)
				return err
			}
			m, ids, err := distributed.Encode(ctx, sc.Dataset, e.Entry(x), sc.Spec.Embedding.StreamingEnabled, side, sh)
			if err != nil {
				return err
			}
			// A persistent command worker must exit 0 once its stdin is
			// closed (SPEC §9.4) before the shard counts as written.
			if s, ok := x.(interface{ Shutdown(context.Context) error }); ok {
				if err := s.Shutdown(ctx); err != nil {
					return err
				}
			}
			if err := distributed.Write(ctx, st, pe, ep, sh, x.Recipe(), m, ids); err != nil {
				return err
			}
			out["key"] = sh.OutputKey
			out["shard_index"], out["total_shards"], out["rows"] = sh.ShardIndex, sh.TotalShards, m.Rows()
			return af.print(cmd, out, stdout)
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.StringVar(&planPath, "plan", "", "plan file written by `vertebrae retrieval plan`")
	f.StringVar(&name, "extractor", "", "extractor name")
	f.StringVar(&side, "side", "", "query or gallery")
	f.IntVar(&index, "shard-index", 0, "0-based shard index (default $JOB_COMPLETION_INDEX, then $SLURM_ARRAY_TASK_ID)")
	f.StringVar(&onnxLib, "onnxruntime-lib", "", "ONNX Runtime shared library for ONNX extractors")
	return cmd
}

func newMergeCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var planPath, name, side string
	cmd := &cobra.Command{
		Use: "merge", Short: "Validate and merge the extraction shards of a planned endpoint", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, pe, ep, err := planEndpoint(planPath, name, side)
			if err != nil {
				return err
			}
			out := map[string]any{"artifact_type": artifact.TypeEmbedding, "extractor": name, "side": side,
				"key": ep.OutputKey, "cache_status": ep.CacheStatus, "n_shards": len(ep.Shards)}
			if ep.CacheStatus == artifact.CacheHit {
				return af.print(cmd, out, stdout)
			}
			st, done, err := af.open(ctx)
			if err != nil {
				return err
			}
			defer done()
			if err := st.CheckOutput(ctx, ep.OutputKey, artifact.TypeEmbedding); err != nil {
				return err
			}
			rows, cols, err := distributed.WriteMerged(ctx, st, pe, ep)
			if err != nil {
				return err
			}
			out["shape"] = []int{rows, cols}
			return af.print(cmd, out, stdout)
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.StringVar(&planPath, "plan", "", "plan file written by `vertebrae retrieval plan`")
	f.StringVar(&name, "extractor", "", "extractor name")
	f.StringVar(&side, "side", "", "query or gallery")
	return cmd
}

// ---- compress ----

func newCompressArtifactCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var qk, gk, configPath, prefix string
	cmd := &cobra.Command{
		Use: "compress", Short: "Paired compression of two endpoint artifacts", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if qk == "" || gk == "" || configPath == "" {
				return usagef("--query-key, --gallery-key and --config are required")
			}
			if err := checkKeys(qk, gk, prefix); err != nil {
				return err
			}
			m, err := readConfigFile(configPath, "compression")
			if err != nil {
				return err
			}
			cfg, err := compress.ConfigFromMap(m)
			if err != nil {
				return &UsageError{Msg: fmt.Sprintf("%s: %v", configPath, err)}
			}
			st, done, err := af.open(ctx)
			if err != nil {
				return err
			}
			defer done()
			sum, err := st.Compress(ctx, qk, gk, cfg, prefix)
			if err != nil {
				return err
			}
			cm := sum.CompressionMetadata
			return af.print(cmd, map[string]any{"artifact_type": artifact.TypeCompression, "key": sum.OutputKey,
				"query_output_key": sum.QueryOutputKey, "gallery_output_key": sum.GalleryOutputKey,
				"applied": cm["applied"], "warnings": cm["warnings"], "cache_status": sum.CacheStatus}, stdout)
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.StringVar(&qk, "query-key", "", "query endpoint artifact key")
	f.StringVar(&gk, "gallery-key", "", "gallery endpoint artifact key")
	f.StringVar(&configPath, "config", "", "YAML/JSON compression config (a CompressionConfig mapping)")
	f.StringVar(&prefix, "output-prefix", "", "artifact key of the compression (default retrieval/compressions/…)")
	return cmd
}

// readConfigFile reads a YAML or JSON mapping; when it holds a `section`
// mapping (e.g. a run file's `retrieval`), that is returned.
func readConfigFile(path, section string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read config: %w", path, err) // an input error (exit 1), like any unreadable input
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, &UsageError{Msg: fmt.Sprintf("%s: config must be a YAML or JSON mapping: %v", path, err)}
	}
	if sub, ok := m[section].(map[string]any); ok {
		return sub, nil
	}
	if _, runFile := m["dataset"]; runFile {
		return map[string]any{}, nil // a run file without that section: defaults
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// ---- score ----

func newScoreCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var req artifact.ScoreRequest
	var configPath, shardBy, stage string
	var total, index int
	var finalize bool
	var maxBytes int64
	cmd := &cobra.Command{
		Use: "score", Short: "Score two endpoint artifacts under a relevance artifact, optionally gallery-sharded (docs/artifacts.md)", Args: noArgs,
		Long: `Score two endpoint artifacts under a relevance artifact (docs/artifacts.md).

Gallery-sharded scoring: with --total-shards N each run scores
gallery shard I (--shard-index, else $JOB_COMPLETION_INDEX, else
$SLURM_ARRAY_TASK_ID) and writes the partial
<score key>/partials/<I:05d>-of-<N:05d>; with a bidirectional config it also
holds shard I's block of reverse queries. Re-running a shard rewrites
identical content. --total-shards N --finalize then merges all N partials
exactly and writes the score artifact at the score key, bit-identical to an
unsharded score; it fails naming the first missing or foreign partial.

Shards that read only their rows: run every shard with --stage positives
first (it scores the eligible positives among its gallery rows and writes
<score key>/positives/<I:05d>-of-<N:05d>), then every shard with the default
--stage count: it reads its own rows and every stage's positive scores. A
contiguous shard reads its row range of the gallery (verified chunk reads),
a modulo shard the extraction shard with its index when the gallery was
embedded in N shards. Without positives stages a shard reads the whole
gallery and scores the positives itself.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ch := cmd.Flags().Changed
			sharded := ch("total-shards")
			switch {
			case !sharded && (ch("shard-index") || ch("shard-by") || finalize):
				return usagef("--shard-index, --shard-by and --finalize need --total-shards")
			case sharded && total < 1:
				return usagef("--total-shards must be >= 1, got %d", total)
			case finalize && ch("shard-index"):
				return usagef("--finalize merges every shard; it takes no --shard-index")
			case stage != "count" && stage != "positives":
				return usagef("--stage must be positives or count, got %q", stage)
			case stage == "positives" && (!sharded || finalize):
				return usagef("--stage positives scores one gallery shard: it needs --total-shards and a shard index, not --finalize")
			}
			layout, err := rank.ParseShardLayout(shardBy)
			if err != nil {
				return usagef("--shard-by: %v", err)
			}
			if req.QueryKey == "" || req.GalleryKey == "" || req.RelevanceKey == "" {
				return usagef("--query-key, --gallery-key and --relevance-key are required")
			}
			if err := checkKeys(req.QueryKey, req.GalleryKey, req.RelevanceKey, req.ExclusionsKey, req.OutputKey); err != nil {
				return err
			}
			shard := -1
			if sharded && !finalize {
				if shard, err = shardIndex(cmd, index, total); err != nil {
					return err
				}
			}
			req.Config = retrieval.DefaultConfig()
			if configPath != "" {
				m, err := readConfigFile(configPath, "retrieval")
				if err != nil {
					return err
				}
				if req.Config, err = retrieval.ConfigFromMap(m); err != nil {
					return err
				}
			}
			st, done, err := af.open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			if ch("max-memory-bytes") {
				if maxBytes < 1 {
					return usagef("--max-memory-bytes must be positive")
				}
				ctx, restore := withMemoryGuard(cmd.Context(), maxBytes) // also the Go runtime's soft limit
				defer restore()
				cmd.SetContext(ctx)
			}
			if shard >= 0 && stage == "positives" {
				key, doc, err := st.ScorePositivesStage(cmd.Context(), req, rank.Shard{Index: shard, Total: total, Layout: layout})
				if err != nil {
					return err
				}
				return af.print(cmd, map[string]any{"artifact_type": artifact.TypeEvaluationPositives, "key": key,
					"score_key": doc.ScoreKey, "shard_index": shard, "total_shards": total, "n_positives": doc.NPositives,
					"evaluation_fingerprint": doc.EvaluationFingerprint}, stdout)
			}
			if shard >= 0 {
				res, err := st.ScorePartial(cmd.Context(), req, rank.Shard{Index: shard, Total: total, Layout: layout})
				if err != nil {
					return err
				}
				return af.print(cmd, map[string]any{"artifact_type": artifact.TypeEvaluationPartial, "key": res.Key,
					"score_key": res.ScoreKey, "shard_index": shard, "total_shards": total,
					"evaluation_fingerprint": res.Doc.EvaluationFingerprint}, stdout)
			}
			var res *artifact.Scored
			if finalize {
				want := ""
				if ch("shard-by") {
					want = layout.String()
				}
				res, err = st.FinalizeScore(cmd.Context(), req, total, want)
			} else {
				res, err = st.Score(cmd.Context(), req)
			}
			if err != nil {
				return err
			}
			return af.print(cmd, map[string]any{"artifact_type": artifact.TypeEvaluation, "key": res.Key,
				"primary_score": res.Doc.PrimaryScore, "protocol_fingerprint": res.Doc.ProtocolFingerprint,
				"evaluation_fingerprint": res.Doc.EvaluationFingerprint, "cache_status": res.Doc.CacheStatus}, stdout)
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.StringVar(&req.QueryKey, "query-key", "", "query endpoint artifact key")
	f.StringVar(&req.GalleryKey, "gallery-key", "", "gallery endpoint artifact key")
	f.StringVar(&req.RelevanceKey, "relevance-key", "", "relevance artifact key")
	f.StringVar(&req.ExclusionsKey, "exclusions-key", "", "exclusions artifact overriding the relevance document's exclusions")
	f.StringVar(&configPath, "config", "", "YAML/JSON retrieval config (a RetrievalConfig mapping or a run file's retrieval section)")
	f.StringVar(&req.OutputKey, "output-key", "", "artifact key (default retrieval/scores/v2-<evaluation fingerprint>)")
	f.IntVar(&req.Threads, "threads", 0, "worker goroutines, 0 = GOMAXPROCS (performance only)")
	f.IntVar(&total, "total-shards", 0, "gallery shards N: score one shard (with --shard-index) or merge all (with --finalize)")
	f.IntVar(&index, "shard-index", 0, "gallery shard to score, 0-based (default $JOB_COMPLETION_INDEX, then $SLURM_ARRAY_TASK_ID)")
	f.StringVar(&shardBy, "shard-by", "contiguous", "gallery shard layout: contiguous (row ranges) or modulo (rows i, i+N, …)")
	f.BoolVar(&finalize, "finalize", false, "merge the N gallery-shard partials into the score artifact")
	f.StringVar(&stage, "stage", "count", "sharded stage: positives (score the positives among the shard's rows) or count (count over them; reads only the shard's rows once every positives stage ran)")
	f.Var(byteSize{&maxBytes}, "max-memory-bytes", "memory budget for the endpoints a worker loads, K/M/G/T or KiB/MiB/GiB/TiB suffixes allowed (default: unchecked)")
	return cmd
}

// ---- from-artifacts ----

func newFromArtifactsCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var keys []string
	var outputKey, jsonPath, mdPath, csvPath string
	cmd := &cobra.Command{
		Use: "from-artifacts", Short: "Reconstruct a ranked result from score artifacts", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(keys) == 0 {
				return usagef("at least one --score-key is required")
			}
			if err := checkKeys(append([]string{outputKey}, keys...)...); err != nil {
				return err
			}
			reports := []struct{ flag, path string }{{"--json", jsonPath}, {"--markdown", mdPath}, {"--csv", csvPath}}
			check := af.outputs(cmd)
			for _, p := range reports {
				if p.path == "-" {
					return usagef("%s writes a file; the JSON report goes to stdout (or --output-json)", p.flag)
				}
				if p.path != "" {
					check.Add(p.flag, p.path, nil)
				}
			}
			if af.outputJSON != "" {
				check.Add("--output-json", af.outputJSON, nil)
			}
			if err := check.Check(); err != nil { // before any work (SPEC §6.1)
				return err
			}
			st, done, err := af.open(ctx)
			if err != nil {
				return err
			}
			defer done()
			if outputKey != "" {
				if err := st.CheckOutput(ctx, outputKey, artifact.TypeReport, artifact.ExplicitKey()); err != nil {
					return err
				}
			}
			rc, err := st.FromArtifacts(ctx, keys)
			if err != nil {
				return err
			}
			// Render everything before writing anything (SPEC §6.1).
			jsonData, err := rc.MarshalReport()
			if err != nil {
				return err
			}
			set := af.outputs(cmd)
			if jsonPath != "" {
				set.AddBytes("--json", jsonPath, jsonData)
			}
			if mdPath != "" {
				md, err := rc.Markdown()
				if err != nil {
					return err
				}
				set.AddBytes("--markdown", mdPath, md)
			}
			if csvPath != "" {
				set.Add("--csv", csvPath, func(w io.Writer) error { return report.CSV(w, rc.Benchmark()) })
			}
			if outputKey != "" {
				var doc map[string]any
				if err := json.Unmarshal(jsonData, &doc); err != nil {
					return err
				}
				doc["artifact_type"], doc["output_key"] = artifact.TypeReport, outputKey
				doc["vertebrae_version"] = version.Version
				if err := st.WriteJSON(ctx, outputKey, doc, artifact.ExplicitKey()); err != nil {
					return err
				}
			}
			return af.commit(cmd, set, jsonData, stdout)
		},
	}
	af.register(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&keys, "score-key", nil, "score artifact key (repeatable or comma-separated)")
	f.StringVar(&outputKey, "output-key", "", "also store the reconstruction at this artifact key")
	f.StringVar(&jsonPath, "json", "", "write the JSON report to PATH")
	f.StringVar(&mdPath, "markdown", "", "write the Markdown report to PATH")
	f.StringVar(&csvPath, "csv", "", "write per-query metrics as CSV to PATH")
	return cmd
}
