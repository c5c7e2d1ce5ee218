package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/internal/atomicfile"
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

// emit renders every requested output first and only then writes them, each
// atomically, so a rendering failure leaves no file behind (SPEC §6.1).
func (o *outputFlags) emit(b *results.Benchmark, ds *retrieval.Dataset, stdout, stderr io.Writer) error {
	type file struct {
		path string
		data []byte
	}
	var files []file
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
		files = append(files, file{o.json, jsonData})
	}
	switch o.markdown {
	case "":
	case "-":
		toStdout = mdData
	default:
		files = append(files, file{o.markdown, mdData})
	}
	if o.csv != "" {
		var buf bytes.Buffer
		if err := report.CSV(&buf, b); err != nil {
			return err
		}
		files = append(files, file{o.csv, buf.Bytes()})
	}
	if o.run != "" {
		targets, err := report.RunTargets(b.ExtractorResults, o.run)
		if err != nil {
			return err
		}
		for i, r := range b.ExtractorResults {
			var buf bytes.Buffer
			if err := report.TRECRun(&buf, r.Forward.Run, r.Name); err != nil {
				return err
			}
			files = append(files, file{targets[i], buf.Bytes()})
		}
	}
	if o.writeQrels != "" {
		var buf bytes.Buffer
		if err := report.TRECQrels(&buf, ds.QueryIDs(), ds.GalleryIDs(), ds.EligibleRelevance()); err != nil {
			return err
		}
		files = append(files, file{o.writeQrels, buf.Bytes()})
	}
	figureFiles, err := o.figures.files(b)
	if err != nil {
		return err
	}
	for _, f := range figureFiles {
		files = append(files, file{f.path, f.data})
	}
	for _, f := range files {
		if err := atomicfile.Write(f.path, f.data); err != nil {
			return err
		}
	}
	if !o.quiet {
		printWarnings(b, stderr)
		if toStdout == nil {
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
