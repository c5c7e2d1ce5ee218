package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/outputset"
	"github.com/vertebrae-eval/vertebrae/internal/version"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/report"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/runspec"
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

// specContext is a loaded run file with its dataset.
type specContext struct {
	spec    *runspec.Spec
	ds      *retrieval.Dataset
	tables  endpointTables
	closers []func() error
}

func (s *specContext) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]()
	}
}

func loadSpecContext(ctx context.Context, path string) (*specContext, error) {
	if path == "" {
		return nil, usagef("--spec is required")
	}
	spec, err := runspec.Load(path)
	if err != nil {
		return nil, err
	}
	sc := &specContext{spec: spec}
	if sc.ds, sc.tables, err = specDataset(ctx, spec, &sc.closers); err != nil {
		sc.close()
		return nil, err
	}
	return sc, nil
}

func (s *specContext) extractor(ctx context.Context, name, onnxLib string) (*runspec.Extractor, extract.Extractor, error) {
	for i := range s.spec.Extractors {
		e := &s.spec.Extractors[i]
		if e.Name == name {
			x, err := specExtractor(ctx, s.spec, e, s.tables, onnxLib, &s.closers)
			return e, x, err
		}
	}
	names := make([]string, len(s.spec.Extractors))
	for i, e := range s.spec.Extractors {
		names[i] = e.Name
	}
	return nil, nil, usagef("run file %s has no extractor %q (extractors: %s)", s.spec.Path, name, strings.Join(names, ", "))
}

// ---- write-relevance ----

func newWriteRelevanceCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var spec, outputKey string
	cmd := &cobra.Command{
		Use: "write-relevance", Short: "Write the relevance artifact of a run file's dataset (SPEC §10.6)", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKeys(outputKey); err != nil {
				return err
			}
			sc, err := loadSpecContext(cmd.Context(), spec)
			if err != nil {
				return err
			}
			defer sc.close()
			st, done, err := af.open(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			key, doc, err := st.WriteRelevance(cmd.Context(), sc.ds, outputKey)
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

// Plan is the document `plan` writes (SPEC §11.2).
type Plan struct {
	PlanVersion        int             `json:"plan_version"`
	Spec               string          `json:"spec"`
	RunID              string          `json:"run_id"`
	TotalShards        int             `json:"total_shards"`
	DatasetIdentityKey string          `json:"dataset_identity_key"`
	RelevanceKey       string          `json:"relevance_key"`
	Extractors         []PlanExtractor `json:"extractors"`
}

// PlanExtractor is one extractor of a plan.
type PlanExtractor struct {
	Name               string         `json:"name"`
	ExtractorType      string         `json:"extractor_type"`
	DatasetIdentityKey string         `json:"dataset_identity_key"`
	RecipeHash         string         `json:"recipe_hash"`
	FittedStateKey     *string        `json:"fitted_state_key"`
	Endpoints          []PlanEndpoint `json:"endpoints"`
}

// PlanEndpoint is one endpoint of a plan extractor.
type PlanEndpoint struct {
	Side          string      `json:"side"`
	Branch        string      `json:"branch"`
	Modality      string      `json:"modality"`
	NSamples      int         `json:"n_samples"`
	OutputKey     string      `json:"output_key"`
	CacheEligible bool        `json:"cache_eligible"`
	CacheStatus   string      `json:"cache_status"`
	Shards        []PlanShard `json:"shards"`
}

// PlanShard is one extraction shard.
type PlanShard struct {
	ShardIndex  int    `json:"shard_index"`
	TotalShards int    `json:"total_shards"`
	OutputKey   string `json:"output_key"`
	BatchSize   int    `json:"batch_size"`
}

func newPlanCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var spec, only, onnxLib string
	var total int
	cmd := &cobra.Command{
		Use: "plan", Short: "Resolve endpoint keys, cache status and extraction shards of a run file (SPEC §11.2)", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if total < 1 {
				return usagef("--total-shards must be >= 1; got %d", total)
			}
			ctx := cmd.Context()
			sc, err := loadSpecContext(cmd.Context(), spec)
			if err != nil {
				return err
			}
			defer sc.close()
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
			dk := sc.ds.IdentityKey()
			// One run id per plan, derived from the plan's inputs so that
			// planning twice gives the same keys (idempotency, SPEC §6.8).
			sum := sha256.Sum256(specBytes)
			rid, err := canonjson.Hash(map[string]any{"spec_sha256": hex.EncodeToString(sum[:]), "dataset_identity_key": dk, "total_shards": total})
			if err != nil {
				return err
			}
			p := &Plan{PlanVersion: 1, Spec: abs, RunID: rid[:32], TotalShards: total, DatasetIdentityKey: dk,
				RelevanceKey: artifact.RelevanceKey(dk)}
			found := only == ""
			for i := range sc.spec.Extractors {
				e := &sc.spec.Extractors[i]
				if only != "" && e.Name != only {
					continue
				}
				found = true
				_, x, err := sc.extractor(ctx, e.Name, onnxLib)
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
				_, _, err := sc.extractor(ctx, only, onnxLib)
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

func planExtractor(ctx context.Context, st *artifact.Store, sc *specContext, e *runspec.Extractor, x extract.Extractor, p *Plan, total int) (PlanExtractor, error) {
	entry := extract.Entry{Extractor: x, QueryBranch: e.QueryBranch, GalleryBranch: e.GalleryBranch}
	if err := extract.Check(entry, sc.ds.Queries().Modality(), sc.ds.Gallery().Modality()); err != nil {
		return PlanExtractor{}, err
	}
	if f, ok := x.(extract.Fitter); ok && e.QueryBranch == "" {
		if _, ok := f.(extract.StatefulFitter); !ok {
			return PlanExtractor{}, fmt.Errorf("Extractor %s cannot be distributed: fitted state is not serialisable", e.Name)
		}
		return PlanExtractor{}, fmt.Errorf("Extractor %s: fitted extractors are not supported by plan in this build", e.Name)
	}
	recipe := x.Recipe()
	rh, err := artifact.RecipeHash(recipe)
	if err != nil {
		return PlanExtractor{}, err
	}
	eligible, status := extract.CacheEligibility(recipe, e.Cache)
	pe := PlanExtractor{Name: e.Name, ExtractorType: typeOrUnknown(x.Type()), DatasetIdentityKey: p.DatasetIdentityKey, RecipeHash: rh}
	batch := sc.spec.Embedding.BatchSize
	for _, side := range []struct {
		name, branch string
		items        retrieval.Items
	}{{artifact.SideQuery, e.QueryBranch, sc.ds.Queries()}, {artifact.SideGallery, e.GalleryBranch, sc.ds.Gallery()}} {
		bk, err := artifact.BranchKey(side.branch)
		if err != nil {
			return pe, err
		}
		key := artifact.EndpointKey(p.DatasetIdentityKey, rh, side.name, bk)
		if !eligible {
			key = artifact.RunScopedKey(p.RunID, key)
		}
		ep := PlanEndpoint{Side: side.name, Branch: side.branch, Modality: side.items.Modality(), NSamples: side.items.Len(),
			OutputKey: key, CacheEligible: eligible, CacheStatus: status, Shards: []PlanShard{}}
		if eligible {
			if _, err := st.ReadEndpointMeta(ctx, key); err == nil {
				ep.CacheStatus = artifact.CacheHit
			} else if !errors.Is(err, artifact.ErrNotFound) {
				return pe, err
			}
		}
		if ep.CacheStatus != artifact.CacheHit {
			n := 1
			if x.StreamingSafe() || e.QueryBranch != "" {
				n = min(total, ep.NSamples)
			}
			for i := 0; i < n; i++ {
				ep.Shards = append(ep.Shards, PlanShard{ShardIndex: i, TotalShards: n, OutputKey: artifact.ShardKey(key, i, n), BatchSize: batch})
			}
		}
		pe.Endpoints = append(pe.Endpoints, ep)
	}
	return pe, nil
}

func typeOrUnknown(t string) string {
	if t == "" {
		return "unknown"
	}
	return t
}

func readPlan(path string) (*Plan, error) {
	if path == "" {
		return nil, usagef("--plan is required")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read plan: %w", path, err)
	}
	p := &Plan{}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil || p.PlanVersion != 1 {
		return nil, fmt.Errorf("%s: not a vertebrae plan (plan_version 1): %v", path, err)
	}
	return p, nil
}

func (p *Plan) endpoint(name, side string) (*PlanExtractor, *PlanEndpoint, error) {
	if side != artifact.SideQuery && side != artifact.SideGallery {
		return nil, nil, usagef("--side must be query or gallery; got %q", side)
	}
	for i := range p.Extractors {
		pe := &p.Extractors[i]
		if pe.Name != name {
			continue
		}
		for j := range pe.Endpoints {
			if pe.Endpoints[j].Side == side {
				return pe, &pe.Endpoints[j], nil
			}
		}
	}
	return nil, nil, usagef("the plan has no extractor %q", name)
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
		Use: "embed-shard", Short: "Encode one extraction shard of a planned endpoint (SPEC §11.2)", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := readPlan(planPath)
			if err != nil {
				return err
			}
			pe, ep, err := p.endpoint(name, side)
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
			defer sc.close()
			if sc.ds.IdentityKey() != p.DatasetIdentityKey {
				return fmt.Errorf("plan %s: the dataset of %s changed since planning (identity %s, plan says %s)", planPath, p.Spec, sc.ds.IdentityKey(), p.DatasetIdentityKey)
			}
			e, x, err := sc.extractor(ctx, name, onnxLib)
			if err != nil {
				return err
			}
			if rh, err := artifact.RecipeHash(x.Recipe()); err != nil || rh != pe.RecipeHash {
				return fmt.Errorf("plan %s: the recipe of extractor %s changed since planning", planPath, name)
			}
			st, done, err := af.open(ctx)
			if err != nil {
				return err
			}
			defer done()
			m, ids, err := encodeShard(ctx, sc, e, x, side, sh)
			if err != nil {
				return err
			}
			idsSum, err := artifact.IDsSHA256(ids)
			if err != nil {
				return err
			}
			meta := &artifact.EmbeddingShard{
				Common: artifact.Common{ArtifactType: artifact.TypeEmbeddingShard, VertebraeVersion: version.Version, OutputKey: sh.OutputKey},
				EndpointIdentity: artifact.EndpointIdentity{DatasetIdentityKey: pe.DatasetIdentityKey, ExtractorRecipe: x.Recipe(),
					RecipeHash: pe.RecipeHash, Side: side, Branch: ep.Branch, Modality: ep.Modality, IDsSHA256: idsSum,
					CacheEligible: ep.CacheEligible, CacheStatus: ep.CacheStatus},
				Shard: artifact.ShardInfo{TotalShards: sh.TotalShards, ShardIndex: sh.ShardIndex}, EndpointRows: ep.NSamples, BatchSize: sh.BatchSize,
			}
			src := artifact.FromMatrix(m)
			meta.ArrayInfo = artifact.ArrayInfoOf(src, artifact.NNZOf(m))
			if err := st.WriteArray(ctx, sh.OutputKey, src, meta); err != nil {
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

// encodeShard encodes rows {r : r mod N = i} of one endpoint in ascending
// order: consecutive rows in batches of the plan's batch size when the
// shard is the whole endpoint, one row per call otherwise.
func encodeShard(ctx context.Context, sc *specContext, e *runspec.Extractor, x extract.Extractor, side string, sh PlanShard) (matrix.Matrix, []string, error) {
	items, allIDs := sc.ds.Queries(), sc.ds.QueryIDs()
	branch := e.QueryBranch
	if side == artifact.SideGallery {
		items, allIDs, branch = sc.ds.Gallery(), sc.ds.GalleryIDs(), e.GalleryBranch
	}
	n := items.Len()
	step := 1
	if sh.TotalShards == 1 {
		step = n
		if sc.spec.Embedding.StreamingEnabled && (x.StreamingSafe() || branch != "") {
			step = max(1, sh.BatchSize)
		}
	}
	var parts []matrix.Matrix
	var ids []string
	encodeRange := func(lo, hi int) error {
		b := extract.Batch{Side: side, Start: lo, Items: items.Slice(lo, hi), IDs: allIDs[lo:hi]}
		var m matrix.Matrix
		var err error
		if branch != "" {
			m, err = x.(extract.BranchEncoder).EncodeBranch(ctx, b, branch)
		} else {
			m, err = x.(extract.Encoder).Encode(ctx, b)
		}
		if err != nil {
			return fmt.Errorf("Retriever '%s' %s embeddings: %w", x.Name(), side, err)
		}
		if m == nil || m.Rows() != hi-lo {
			return fmt.Errorf("Retriever '%s' %s embeddings returned a batch of the wrong size for rows [%d, %d)", x.Name(), side, lo, hi)
		}
		parts = append(parts, m)
		ids = append(ids, allIDs[lo:hi]...)
		return nil
	}
	if sh.TotalShards == 1 {
		for lo := 0; lo < n; lo += step {
			if err := encodeRange(lo, min(n, lo+step)); err != nil {
				return nil, nil, err
			}
		}
	} else {
		for r := sh.ShardIndex; r < n; r += sh.TotalShards {
			if err := encodeRange(r, r+1); err != nil {
				return nil, nil, err
			}
		}
	}
	m, err := concatRows(parts)
	// ids_sha256 of a shard is H of its endpoint's ID list, so the merged
	// endpoint carries the hash the scorer checks against the relevance IDs.
	return m, allIDs, err
}

// concatRows stacks row batches of one kind and element type.
func concatRows(parts []matrix.Matrix) (matrix.Matrix, error) {
	if len(parts) == 0 {
		return nil, errors.New("no rows to store")
	}
	first := parts[0]
	rows := 0
	for _, p := range parts {
		if p.Sparse() != first.Sparse() || p.DType() != first.DType() || p.Cols() != first.Cols() {
			return nil, fmt.Errorf("encoder batches differ in kind, dtype or width (%s %d×%d vs %s %d×%d)",
				first.DType(), first.Rows(), first.Cols(), p.DType(), p.Rows(), p.Cols())
		}
		rows += p.Rows()
	}
	return gatherRows(parts, rows, func(r int) (int, int) {
		for i, p := range parts {
			if r < p.Rows() {
				return i, r
			}
			r -= p.Rows()
		}
		return -1, -1
	})
}

// gatherRows builds a rows×cols matrix whose row r is row j of part i for
// (i, j) = at(r); rows are visited in order.
func gatherRows(parts []matrix.Matrix, rows int, at func(r int) (int, int)) (matrix.Matrix, error) {
	first := parts[0]
	cols := first.Cols()
	if first.Sparse() {
		indptr := make([]int64, 1, rows+1)
		var indices []int32
		var vals []float64
		var buf []float64
		for r := 0; r < rows; r++ {
			i, j := at(r)
			c, ok := parts[i].(*matrix.CSR)
			if !ok {
				return nil, fmt.Errorf("unsupported sparse matrix type %T", parts[i])
			}
			var idx []int32
			idx, buf = c.RowEntries(j, buf)
			indices = append(indices, idx...)
			vals = append(vals, buf...)
			indptr = append(indptr, int64(len(indices)))
		}
		if first.DType() == matrix.Float32 {
			v32 := make([]float32, len(vals))
			for k, v := range vals {
				v32[k] = float32(v)
			}
			return matrix.NewCSR32(rows, cols, indptr, indices, v32)
		}
		return matrix.NewCSR64(rows, cols, indptr, indices, vals)
	}
	dense := make([]*matrix.Dense, len(parts))
	for i, p := range parts {
		d, ok := p.(*matrix.Dense)
		if !ok {
			return nil, fmt.Errorf("unsupported dense matrix type %T", p)
		}
		dense[i] = d
	}
	switch first.DType() {
	case matrix.Float16:
		out := make([]uint16, 0, rows*cols)
		for r := 0; r < rows; r++ {
			i, j := at(r)
			out = append(out, dense[i].Float16Bits()[j*cols:(j+1)*cols]...)
		}
		return matrix.NewDense16(rows, cols, out)
	case matrix.Float32:
		out := make([]float32, 0, rows*cols)
		for r := 0; r < rows; r++ {
			i, j := at(r)
			out = append(out, dense[i].Float32Data()[j*cols:(j+1)*cols]...)
		}
		return matrix.NewDense32(rows, cols, out)
	}
	out := make([]float64, 0, rows*cols)
	for r := 0; r < rows; r++ {
		i, j := at(r)
		out = append(out, dense[i].Float64Data()[j*cols:(j+1)*cols]...)
	}
	return matrix.NewDense64(rows, cols, out)
}

func newMergeCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var planPath, name, side string
	cmd := &cobra.Command{
		Use: "merge", Short: "Validate and merge the extraction shards of a planned endpoint (SPEC §11.2)", Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := readPlan(planPath)
			if err != nil {
				return err
			}
			pe, ep, err := p.endpoint(name, side)
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
			meta, src, nnz, cleanup, err := mergeShards(ctx, st, pe, ep)
			if err != nil {
				return err
			}
			defer cleanup()
			meta.ArrayInfo = artifact.ArrayInfoOf(src, nnz)
			if err := st.WriteArray(ctx, ep.OutputKey, src, meta); err != nil {
				return err
			}
			out["shape"] = []int{src.Rows(), src.Cols()}
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

// mergeShards checks every shard of an endpoint against the plan and the
// others (SPEC §11.2), then re-verifies each while copying its rows to
// their endpoint indices: dense shards stream into a preallocated file
// (artifact.RowAssembler), CSR shards are gathered in memory. The returned
// source is valid until cleanup.
func mergeShards(ctx context.Context, st *artifact.Store, pe *PlanExtractor, ep *PlanEndpoint) (*artifact.Embedding, artifact.Source, *int64, func(), error) {
	n := len(ep.Shards)
	if n == 0 {
		return nil, nil, nil, nil, fmt.Errorf("endpoint %s has no shards to merge", ep.OutputKey)
	}
	var first *artifact.EndpointMeta
	keys := make([]string, n)
	for i, sh := range ep.Shards {
		em, err := st.ReadEndpointMeta(ctx, sh.OutputKey)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		bad := func(format string, args ...any) error {
			return &artifact.Error{Key: sh.OutputKey, Msg: fmt.Sprintf(format, args...), Err: artifact.ErrCheck}
		}
		if em.ArtifactType != artifact.TypeEmbeddingShard || em.Shard == nil || em.Shard.ShardIndex != i || em.Shard.TotalShards != n {
			return nil, nil, nil, nil, bad("is not shard %d of %d of %s", i, n, ep.OutputKey)
		}
		if want := (ep.NSamples - i + n - 1) / n; em.NSamples != want {
			return nil, nil, nil, nil, bad("shard %d of %d has %d rows; the modulo rule gives %d", i, n, em.NSamples, want)
		}
		if first == nil {
			first = em
		} else if em.RecipeHash != first.RecipeHash || em.DatasetIdentityKey != first.DatasetIdentityKey || em.Side != first.Side ||
			em.Branch != first.Branch || em.Modality != first.Modality || em.DType != first.DType || em.Sparse != first.Sparse || em.EmbeddingDim != first.EmbeddingDim {
			return nil, nil, nil, nil, bad("shard disagrees with shard 0 on recipe, dataset identity, side, branch, modality, dtype, sparsity or width")
		}
		if em.RecipeHash != pe.RecipeHash || em.Side != ep.Side || em.DatasetIdentityKey != pe.DatasetIdentityKey {
			return nil, nil, nil, nil, bad("shard does not belong to the planned endpoint %s", ep.OutputKey)
		}
		keys[i] = sh.OutputKey
	}
	meta := &artifact.Embedding{
		Common:           artifact.Common{ArtifactType: artifact.TypeEmbedding, VertebraeVersion: version.Version, OutputKey: ep.OutputKey},
		EndpointIdentity: first.EndpointIdentity, ShardKeys: keys, NShards: n,
	}
	if first.Sparse {
		parts := make([]matrix.Matrix, n)
		for i, sh := range ep.Shards {
			m, _, err := st.ReadEndpoint(ctx, sh.OutputKey)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			parts[i] = m
		}
		m, err := gatherRows(parts, ep.NSamples, func(r int) (int, int) { return r % n, r / n })
		if err != nil {
			return nil, nil, nil, nil, err
		}
		return meta, artifact.FromMatrix(m), artifact.NNZOf(m), func() {}, nil
	}
	dt, err := matrix.ParseDType(first.DType)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	asm, err := artifact.NewRowAssembler("", ep.NSamples, first.EmbeddingDim, dt)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cleanup := func() { _ = asm.Close() }
	for i, sh := range ep.Shards {
		k := 0
		_, err := st.StreamArray(ctx, sh.OutputKey, func(b matrix.Matrix) error {
			d, ok := b.(*matrix.Dense)
			if !ok {
				return fmt.Errorf("shard batch is not dense")
			}
			idx := make([]int, d.Rows())
			for j := range idx {
				idx[j] = i + n*(k+j)
			}
			k += d.Rows()
			return asm.Put(idx, d)
		})
		if err != nil {
			cleanup()
			return nil, nil, nil, nil, err
		}
	}
	src, err := asm.Source()
	if err != nil {
		cleanup()
		return nil, nil, nil, nil, err
	}
	return meta, src, nil, cleanup, nil
}

// ---- compress ----

func newCompressArtifactCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var qk, gk, configPath, prefix string
	cmd := &cobra.Command{
		Use: "compress", Short: "Paired compression of two endpoint artifacts (SPEC §8, §10.6)", Args: noArgs,
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
		return nil, &UsageError{Msg: fmt.Sprintf("%s: cannot read config: %v", path, err)}
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
	var configPath, shardBy string
	var total, index int
	var finalize bool
	cmd := &cobra.Command{
		Use: "score", Short: "Score two endpoint artifacts under a relevance artifact (SPEC §10.7), optionally gallery-sharded (SPEC §11.3)", Args: noArgs,
		Long: `Score two endpoint artifacts under a relevance artifact (SPEC §10.7).

Gallery-sharded scoring (SPEC §11.3): with --total-shards N each run scores
gallery shard I (--shard-index, else $JOB_COMPLETION_INDEX, else
$SLURM_ARRAY_TASK_ID) and writes the partial
<score key>/partials/<I:05d>-of-<N:05d>; with a bidirectional config it also
holds shard I of the query endpoint in reverse. Re-running a shard rewrites
identical content. --total-shards N --finalize then merges all N partials
exactly and writes the score artifact at the score key, bit-identical to an
unsharded score; it fails naming the first missing or foreign partial.`,
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
	return cmd
}

// ---- from-artifacts ----

func newFromArtifactsCmd(stdout io.Writer) *cobra.Command {
	var af artifactFlags
	var keys []string
	var outputKey, jsonPath, mdPath, csvPath string
	cmd := &cobra.Command{
		Use: "from-artifacts", Short: "Reconstruct a ranked result from score artifacts (SPEC §10.8)", Args: noArgs,
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
				if err := st.WriteJSON(ctx, outputKey, doc); err != nil {
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
