package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/formats/files"
	"github.com/vertebrae-eval/vertebrae/runspec"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/artifact/endpointcache"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/memory/admit"
	"github.com/vertebrae-eval/vertebrae/store/location"
)

// specOverrides are the flags allowed next to --spec (SPEC §6.3).
var specOverrides = map[string]bool{"spec": true, "json": true, "markdown": true, "csv": true, "run": true,
	"run-depth": true, "write-qrels": true, "threads": true, "quiet": true, "onnxruntime-lib": true,
	"html": true, "plots": true, "plot-format": true, "store": true}

// wrapExtractor, when set, wraps every extractor a run file builds; tests
// use it to count encoder calls (a cache hit must encode nothing).
var wrapExtractor func(extract.Extractor) extract.Extractor

// runSpec evaluates a declarative run file (SPEC §6.5).
func runSpec(ctx context.Context, cmd *cobra.Command, fl *runFlags, stdout, stderr io.Writer) error {
	var bad []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !specOverrides[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return usagef("with --spec only --json, --markdown, --csv, --run, --run-depth, --write-qrels, --html, --plots, --plot-format, --threads, --onnxruntime-lib, --store and --quiet are allowed; got %s", strings.Join(bad, ", "))
	}
	spec, err := runspec.Load(fl.spec)
	if err != nil {
		return err
	}
	if spec.Engine != "" && spec.Engine != "local" {
		return fmt.Errorf("%s: engine %q is not available in this build; use engine: local, or run the file with `vertebrae-beam run --spec` (module beam/, README \"Apache Beam\")", fl.spec, spec.Engine)
	}
	out := fl.out
	changed := cmd.Flags().Changed
	for _, o := range []struct {
		flag string
		dst  *string
		val  string
	}{{"json", &out.json, spec.Outputs.JSON}, {"markdown", &out.markdown, spec.Outputs.Markdown}, {"csv", &out.csv, spec.Outputs.CSV},
		{"run", &out.run, spec.Outputs.Run}, {"write-qrels", &out.writeQrels, spec.Outputs.WriteQrels}} {
		if !changed(o.flag) {
			*o.dst = o.val
		}
	}
	if !changed("run-depth") && spec.Outputs.RunDepth != nil {
		out.runDepth = *spec.Outputs.RunDepth
	}
	if err := out.check(cmd); err != nil {
		return err
	}
	limit, err := memory.Resolve(spec.Memory)
	if err != nil {
		return err
	}
	ctx, restore := withMemoryGuard(ctx, limit)
	defer restore()
	out.inputs = specInputs(spec)
	if err := out.checkTargets(len(spec.Extractors) * max(1, len(spec.Compression))); err != nil {
		return err
	}
	sess, err := runspec.OpenSpec(ctx, spec, runspec.Options{DigestCache: runspec.DefaultDigestCache()})
	if err != nil {
		return err
	}
	defer sess.Close()
	ds := sess.Dataset
	var closers files.Closers
	defer closers.Close()
	entries := make([]extract.Entry, len(spec.Extractors))
	for i := range spec.Extractors {
		e := &spec.Extractors[i]
		x, err := sess.Build(ctx, e, fl.onnxLib)
		if err != nil {
			return err
		}
		if wrapExtractor != nil {
			x = wrapExtractor(x)
		}
		entries[i] = e.Entry(x)
	}
	bench := &evaluate.Benchmark{
		Dataset: ds, Config: spec.Retrieval, Extractors: entries, Compression: spec.Compression,
		Embedding: extract.EmbeddingConfig(spec.Embedding), Memory: spec.Memory,
		Threads: fl.threads, RunDepth: out.runDepthOption(),
	}
	// The endpoint cache is opt-in for run (store: or --store); only the
	// artifact commands default to .vertebrae_cache (SPEC §6.8).
	storeURI := spec.Store
	if changed("store") {
		storeURI = fl.store
	}
	if storeURI != "" {
		st, err := location.Open(ctx, storeURI)
		if err != nil {
			return err
		}
		closers.Add(st.Close)
		bench.Cache = endpointcache.New(artifact.New(st))
	}
	if !out.quiet {
		ctx = admit.WithProgress(ctx, newProgress(stderr).report)
		ctx = withScoring(ctx, stderr)
	}
	b, err := bench.Run(ctx)
	if err != nil {
		return err
	}
	return out.emit(ctx, b, ds, stdout, stderr)
}
