package cli

import (
	"fmt"

	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Help and usage setup: "did you mean" suggestions for mistyped commands
// and flags (exit 2) and the grouped flag listing of the evaluation
// commands.

// flagGroupOrder lists the flag groups of the grouped help in order; a flag
// not in flagGroup is listed under "Other".
var flagGroupOrder = []string{"Run file", "Dataset", "Relevance", "Retrieval", "Output", "Compression", "Memory", "Statistics", "Other"}

var flagGroup = map[string]string{
	"spec": "Run file", "store": "Run file", "onnxruntime-lib": "Run file",

	"queries": "Dataset", "gallery": "Dataset", "pair": "Dataset", "name": "Dataset",
	"queries-tensor": "Dataset", "gallery-tensor": "Dataset",
	"query-ids": "Dataset", "gallery-ids": "Dataset",
	"query-id-column": "Dataset", "gallery-id-column": "Dataset",
	"dataset-id": "Dataset", "dataset-revision": "Dataset",

	"qrels": "Relevance", "qrels-format": "Relevance",
	"query-labels": "Relevance", "gallery-labels": "Relevance",
	"leave-one-out": "Relevance", "exclusions": "Relevance",
	"drop-queries-without-positives": "Relevance",

	"similarity": "Retrieval", "k": "Retrieval", "primary": "Retrieval", "gain": "Retrieval",
	"precision": "Retrieval", "bidirectional": "Retrieval", "worst-queries": "Retrieval",
	"query-batch-size": "Retrieval", "gallery-batch-size": "Retrieval",
	"max-pairwise-comparisons": "Retrieval",

	"json": "Output", "markdown": "Output", "csv": "Output", "run": "Output",
	"run-depth": "Output", "write-qrels": "Output", "html": "Output", "plots": "Output",
	"plot-format": "Output", "no-per-query": "Output", "quiet": "Output",

	"compress": "Compression", "compress-seed": "Compression", "whiten": "Compression",

	"max-memory-bytes": "Memory", "no-disk-spill": "Memory", "spill-dir": "Memory",

	"alpha": "Statistics", "baseline": "Statistics", "bootstrap": "Statistics",
	"ci-method": "Statistics", "compare": "Statistics", "compare-metrics": "Statistics",
	"permutations": "Statistics", "seed": "Statistics", "test": "Statistics",
}

// groupedHelp is the set of commands (by path below the root) whose help
// lists their flags in groups, with their long descriptions and examples.
var groupedHelp = map[string]struct{ long, example string }{
	"retrieval run": {
		long: "Evaluate one precomputed query/gallery embedding pair given by flags, or a whole\n" +
			"declarative run file with --spec FILE (YAML or JSON: extractors, datasets, compression,\n" +
			"statistics and outputs in one file). With --spec only the output flags (--json,\n" +
			"--markdown, --csv, --run, --run-depth, --write-qrels, --html, --plots, --plot-format),\n" +
			"--threads, --quiet, --store and --onnxruntime-lib may be added.\n\n" +
			"IDs default to row numbers when --query-ids/--gallery-ids are not given. The Markdown\n" +
			"report is printed to stdout unless --quiet, --markdown FILE, --json - or --markdown - is given.",
		example: `  # Everything from a run file, the Markdown report to a file
  vertebrae retrieval run --spec run.yaml --markdown report.md

  # One embedding pair with TREC/BEIR qrels and ID files, JSON report for a later compare
  vertebrae retrieval run --queries q.npy --gallery g.npy --query-ids q.txt --gallery-ids g.txt \
    --qrels qrels.tsv --name e5-small --json e5-small.json

  # Label-derived relevance on one collection (self pairs excluded), with a PCA variant
  vertebrae retrieval run --queries emb.npy --query-labels labels.txt --leave-one-out --compress pca:64`,
	},
	"retrieval compare": {
		example: `  # Merge reports of separately evaluated backbones
  vertebrae retrieval compare e5-small.json bge-small.json --markdown comparison.md

  # Evaluate and compare two embedding pairs under one protocol
  vertebrae retrieval compare --pair e5=e5_q.npy,e5_g.npy --pair bge=bge_q.npy,bge_g.npy \
    --query-ids q.txt --gallery-ids g.txt --qrels qrels.tsv --json comparison.json`,
	},
}

// setupHelp installs the suggestions and grouped help on the tree below root.
func setupHelp(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		if h, ok := groupedHelp[strings.TrimPrefix(c.CommandPath(), root.Name()+" ")]; ok {
			if h.long != "" {
				c.Long = h.long
			}
			c.Example = h.example
			c.Flags().SortFlags = false // registration order: the main flags of a group first
			c.SetUsageFunc(groupedUsage)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagLine matches the start of one flag's entry in pflag's FlagUsages.
var flagLine = regexp.MustCompile(`^\s+(?:-\w, )?--([^\s=\[]+)`)

// groupedUsage is cobra's default usage with the local flags listed under
// the headings of flagGroupOrder (aligned as one table).
func groupedUsage(c *cobra.Command) error {
	w := c.OutOrStderr()
	fmt.Fprintf(w, "Usage:\n  %s\n", c.UseLine())
	if c.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
	}
	groups := map[string][]string{}
	group := ""
	for _, line := range strings.Split(strings.TrimRight(c.LocalFlags().FlagUsages(), "\n"), "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			group = flagGroup[m[1]]
			if group == "" {
				group = "Other"
			}
		}
		if group != "" {
			groups[group] = append(groups[group], strings.TrimRight(line, " "))
		}
	}
	for _, g := range flagGroupOrder {
		if len(groups[g]) > 0 {
			fmt.Fprintf(w, "\n%s flags:\n%s\n", g, strings.Join(groups[g], "\n"))
		}
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\nGlobal Flags:\n%s\n", strings.TrimRight(c.InheritedFlags().FlagUsages(), " \n"))
	}
	return nil
}

// suggestFlagError adds "did you mean" to pflag's unknown-flag errors.
func suggestFlagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := suggestions(name, flagNames(c)); len(s) > 0 {
			return usagef("%s (did you mean %s?)", msg, orList(s, "--"))
		}
	}
	return flagError(err)
}

// suggestCommand is the usage error of an unknown command arg of c, with
// suggestions among c's subcommands.
func suggestCommand(c *cobra.Command, arg string) error {
	msg := fmt.Sprintf("unknown command %q for %q", arg, c.CommandPath())
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	if s := suggestions(arg, names); len(s) > 0 {
		return usagef("%s (did you mean %s?)", msg, orList(s, ""))
	}
	if c.HasAvailableSubCommands() {
		return usagef("%s (see %q)", msg, c.CommandPath()+" --help")
	}
	return usagef("%s", msg)
}

func flagNames(c *cobra.Command) []string {
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	return names
}

// suggestions are the names within edit distance 2 of typed (1 for names
// of up to 3 letters), or that typed is a prefix of, closest first; at most 3.
func suggestions(typed string, names []string) []string {
	typed = strings.ToLower(typed)
	limit := 2
	if len(typed) <= 3 {
		limit = 1
	}
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, n := range names {
		d := levenshtein(typed, strings.ToLower(n))
		if d <= limit || (len(typed) >= 3 && strings.HasPrefix(strings.ToLower(n), typed)) {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// orList is "--a", "--a or --b", "--a, --b or --c".
func orList(names []string, prefix string) string {
	q := make([]string, len(names))
	for i, n := range names {
		if prefix == "" {
			q[i] = fmt.Sprintf("%q", n)
		} else {
			q[i] = prefix + n
		}
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// levenshtein is the edit distance of a and b: insertions, deletions,
// substitutions and transpositions of adjacent bytes (optimal string
// alignment; flag and command names are ASCII).
func levenshtein(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}
