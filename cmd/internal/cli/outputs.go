package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/outputset"
	"github.com/vertebrae-eval/vertebrae/report"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// outputFlags are the report flags shared by run and demo (SPEC §6.1, §6.3).
type outputFlags struct {
	json, markdown, csv string
	run                 string
	runDepth            int
	writeQrels          string
	quiet               bool
	inputs              []string    // files no output may overwrite (SPEC §6.1)
	noPerQuery          bool        // omit per_query from the JSON report (SPEC §6.6)
	figures             figureFlags // --html, --plots (figures.go)
}

func (o *outputFlags) register(cmd *cobra.Command, full bool) {
	f := cmd.Flags()
	f.StringVar(&o.json, "json", "", "write the JSON report to PATH (- = stdout)")
	f.StringVar(&o.markdown, "markdown", "", "write the Markdown report to PATH (- = stdout)")
	f.StringVar(&o.csv, "csv", "", "write per-query metrics as CSV to PATH")
	f.BoolVar(&o.quiet, "quiet", false, "print no report, warnings or progress")
	o.figures.register(f)
	if full {
		f.StringVar(&o.run, "run", "", "write the forward ranking as a TREC run to PATH")
		f.IntVar(&o.runDepth, "run-depth", 1000, "candidates per query in --run (0 = full ranking)")
		f.StringVar(&o.writeQrels, "write-qrels", "", "write the eligible relevance as TREC qrels to PATH")
		f.BoolVar(&o.noPerQuery, "no-per-query", false, "omit the per-query values (per_query) from the JSON report; significance tests on it are then impossible")
	}
}

func (o *outputFlags) check(cmd *cobra.Command) error {
	if cmd.Flags().Changed("run-depth") {
		if o.run == "" {
			return usagef("--run-depth requires --run")
		}
		if o.runDepth < 0 {
			return usagef("--run-depth must be >= 0")
		}
	}
	if o.json == "-" && o.markdown == "-" {
		return usagef("--json - and --markdown - cannot both write to stdout")
	}
	if err := o.figures.check(cmd.Flags().Changed); err != nil {
		return err
	}
	for _, p := range []struct{ flag, path string }{{"--csv", o.csv}, {"--run", o.run}, {"--write-qrels", o.writeQrels}} {
		if p.path == "-" {
			return usagef("%s does not write to stdout; give a file path", p.flag)
		}
	}
	return nil
}

// runDepthOption converts the flags to evaluate.Options.RunDepth.
func (o *outputFlags) runDepthOption() int {
	if o.run == "" {
		return -1
	}
	return o.runDepth
}

// targetPaths lists the file outputs (not "-") with their flags. To add an
// output: register its flag in register, list it here (so its target is
// checked before the evaluation starts) and add its content to the set in
// emit with set.Add (streamed) or set.AddBytes (rendered).
func (o *outputFlags) targetPaths() []struct{ flag, path string } {
	var out []struct{ flag, path string }
	for _, t := range []struct{ flag, path string }{{"--json", o.json}, {"--markdown", o.markdown}, {"--csv", o.csv}, {"--write-qrels", o.writeQrels}, {"--html", o.figures.html}} {
		if t.path != "" && t.path != "-" {
			out = append(out, t)
		}
	}
	return out
}

// newSet is an empty output set guarding the command's inputs.
func (o *outputFlags) newSet() *outputset.Set {
	var set outputset.Set
	set.Input(o.inputs...)
	return &set
}

// checkTargets checks every output target before any evaluation work
// (SPEC §6.1, exit 2); nResults decides whether --run names a file or a
// directory of per-result files.
func (o *outputFlags) checkTargets(nResults int) error {
	set := o.newSet()
	for _, t := range o.targetPaths() {
		set.Add(t.flag, t.path, nil)
	}
	if o.figures.plots != "" {
		set.AddDir("--plots", o.figures.plots)
	}
	if o.run != "" {
		if nResults > 1 {
			set.AddDir("--run", o.run)
		} else {
			set.Add("--run", o.run, nil)
		}
	}
	return set.Check()
}

// emit renders the small reports, streams the large ones (runs, qrels,
// CSV) and commits every file output as one set: all are written and
// synced first, then renamed into place, so any failure creates or
// replaces nothing (SPEC §6.1).
func (o *outputFlags) emit(ctx context.Context, b *results.Benchmark, ds *retrieval.Dataset, stdout, stderr io.Writer) error {
	set := o.newSet()
	var toStdout []byte
	var jsonData, mdData []byte
	var err error
	if jsonData, err = b.MarshalReportWith(results.ReportOptions{OmitPerQuery: o.noPerQuery}); err != nil {
		return err
	}
	if mdData, err = report.Markdown(b); err != nil {
		return err
	}
	switch o.json {
	case "":
	case "-":
		toStdout = jsonData
	default:
		set.AddBytes("--json", o.json, jsonData)
	}
	switch o.markdown {
	case "":
	case "-":
		toStdout = mdData
	default:
		set.AddBytes("--markdown", o.markdown, mdData)
	}
	if o.csv != "" {
		set.Add("--csv", o.csv, func(w io.Writer) error { return report.CSV(w, b) })
	}
	if o.run != "" {
		targets, err := report.RunTargets(b.ExtractorResults, o.run)
		if err != nil {
			return err
		}
		if len(targets) > 1 {
			set.AddDir("--run", o.run)
		}
		for i, r := range b.ExtractorResults {
			set.Add("--run", targets[i], func(w io.Writer) error { return report.TRECRun(w, r.Forward.Run, r.Name) })
		}
	}
	if o.writeQrels != "" {
		set.Add("--write-qrels", o.writeQrels, func(w io.Writer) error {
			return report.TRECQrels(ctx, w, ds.QueryIDs(), ds.GalleryIDs(), ds.EligibleOf)
		})
	}
	figureFiles, err := o.figures.files(b)
	if err != nil {
		return err
	}
	if o.figures.plots != "" {
		set.AddDir("--plots", o.figures.plots)
	}
	for _, f := range figureFiles {
		set.AddBytes(f.flag, f.path, f.data)
	}
	if err := set.Commit(ctx); err != nil {
		return err
	}
	if !o.quiet {
		printWarnings(b, stderr)
		if toStdout == nil && o.markdown == "" { // --markdown FILE: the report went there, stdout stays silent
			toStdout = mdData
		}
	}
	if toStdout != nil { // an explicit "-" is honoured even with --quiet
		_, err = stdout.Write(toStdout)
	}
	return err
}

const maxWarningLines = 20

func printWarnings(b *results.Benchmark, stderr io.Writer) {
	n := 0
	for _, r := range b.ExtractorResults {
		for _, w := range r.Warnings {
			if n == maxWarningLines {
				fmt.Fprintf(stderr, "vertebrae: warning: ... more warnings in the report\n")
				return
			}
			fmt.Fprintf(stderr, "vertebrae: warning: %s: %s\n", r.Name, w)
			n++
		}
	}
}
