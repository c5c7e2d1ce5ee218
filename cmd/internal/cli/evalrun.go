package cli

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/evaluate/treceval"
	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/qrels"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// evalRunFlags are the flags of `vertebrae retrieval evaluate-run` (SPEC §6.7).
type evalRunFlags struct {
	qrels, qrelsFormat, run string
	ks, primary, gain, ties string
	name                    string
	presorted               bool
	sortDir                 string
	out                     outputFlags
}

func newEvaluateRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var fl evalRunFlags
	def := retrieval.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "evaluate-run",
		Short: "Score an existing TREC run file against qrels",
		Long: "Scores a TREC run (qid Q0 docid rank score tag) with the metrics of the exact protocol.\n" +
			"Queries are the qrels queries with a positive grade; one the run lacks scores 0, and\n" +
			"positives the run does not list count as never retrieved. Each query's run lines must be\n" +
			"contiguous (--presorted, the default); --presorted=false groups them first with an external\n" +
			"sort in bounded memory. Equal scores are ordered by docid descending (--ties trec, as\n" +
			"trec_eval) or by the rank column (--ties rank).",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return evaluateRun(cmd, &fl, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.qrels, "qrels", "", "relevance file (TREC, TSV, CSV or JSONL)")
	f.StringVar(&fl.qrelsFormat, "qrels-format", "", "trec, tsv, csv or jsonl (default: from the extension)")
	f.StringVar(&fl.run, "run", "", "TREC run file to score")
	f.StringVar(&fl.ks, "k", "1,5,10", "comma-separated cut-offs k")
	f.StringVar(&fl.primary, "primary", def.PrimaryMetric, primaryHelp)
	f.StringVar(&fl.gain, "gain", def.Gain, gainHelp)
	f.StringVar(&fl.ties, "ties", "trec", "order of equal scores: trec (docid descending) or rank (rank column)")
	f.StringVar(&fl.name, "name", "", "result name (default: the run tag)")
	f.BoolVar(&fl.presorted, "presorted", true, "each query's run lines are contiguous; false: group them with an external sort in bounded memory")
	f.StringVar(&fl.sortDir, "sort-dir", "", "directory for the temporary files of --presorted=false (default: the OS temporary directory)")
	// Only the report flags: this command writes no run or qrels, so emit
	// never needs a dataset.
	fl.out.register(cmd, false)
	return cmd
}

func (fl *evalRunFlags) options(cmd *cobra.Command) (treceval.Options, qrels.Format, error) {
	o := treceval.DefaultOptions()
	if fl.qrels == "" {
		return o, "", usagef("--qrels is required")
	}
	if fl.run == "" {
		return o, "", usagef("--run is required")
	}
	if err := fl.out.check(cmd); err != nil {
		return o, "", err
	}
	var qf qrels.Format
	var err error
	if fl.qrelsFormat != "" {
		if qf, err = qrels.ParseFormat(fl.qrelsFormat); err != nil {
			return o, "", usagef("--qrels-format: %v", err)
		}
	} else if qf, err = qrels.FormatFromPath(fl.qrels); err != nil {
		return o, "", usagef("--qrels %s: %v (set --qrels-format)", fl.qrels, err)
	}
	if !qf.IsText() {
		return o, "", usagef("--qrels-format: evaluate-run needs qrels with IDs (trec, tsv, csv or jsonl), not %s", qf)
	}
	if o.Ks, err = parseKs(fl.ks); err != nil {
		return o, "", err
	}
	o.PrimaryMetric, o.Gain = fl.primary, fl.gain
	if o.Ties, err = treceval.ParseTies(fl.ties); err != nil {
		return o, "", usagef("--ties: %v", err)
	}
	if fl.sortDir != "" && fl.presorted {
		return o, "", usagef("--sort-dir applies to --presorted=false only")
	}
	if cmd.Flags().Changed("name") && strings.TrimSpace(fl.name) == "" {
		return o, "", usagef("--name must not be blank")
	}
	o.Name = fl.name
	// Configuration values are usage errors (exit 2) and are checked before
	// any file is read.
	cfg := retrieval.DefaultConfig()
	cfg.Ks, cfg.PrimaryMetric, cfg.Gain = o.Ks, o.PrimaryMetric, o.Gain
	if err := cfg.Validate(); err != nil {
		return o, "", primaryFlagError(err, cfg)
	}
	return o, qf, nil
}

func evaluateRun(cmd *cobra.Command, fl *evalRunFlags, stdout, stderr io.Writer) error {
	o, qf, err := fl.options(cmd)
	if err != nil {
		return err
	}
	fl.out.inputs = []string{fl.qrels, fl.run}
	if err := fl.out.checkTargets(1); err != nil {
		return err
	}
	q, err := treceval.ReadQrelsContext(cmd.Context(), fl.qrels, qf)
	if err != nil {
		return err
	}
	file, err := os.Open(fl.run)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is part of formats.Error
		}
		return &formats.Error{Path: fl.run, Msg: "cannot open file", Err: err}
	}
	defer file.Close() // read-only: nothing to lose on close
	var res *treceval.Result
	if fl.presorted {
		res, err = treceval.Evaluate(cmd.Context(), q, file, fl.run, o)
	} else {
		res, err = treceval.EvaluateUngrouped(cmd.Context(), q, file, fl.run, o, fl.sortDir, 0)
	}
	if err != nil {
		return err
	}
	return fl.out.emit(cmd.Context(), res.Benchmark, nil, stdout, stderr)
}
