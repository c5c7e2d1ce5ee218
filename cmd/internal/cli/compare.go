package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats/files"
	"github.com/vertebrae-eval/vertebrae/runspec"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/memory/admit"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// compareFlags are the §13 comparison settings of `run` and `compare`.
type compareFlags struct {
	metrics      string
	baseline     string
	family       string
	test         string
	alpha        float64
	bootstrap    int
	ciMethod     string
	permutations int
	seed         uint64
}

func (c *compareFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.metrics, "compare-metrics", "", "comma-separated metrics compared besides the primary metric (e.g. mrr,recall@10)")
	f.StringVar(&c.baseline, "baseline", "", "compare every result against this one instead of every pair")
	f.StringVar(&c.family, "compare", "all", "pairs compared: all (every pair of results; a results × results matrix past 6) or baseline (with --baseline)")
	f.StringVar(&c.test, "test", compare.TestRandomization, "test deciding significance: randomization or ttest")
	f.Float64Var(&c.alpha, "alpha", compare.DefaultAlpha, "significance level of the Holm-adjusted p-values")
	f.IntVar(&c.bootstrap, "bootstrap", compare.DefaultBootstrap, "bootstrap resamples of every confidence interval")
	f.StringVar(&c.ciMethod, "ci-method", compare.CIBCa, "confidence interval: bca or percentile")
	f.IntVar(&c.permutations, "permutations", compare.DefaultPermutations, "sign vectors of the randomization test (exact enumeration when 2^n is not more)")
	f.Uint64Var(&c.seed, "seed", 0, "seed of the bootstrap and randomization streams")
}

// options validates the flags (usage errors) against the metric keys of
// cfg and returns the comparison options.
func (c *compareFlags) options(cmd *cobra.Command, cfg retrieval.Config) (compare.Options, error) {
	if c.baseline != "" && !cmd.Flags().Changed("compare") {
		c.family = "baseline" // --baseline alone selects the baseline family
	}
	o := compare.Options{
		Baseline: c.baseline, Test: c.test, Alpha: c.alpha, CIMethod: c.ciMethod,
		Bootstrap: c.bootstrap, Permutations: c.permutations, Seed: c.seed,
	}
	switch c.family {
	case "all":
		if c.baseline != "" {
			return o, usagef("--compare all and --baseline conflict; use --compare baseline --baseline NAME or leave --compare out")
		}
	case "baseline":
		if c.baseline == "" {
			return o, usagef("--compare baseline requires --baseline NAME")
		}
	default:
		return o, usagef("--compare must be all or baseline, got %s", msgfmt.Quote(c.family))
	}
	var metrics []string
	if strings.TrimSpace(c.metrics) != "" {
		metrics = strings.Split(c.metrics, ",")
	}
	err := o.CheckSettings(metrics, cfg.MetricKeys(), func(s string) string {
		if s == "metrics" {
			return "--compare-metrics"
		}
		return "--" + s
	})
	return o, err
}

// checkBaseline refuses, before any work, a --baseline that names none of
// the results a run will produce (unless a name depends on a fitted
// dimension, which only the run knows; compare.Compute checks it then).
func checkBaseline(baseline string, names []string, variants []compress.Config) error {
	if baseline == "" {
		return nil
	}
	var all []string
	for _, n := range names {
		for _, c := range variants {
			if c.PreserveVariance != nil && c.IsEnabled() {
				return nil
			}
			all = append(all, compress.VariantName(n, c, 0))
		}
	}
	if !slices.Contains(all, baseline) {
		return usagef("--baseline %s is not a result of this run (results: %s)", msgfmt.Quote(baseline), strings.Join(all, ", "))
	}
	return nil
}

// embeddingPair is one --pair NAME=QUERIES,GALLERY.
type embeddingPair struct{ name, queries, gallery string }

func parsePair(s string, leaveOneOut bool) (embeddingPair, error) {
	name, paths, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" {
		return embeddingPair{}, usagef("--pair %s: want NAME=QUERIES,GALLERY", msgfmt.Quote(s))
	}
	q, g, hasG := strings.Cut(paths, ",")
	if q == "" || hasG && g == "" || !hasG && !leaveOneOut {
		return embeddingPair{}, usagef("--pair %s: want NAME=QUERIES,GALLERY (NAME=QUERIES only with --leave-one-out)", msgfmt.Quote(s))
	}
	if !hasG {
		g = q
	}
	if leaveOneOut && g != q {
		return embeddingPair{}, usagef("--leave-one-out requires the query and gallery inputs to be the same file")
	}
	return embeddingPair{name: name, queries: q, gallery: g}, nil
}

// pairBackbone is a precomputed backbone reading its own embedding files
// with the dataset's tensor and ID-column flags. Rows must match the
// dataset's (checked by evaluate.Run); IDs read from an ID column must be
// the dataset's, in the same order, or the per-query values would pair
// different queries.
func (fl *runFlags) pairBackbone(p embeddingPair, ds *retrieval.Dataset, cfg retrieval.Config, budget *admit.Budget, closers *files.Closers) evaluate.Backbone {
	bb := evaluate.Precomputed(p.name)
	bb.Encode = func(ctx context.Context, side string, _ retrieval.Items) (matrix.Matrix, error) {
		path, tensor, col, want := p.queries, fl.queriesTensor, fl.queryIDColumn, ds.QueryIDs()
		if side == "gallery" {
			path, tensor, col, want = p.gallery, fl.galleryTensor, fl.galleryIDCol, ds.GalleryIDs()
		}
		m, ids, err := runspec.LoadTable(ctx, runspec.Endpoint{Path: path, Tensor: tensor, IDColumn: col}, side, fl.loadOptions(cfg, p.name, budget, closers), closers)
		if err != nil {
			return nil, err
		}
		if col != "" && !slices.Equal(ids, want) {
			return nil, fmt.Errorf("%s: --pair %s: the %s IDs of column %s differ from those of the first pair (same IDs in the same order required)", path, msgfmt.Quote(p.name), side, msgfmt.Quote(col))
		}
		return m, nil
	}
	return bb
}

type compareCmdFlags struct {
	run   runFlags
	pairs []string
}

func newCompareCmd(stdout, stderr io.Writer) *cobra.Command {
	var fl compareCmdFlags
	cmd := &cobra.Command{
		Use:   "compare [REPORT.json...]",
		Short: "Merge JSON reports, or evaluate several embedding pairs, and compare the results with intervals and significance tests",
		Long: "compare REPORT.json... merges the results of JSON reports that share a protocol fingerprint and\n" +
			"dataset identity into one ranked report; compare --pair NAME=QUERIES,GALLERY... evaluates each\n" +
			"embedding pair as a precomputed result under one protocol. Both add the comparison\n" +
			"section: per result mean, sd and bootstrap interval; per pair mean difference, interval, paired\n" +
			"t-test, sign-flip randomization test, Holm-adjusted p-values and effect size (docs/protocol.md).",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(fl.pairs) > 0 {
				if len(args) > 0 {
					return usagef("give either REPORT.json files or --pair, not both")
				}
				return comparePairs(cmd.Context(), cmd, &fl, stdout, stderr)
			}
			return compareReports(cmd.Context(), cmd, &fl.run, args, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&fl.pairs, "pair", nil, "embedding pair NAME=QUERIES,GALLERY to evaluate (repeatable; NAME=QUERIES with --leave-one-out)")
	fl.run.registerDataset(cmd)
	fl.run.config.register(cmd)
	fl.run.mem.register(cmd)
	fl.run.comp.register(cmd)
	fl.run.out.register(cmd, true)
	fl.run.cmp.register(cmd)
	return cmd
}

func comparePairs(ctx context.Context, cmd *cobra.Command, fl *compareCmdFlags, stdout, stderr io.Writer) error {
	if len(fl.pairs) < 2 {
		return usagef("compare --pair needs at least two pairs")
	}
	pairs := make([]embeddingPair, len(fl.pairs))
	for i, s := range fl.pairs {
		p, err := parsePair(s, fl.run.leaveOneOut)
		if err != nil {
			return err
		}
		pairs[i] = p
	}
	rf := &fl.run
	rf.queries, rf.name = pairs[0].queries, pairs[0].name
	if !rf.leaveOneOut {
		rf.gallery = pairs[0].gallery
	}
	if err := rf.check(cmd); err != nil {
		return err
	}
	return rf.evaluatePairs(ctx, cmd, pairs[1:], stdout, stderr)
}

// pairOnlyFlags are the flags that do not apply when comparing reports:
// the dataset, configuration, memory and compression flags (they define an
// evaluation) and the outputs that need rankings or relevance. Output flags
// that need only results (--json, --markdown, --csv, and any added later)
// and the comparison settings stay allowed.
func pairOnlyFlags() map[string]bool {
	c := &cobra.Command{}
	var fl runFlags
	fl.registerDataset(c)
	fl.config.register(c)
	fl.mem.register(c)
	fl.comp.register(c)
	m := map[string]bool{"run": true, "run-depth": true, "write-qrels": true}
	c.Flags().VisitAll(func(f *pflag.Flag) { m[f.Name] = true })
	delete(m, "threads") // also parallelises the comparison
	return m
}

// compareReports merges JSON reports.
func compareReports(ctx context.Context, cmd *cobra.Command, fl *runFlags, paths []string, stdout, stderr io.Writer) error {
	if len(paths) == 0 {
		return usagef("compare needs REPORT.json files or --pair NAME=QUERIES,GALLERY")
	}
	var bad []string
	pairOnly := pairOnlyFlags()
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if pairOnly[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return usagef("%s cannot be used when comparing reports (they apply to --pair, or to rankings a report does not hold)", strings.Join(bad, ", "))
	}
	if err := fl.out.check(cmd); err != nil {
		return err
	}
	fl.out.inputs = paths
	if err := fl.out.checkTargets(1); err != nil {
		return err
	}
	reports := make([]compare.Report, len(paths))
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read report: %w", err)
		}
		reports[i] = compare.Report{Source: p, Data: data}
	}
	merged, err := compare.MergeReports(reports)
	if err != nil {
		return err
	}
	opts, err := fl.cmp.options(cmd, merged.Metadata.RetrievalConfig)
	if err != nil {
		return err
	}
	opts.Threads = fl.threads
	// The statistics are sized by the flags: checked against the machine's
	// budget (SPEC §7.2) like every other input-sized allocation.
	limit, err := memory.Resolve(memory.Default())
	if err != nil {
		return err
	}
	ctx, restore := withMemoryGuard(ctx, limit)
	defer restore()
	if len(merged.ExtractorResults) >= 2 {
		if merged.Comparison, err = compare.Compute(ctx, merged, opts); err != nil {
			return err
		}
	}
	return fl.out.emit(ctx, merged, nil, stdout, stderr)
}
