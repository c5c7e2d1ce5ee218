package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestSuggestMistypedCommandsAndFlags: unknown commands and flags are
// usage errors (exit 2) naming the closest command or flag.
func TestSuggestMistypedCommandsAndFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"retrival"}, `vertebrae: unknown command "retrival" for "vertebrae" (did you mean "retrieval"?)` + "\n"},
		{[]string{"dmeo"}, `vertebrae: unknown command "dmeo" for "vertebrae" (did you mean "demo"?)` + "\n"},
		{[]string{"retrieval", "compair"}, `vertebrae: unknown command "compair" for "vertebrae retrieval" (did you mean "compare"?)` + "\n"},
		{[]string{"retrieval", "rnu"}, `vertebrae: unknown command "rnu" for "vertebrae retrieval" (did you mean "run"?)` + "\n"},
		{[]string{"frobnicate"}, `vertebrae: unknown command "frobnicate" for "vertebrae" (see "vertebrae --help")` + "\n"},
		{[]string{"retrieval", "run", "--querys", "q.npy"}, "vertebrae: unknown flag: --querys (did you mean --queries?)\n"},
		{[]string{"retrieval", "run", "--galery", "g.npy"}, "vertebrae: unknown flag: --galery (did you mean --gallery?)\n"},
		{[]string{"retrieval", "run", "--qrel", "x"}, "vertebrae: unknown flag: --qrel (did you mean --qrels or --qrels-format?)\n"},
		{[]string{"retrieval", "compare", "--pairs", "a=q,g"}, "vertebrae: unknown flag: --pairs (did you mean --pair?)\n"},
		{[]string{"demo", "--quite"}, "vertebrae: unknown flag: --quite (did you mean --quiet?)\n"},
		{[]string{"retrieval", "run", "--zzzzzz"}, "vertebrae: unknown flag: --zzzzzz\n"},
	} {
		code, stdout, stderr := run(t, c.args...)
		if code != ExitUsage || stdout != "" || stderr != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

func TestSuggestLevenshtein(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"querys", "queries", 2}, {"retrival", "retrieval", 1}, {"kitten", "sitting", 3}, {"rnu", "run", 1}, {"ca", "abc", 3}} {
		if got := levenshtein(c.a, c.b); got != c.d {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
	if got := suggestions("k2", []string{"k", "seed", "json"}); len(got) != 1 || got[0] != "k" {
		t.Errorf("suggestions(k2) = %v", got)
	}
}

// TestHelpRunGroupsAndSpec: run --help leads with --spec, lists its flags
// under headings and shows examples; every flag appears exactly once.
func TestHelpRunGroupsAndSpec(t *testing.T) {
	for _, cmd := range []string{"run", "compare"} {
		code, stdout, stderr := run(t, "retrieval", cmd, "--help")
		if code != 0 || stderr != "" {
			t.Fatalf("%s --help: exit %d, stderr %q", cmd, code, stderr)
		}
		last := -1
		for _, g := range []string{"Dataset flags:", "Relevance flags:", "Retrieval flags:", "Output flags:",
			"Compression flags:", "Memory flags:", "Statistics flags:", "Other flags:", "Examples:"} {
			i := strings.Index(stdout, "\n"+g+"\n")
			if i < 0 {
				t.Errorf("%s --help lacks %q:\n%s", cmd, g, stdout)
			}
			if g != "Examples:" {
				if i < last {
					t.Errorf("%s --help: %q out of order", cmd, g)
				}
				last = i
			}
		}
		if strings.Contains(stdout, "\nFlags:\n") {
			t.Errorf("%s --help still has an ungrouped Flags: section", cmd)
		}
		if n := strings.Count(stdout, "vertebrae retrieval "+cmd+" "); n < 3 {
			t.Errorf("%s --help: %d example lines, want at least 2 examples", cmd, n-1)
		}
		cobraCmd, _, err := CommandTree(nil, nil).Find([]string{"retrieval", cmd})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range flagNames(cobraCmd) {
			if n := strings.Count(stdout, "--"+name+" "); n < 1 {
				t.Errorf("%s --help does not list --%s", cmd, name)
			}
		}
	}
	_, stdout, _ := run(t, "retrieval", "run", "--help")
	spec := strings.Index(stdout, "--spec FILE")
	if spec < 0 || spec > strings.Index(stdout, "Usage:") {
		t.Errorf("run --help does not mention --spec FILE in its description:\n%s", stdout)
	}
	runFile := strings.Index(stdout, "\nRun file flags:\n      --spec ")
	if runFile < 0 || runFile > strings.Index(stdout, "\nDataset flags:\n") {
		t.Errorf("--spec is not the first flag listed:\n%s", stdout)
	}
	for _, ex := range []string{"vertebrae retrieval run --spec run.yaml", "vertebrae retrieval run --queries q.npy"} {
		if !strings.Contains(stdout, ex) {
			t.Errorf("run --help lacks example %q", ex)
		}
	}
}

// TestFlagMarkdownFileSilentOnStdout: --markdown FILE writes the report
// there and nothing to stdout; without it stdout carries the report, and
// --json FILE alone keeps the stdout report.
func TestFlagMarkdownFileSilentOnStdout(t *testing.T) {
	f := newFixture(t)
	base := []string{"retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", f.qrels(t), "--k", "1,2", "--primary", "ndcg@2"}
	md := filepath.Join(f.dir, "r.md")
	for _, c := range []struct {
		extra      []string
		wantStdout bool
	}{
		{nil, true},
		{[]string{"--markdown", md}, false},
		{[]string{"--json", filepath.Join(f.dir, "r.json")}, true},
		{[]string{"--markdown", filepath.Join(f.dir, "r2.md"), "--json", "-"}, false},
	} {
		code, stdout, stderr := run(t, append(append([]string{}, base...), c.extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.extra, code, stderr)
		}
		if got := strings.HasPrefix(stdout, "# vertebrae retrieval report\n"); got != c.wantStdout {
			t.Errorf("%v: Markdown on stdout = %v, want %v (stdout %.60q)", c.extra, got, c.wantStdout, stdout)
		}
	}
	if data, err := os.ReadFile(md); err != nil || !strings.HasPrefix(string(data), "# vertebrae retrieval report\n") {
		t.Errorf("--markdown file: %v %.60q", err, data)
	}
}

// TestFlagNamesInConfigErrors: an invalid flag value is reported under the
// flag's name, not the internal configuration field, with exit 2.
func TestFlagNamesInConfigErrors(t *testing.T) {
	f := newFixture(t)
	base := []string{"retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", f.qrels(t)}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--similarity", "foo"}, `vertebrae: --similarity must be one of cosine, dot, squared_l2; got "foo"` + "\n"},
		{[]string{"--k", "0"}, "vertebrae: --k entries must be >= 1; got 0\n"},
		{[]string{"--query-batch-size", "0"}, "vertebrae: --query-batch-size must be >= 1; got 0\n"},
		{[]string{"--gallery-batch-size", "0"}, "vertebrae: --gallery-batch-size must be >= 1; got 0\n"},
		{[]string{"--worst-queries", "-1"}, "vertebrae: --worst-queries must be >= 0; got -1\n"},
		{[]string{"--gain", "x"}, `vertebrae: --gain must be exponential or linear; got "x"` + "\n"},
		{[]string{"--precision", "float16"}, `vertebrae: --precision must be float64 or float32; got "float16"` + "\n"},
		{[]string{"--max-memory-bytes", "0"}, "vertebrae: --max-memory-bytes must be >= 1 when set; got 0\n"},
	} {
		code, stdout, stderr := run(t, append(append([]string{}, base...), c.args...)...)
		if code != ExitUsage || stdout != "" || stderr != c.want {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// Help texts never cite a document the user does not have (the SPEC is not
// shipped): every command's descriptions and flag usages are free of "SPEC"
// and "§".
func TestHelpCitesNoSPEC(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		texts := []string{c.Short, c.Long, c.Example}
		c.Flags().VisitAll(func(f *pflag.Flag) { texts = append(texts, f.Usage) })
		for _, s := range texts {
			if strings.Contains(s, "SPEC") || strings.Contains(s, "§") {
				t.Errorf("%s: help cites the SPEC: %q", c.CommandPath(), s)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
}
