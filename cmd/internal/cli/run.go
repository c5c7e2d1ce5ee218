package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats/files"
	"github.com/vertebrae-eval/vertebrae/runspec"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/memory/admit"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// runFlags are the flags of `vertebrae retrieval run` (SPEC §6.3).
type runFlags struct {
	queries, gallery             string
	queriesTensor, galleryTensor string
	queryIDs, galleryIDs         string
	qrels, qrelsFormat           string
	spec                         string
	queryIDColumn, galleryIDCol  string
	queryLabels, galleryLabels   string
	leaveOneOut                  bool
	exclusions                   string
	datasetID, datasetRevision   string
	name                         string
	config                       configFlags
	threads                      int
	onnxLib                      string
	store                        string // --store: endpoint cache of a --spec run (SPEC §9.5)
	mem                          memoryFlags
	comp                         compressFlags
	out                          outputFlags
	cmp                          compareFlags
}

// compressFlags choose paired-compression variants (SPEC §8).
type compressFlags struct {
	specs  []string
	seed   int
	whiten bool
}

func (c *compressFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&c.specs, "compress", nil, "add a compression variant (repeatable): pca:K, pca-variance:P, truncated-svd:K, gaussian-rp:K, sparse-rp:K, prefix:K, prefix-matryoshka:K, quantize:float16|int8|uint8")
	f.IntVar(&c.seed, "compress-seed", compress.DefaultRandomState, "seed of the randomised compression methods")
	f.BoolVar(&c.whiten, "whiten", false, "whiten PCA outputs")
}

// configs returns the uncompressed variant followed by the requested ones.
func (c *compressFlags) configs() ([]compress.Config, error) {
	out := []compress.Config{compress.Default()}
	for _, spec := range c.specs {
		cfg, err := compress.ParseSpec(spec, c.seed, c.whiten)
		if err != nil {
			return nil, usagef("--compress %s: %v", spec, err)
		}
		out = append(out, cfg)
	}
	if c.whiten && !slices.ContainsFunc(out, func(x compress.Config) bool { return x.Method == compress.MethodPCA }) {
		return nil, usagef("--whiten applies to pca variants only; add --compress pca:K")
	}
	return out, nil
}

// memoryFlags map onto memory.Config (SPEC §7.1); not part of the protocol.
type memoryFlags struct {
	maxBytes int64
	noSpill  bool
	spillDir string
}

func (m *memoryFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Var(byteSize{&m.maxBytes}, "max-memory-bytes", "resident memory budget in bytes, K/M/G/T or KiB/MiB/GiB/TiB suffixes allowed (default: derived from the machine)")
	f.BoolVar(&m.noSpill, "no-disk-spill", false, "fail instead of staging endpoints that do not fit the budget on disk")
	f.StringVar(&m.spillDir, "spill-dir", "", "directory for spill files (default: the OS temporary directory)")
}

func (m *memoryFlags) config(cmd *cobra.Command) (memory.Config, error) {
	cfg := memory.Default()
	if cmd.Flags().Changed("max-memory-bytes") {
		v := m.maxBytes
		cfg.MaxMemoryBytes = &v
	}
	cfg.AllowDiskSpill = !m.noSpill
	cfg.SpillDir = m.spillDir
	if err := cfg.Validate(); err != nil {
		return cfg, &UsageError{Msg: err.Error()}
	}
	return cfg, nil
}

// configFlags map onto retrieval.Config (SPEC §3.1).
type configFlags struct {
	similarity, ks, primary, gain, precision string
	bidirectional                            bool
	dropUnjudged                             bool
	worstQueries, queryBatch, galleryBatch   int
	maxPairwise                              int64
}

func (c *configFlags) register(cmd *cobra.Command) {
	def := retrieval.DefaultConfig()
	f := cmd.Flags()
	f.StringVar(&c.similarity, "similarity", def.Similarity, "cosine, dot or squared_l2")
	f.StringVar(&c.ks, "k", "1,5,10", "comma-separated cut-offs k")
	f.StringVar(&c.primary, "primary", def.PrimaryMetric, primaryHelp)
	f.StringVar(&c.gain, "gain", def.Gain, gainHelp)
	f.StringVar(&c.precision, "precision", def.Precision, "working precision: float64 or float32")
	f.BoolVar(&c.bidirectional, "bidirectional", false, "also rank the queries for every gallery item")
	f.BoolVar(&c.dropUnjudged, "drop-queries-without-positives", false, "evaluate only the queries with an eligible positive (BEIR/MTEB/trec_eval); default: refuse")
	f.IntVar(&c.worstQueries, "worst-queries", def.WorstQueries, "rows in diagnostics.worst_queries")
	f.IntVar(&c.queryBatch, "query-batch-size", def.QueryBatchSize, "queries per score block (performance only)")
	f.IntVar(&c.galleryBatch, "gallery-batch-size", def.GalleryBatchSize, "gallery rows per score block (performance only)")
	f.Int64Var(&c.maxPairwise, "max-pairwise-comparisons", 0, "fail when n_queries × n_gallery exceeds this (0 = no guard)")
}

func (c *configFlags) build(cmd *cobra.Command) (retrieval.Config, error) {
	cfg := retrieval.DefaultConfig()
	cfg.Similarity, cfg.PrimaryMetric, cfg.Gain, cfg.Precision = c.similarity, c.primary, c.gain, c.precision
	cfg.Bidirectional = c.bidirectional
	if c.dropUnjudged {
		cfg.QueriesWithoutPositives = retrieval.UnjudgedDrop
	}
	cfg.WorstQueries, cfg.QueryBatchSize, cfg.GalleryBatchSize = c.worstQueries, c.queryBatch, c.galleryBatch
	ks, err := parseKs(c.ks)
	if err != nil {
		return cfg, err
	}
	cfg.Ks = ks
	if cmd.Flags().Changed("max-pairwise-comparisons") {
		v := c.maxPairwise
		cfg.MaxPairwiseComparisons = &v
	}
	return cfg, primaryFlagError(cfg.Validate(), cfg)
}

// gainHelp is the --gain flag's help: the default differs from trec_eval's
// ndcg_cut and MTEB, which use linear gain (SPEC §3.3).
const gainHelp = "NDCG gain: exponential (2^grade − 1, the default) or linear (grade; as trec_eval ndcg_cut and MTEB); equal with binary grades"

// primaryHelp is the --primary flag's help (SPEC §3.1: any reported metric).
const primaryHelp = "primary metric (the score): ndcg@K, recall@K, precision@K or hit_rate@K with K in --k, mrr or map"

// primaryFlagError rewrites a bad primary metric as an error that names the
// --primary flag and its valid choices under --k, not the config field
// RetrievalConfig.primary_metric; other errors pass through. It stays a
// retrieval.ConfigError (a usage error, exit 2).
func primaryFlagError(err error, cfg retrieval.Config) error {
	var ce *retrieval.ConfigError
	if !errors.As(err, &ce) || ce.Field != "primary_metric" {
		return err
	}
	return &retrieval.ConfigError{Field: ce.Field, Msg: "--primary " + retrieval.PrimaryMetricProblem(cfg.PrimaryMetric, cfg.Ks, "--k")}
}

func parseKs(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usagef("--k: RetrievalConfig.ks must not be empty")
	}
	var ks []int
	for _, part := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, usagef("--k: %q is not an integer", part)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var fl runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Evaluate a precomputed query/gallery embedding pair",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRetrieval(cmd.Context(), cmd, &fl, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.queries, "queries", "", "query embedding file (.npy, .npz, .safetensors, .parquet, .arrow, .feather, .ipc)")
	f.StringVar(&fl.gallery, "gallery", "", "gallery embedding file (.npy, .npz, .safetensors, .parquet, .arrow, .feather, .ipc)")
	f.StringVar(&fl.name, "name", "precomputed", "result name for the embedding pair")
	f.StringVar(&fl.spec, "spec", "", "declarative run file (YAML or JSON, docs/run-file.md)")
	f.StringVar(&fl.onnxLib, "onnxruntime-lib", "", "ONNX Runtime shared library for the ONNX extractors of a --spec run file (default $ONNXRUNTIME_LIB, then standard locations)")
	f.StringVar(&fl.store, "store", "", "artifact store used as the endpoint cache of a --spec run (overrides the run file's store:; default none)")
	fl.registerDataset(cmd)
	fl.config.register(cmd)
	fl.mem.register(cmd)
	fl.comp.register(cmd)
	fl.out.register(cmd, true)
	fl.cmp.register(cmd)
	return cmd
}

// registerDataset registers the dataset flags of SPEC §6.3 other than the
// embedding files, shared by `run` and `compare --pair` (SPEC §6.6).
func (fl *runFlags) registerDataset(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&fl.queriesTensor, "queries-tensor", "", "member of a multi-array .npz, safetensors tensor or Parquet/Arrow column of the query file")
	f.StringVar(&fl.galleryTensor, "gallery-tensor", "", "member of a multi-array .npz, safetensors tensor or Parquet/Arrow column of the gallery file")
	f.StringVar(&fl.queryIDs, "query-ids", "", "query ID file, one ID per line (default: row numbers)")
	f.StringVar(&fl.galleryIDs, "gallery-ids", "", "gallery ID file, one ID per line (default: row numbers)")
	f.StringVar(&fl.qrels, "qrels", "", "relevance file (TREC, TSV, CSV, JSONL, dense .npy, CSR .npz)")
	f.StringVar(&fl.qrelsFormat, "qrels-format", "", "trec, tsv, csv, jsonl, npy or npz (default: from the extension)")
	f.StringVar(&fl.queryLabels, "query-labels", "", "query label file for label-derived relevance")
	f.StringVar(&fl.galleryLabels, "gallery-labels", "", "gallery label file for label-derived relevance")
	f.BoolVar(&fl.leaveOneOut, "leave-one-out", false, "queries and gallery are one collection; self pairs are excluded")
	f.StringVar(&fl.exclusions, "exclusions", "", "file of (query_id, gallery_id) pairs removed from ranking")
	f.StringVar(&fl.datasetID, "dataset-id", "", "declared dataset identity (with --dataset-revision)")
	f.StringVar(&fl.datasetRevision, "dataset-revision", "", "declared dataset revision (with --dataset-id)")
	f.StringVar(&fl.queryIDColumn, "query-id-column", "", "Parquet/Arrow column holding the query IDs (instead of --query-ids)")
	f.StringVar(&fl.galleryIDCol, "gallery-id-column", "", "Parquet/Arrow column holding the gallery IDs (instead of --gallery-ids)")
	f.IntVar(&fl.threads, "threads", 0, "worker goroutines, 0 = GOMAXPROCS (performance only)")
}

func (fl *runFlags) check(cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	if fl.queries == "" {
		return usagef("--queries is required")
	}
	labels := fl.queryLabels != ""
	switch {
	case fl.qrels != "" && (labels || fl.galleryLabels != ""),
		fl.qrels == "" && !labels,
		labels && fl.galleryLabels == "" && !fl.leaveOneOut,
		!labels && fl.galleryLabels != "":
		return usagef("exactly one relevance source is required: --qrels, or --query-labels with --gallery-labels, or --query-labels with --leave-one-out")
	}
	if fl.leaveOneOut {
		if !labels {
			return usagef("--leave-one-out requires --query-labels")
		}
		same := func(a, b string) bool { return a == "" || a == b }
		if !same(fl.gallery, fl.queries) || !same(fl.galleryIDs, fl.queryIDs) || !same(fl.galleryLabels, fl.queryLabels) || !same(fl.galleryTensor, fl.queriesTensor) {
			return usagef("--leave-one-out requires the query and gallery inputs to be the same file")
		}
	} else if fl.gallery == "" {
		return usagef("--gallery is required")
	}
	if changed("qrels-format") && fl.qrels == "" {
		return usagef("--qrels-format requires --qrels")
	}
	if fl.queryIDColumn != "" && fl.queryIDs != "" || fl.galleryIDCol != "" && fl.galleryIDs != "" {
		return usagef("an ID column and an ID file cannot both be given for one endpoint")
	}
	if fl.leaveOneOut && fl.galleryIDCol != "" && fl.galleryIDCol != fl.queryIDColumn {
		return usagef("--leave-one-out requires the query and gallery inputs to be the same file")
	}
	if (fl.datasetID == "") != (fl.datasetRevision == "") {
		return usagef("--dataset-id and --dataset-revision must be given together")
	}
	if fl.threads < 0 {
		return usagef("--threads must be >= 0")
	}
	if strings.TrimSpace(fl.name) == "" {
		return usagef("--name must not be blank")
	}
	return fl.out.check(cmd)
}

func runRetrieval(ctx context.Context, cmd *cobra.Command, fl *runFlags, stdout, stderr io.Writer) error {
	if fl.spec != "" {
		return runSpec(ctx, cmd, fl, stdout, stderr)
	}
	// The endpoint cache serves run-file extractors; a precomputed pair
	// from flags has nothing to encode.
	if cmd.Flags().Changed("store") {
		return usagef("--store requires --spec (the endpoint cache of a run file)")
	}
	if err := fl.check(cmd); err != nil {
		return err
	}
	return fl.evaluatePairs(ctx, cmd, nil, stdout, stderr)
}

// evaluatePairs evaluates the flag-defined dataset, whose embeddings are
// --queries/--gallery under --name, plus one precomputed backbone per extra
// embedding pair (`compare --pair`, SPEC §6.6), all under one protocol.
func (fl *runFlags) evaluatePairs(ctx context.Context, cmd *cobra.Command, extra []embeddingPair, stdout, stderr io.Writer) error {
	cfg, err := fl.config.build(cmd)
	if err != nil {
		return err
	}
	cmpOpts, err := fl.cmp.options(cmd, cfg)
	if err != nil {
		return err
	}
	memCfg, err := fl.mem.config(cmd)
	if err != nil {
		return err
	}
	variants, err := fl.comp.configs()
	if err != nil {
		return err
	}
	names := []string{fl.name}
	for _, p := range extra {
		names = append(names, p.name)
	}
	if err := checkBaseline(cmpOpts.Baseline, names, variants); err != nil {
		return err
	}
	budget, err := admit.BudgetFor(memCfg)
	if err != nil {
		return err
	}
	ctx, restore := withMemoryGuard(ctx, budget.Limit())
	defer restore()
	defer relaxGC()()
	fl.out.inputs = []string{fl.queries, fl.gallery, fl.queryIDs, fl.galleryIDs, fl.qrels, fl.queryLabels, fl.galleryLabels, fl.exclusions}
	for _, p := range extra {
		fl.out.inputs = append(fl.out.inputs, p.queries, p.gallery)
	}
	if err := fl.out.checkTargets(len(variants) * (1 + len(extra))); err != nil {
		return err
	}
	var closers files.Closers
	var ds *retrieval.Dataset
	defer func() {
		// The identity may still be hashed from the mappings (background
		// identity): it finishes first.
		ds.WaitIdentity()
		// Mappings and spill files: closing releases them; nothing to lose.
		closers.Close()
	}()
	// The query endpoint is loaded and admitted before the gallery (SPEC §7.3).
	section := fl.datasetSection()
	ds, err = runspec.LoadDataset(ctx, &section, fl.loadOptions(cfg, fl.name, budget, &closers), &closers)
	if err != nil {
		return err
	}
	if !fl.out.quiet {
		if dropped := ds.DroppedQueries(); len(dropped) > 0 {
			fmt.Fprintf(stderr, "warning: %d queries without an eligible positive dropped (queries_without_positives: drop): %s\n", len(dropped), msgfmt.IDList(dropped))
		}
		if cfg.Bidirectional && cfg.DropsQueriesWithoutPositives() {
			if skipped := ds.ReverseQueriesWithoutPositives(); len(skipped) > 0 {
				fmt.Fprintf(stderr, "warning: %d gallery items without an eligible reverse relation skipped as reverse queries, kept as forward candidates (queries_without_positives: drop): %s\n", len(skipped), msgfmt.IDList(skipped))
			}
		}
	}
	backbones := []evaluate.Backbone{evaluate.Precomputed(fl.name)}
	for _, p := range extra {
		backbones = append(backbones, fl.pairBackbone(p, ds, cfg, budget, &closers))
	}
	if !fl.out.quiet {
		ctx = withScoring(ctx, stderr)
	}
	bench, err := evaluate.Run(ctx, ds, cfg, backbones,
		evaluate.Options{Threads: fl.threads, RunDepth: fl.out.runDepthOption(), MemoryConfig: memCfg.AsMap(), Compression: variants, Comparison: cmpOpts})
	if err != nil {
		return err
	}
	return fl.out.emit(ctx, bench, ds, stdout, stderr)
}

// loadOptions are the flags path's options of the shared dataset loader:
// every table is checked for finite values as it is read (naming the file,
// row, ID and column) and admitted against the memory budget under
// retriever name.
func (fl *runFlags) loadOptions(cfg retrieval.Config, name string, budget *admit.Budget, closers *files.Closers) runspec.LoadOptions {
	return runspec.LoadOptions{
		Config: cfg, DigestCache: runspec.DefaultDigestCache(), CheckFinite: true,
		BackgroundIdentity: true, // evaluatePairs waits for it before it releases the mappings
		// SPEC §6.3: the task is the IDs, relevance and exclusions; the
		// embeddings identify the result, so backbones run separately on
		// the same files compare.
		IDsOnlyIdentity: true,
		Admit: func(ctx context.Context, side string, m matrix.Matrix) (matrix.Matrix, error) {
			return admitTable(ctx, fmt.Sprintf("Retriever '%s' %s embeddings", name, side), m, budget, closers)
		},
	}
}

// datasetSection is the dataset the flags describe, as a run file's
// dataset section.
func (fl *runFlags) datasetSection() runspec.Dataset {
	d := runspec.Dataset{
		ID: fl.datasetID, Revision: fl.datasetRevision, Exclusions: fl.exclusions,
		Queries: runspec.Endpoint{Path: fl.queries, Tensor: fl.queriesTensor, IDs: fl.queryIDs, IDColumn: fl.queryIDColumn},
		Gallery: runspec.Endpoint{Path: fl.gallery, Tensor: fl.galleryTensor, IDs: fl.galleryIDs, IDColumn: fl.galleryIDCol},
	}
	if fl.qrels != "" {
		d.Qrels = &runspec.Qrels{Path: fl.qrels, Format: fl.qrelsFormat}
	} else {
		d.Labels = &runspec.Labels{Queries: fl.queryLabels, Gallery: fl.galleryLabels, LeaveOneOut: fl.leaveOneOut}
	}
	return d
}

// admitRows is the batch size in which file inputs are admitted.
const admitRows = 4096

// admitTable makes a file endpoint respect the memory budget (SPEC §7): a
// read-only mapping is already disk-backed and is used as it is when spilling
// is allowed; anything else goes through the admission pipeline, which keeps
// it in memory when it fits, stages it in a memory-mapped spill file when it
// does not, and without spill fails with the memory-budget message.
func admitTable(ctx context.Context, owner string, m matrix.Matrix, budget *admit.Budget, closers *files.Closers) (matrix.Matrix, error) {
	if d, ok := m.(*matrix.Dense); ok && d.IsReadOnly() && budget.AllowSpill() {
		return m, nil
	}
	out, closeFn, err := admit.Endpoint(ctx, owner, m.Rows(), admitRows, func(_ context.Context, lo, hi int) (matrix.Matrix, error) {
		switch t := m.(type) {
		case *matrix.Dense:
			return t.RowSlice(lo, hi), nil
		case *matrix.CSR:
			return t.RowSlice(lo, hi), nil
		}
		return nil, fmt.Errorf("unsupported matrix type %T", m)
	}, budget)
	if err != nil {
		return nil, err
	}
	closers.Add(closeFn)
	return out, nil
}
