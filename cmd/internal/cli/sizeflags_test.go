package cli

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// sizeFlagKinds are the flag types that carry a size or a count.
var sizeFlagKinds = []string{"int", "int32", "int64", "uint", "uint32", "uint64", "bytes"}

// notSizes are integer flags whose every value is valid and sizes nothing
// (random seeds).
var notSizes = []string{"seed", "compress-seed"}

// unbounded are size flags whose huge values have a documented meaning and
// allocate nothing of that size: block sizes are clamped to the problem,
// a run depth or worst-query count past the rows means all of them, a
// comparison limit or an explicit budget is the user's ceiling.
var unbounded = []string{"query-batch-size", "gallery-batch-size", "run-depth", "worst-queries", "max-pairwise-comparisons", "max-memory-bytes"}

// sizeFlags lists "command path → size flags" from the command tree, so a
// command or flag added later is enumerated without editing this test.
func sizeFlags() map[string][]string {
	out := map[string][]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if slices.Contains(sizeFlagKinds, f.Value.Type()) && !slices.Contains(notSizes, f.Name) {
				out[c.CommandPath()] = append(out[c.CommandPath()], f.Name)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
	return out
}

// Every flag that takes a size or a count, in every command, given the
// maximum int, a negative, zero and a value past any budget: a clean
// error (exit 1 or 2; zero and the large value may also be valid), never a
// runtime dump, never a hang. A command with size flags but no base
// invocation here fails the test, so a new one cannot skip it.
func TestSizeFlagsNeverDump(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	keys := newKeyFixture(t)
	scoreArgs := keys.scoreArgs(keys.query, keys.gallery, keys.relevance, "--store", keys.store)
	base := map[string][]string{
		"vertebrae bench":             {"bench", "--queries", "8", "--gallery", "16", "--dim", "4", "--calibrate", "0"},
		"vertebrae demo":              {"demo"},
		"vertebrae retrieval run":     e.runArgs("--json", e.p("size.json"), "--run", e.p("size.run")),
		"vertebrae retrieval compare": {"retrieval", "compare", "--pair", "a=" + e.q + "," + e.g, "--pair", "b=" + e.q + "," + e.g, "--query-ids", e.ids, "--gallery-ids", e.gids, "--qrels", e.qrels, "--quiet", "--json", e.p("cmp.json"), "--run", e.p("cmp-runs")},
		"vertebrae retrieval plan":    {"retrieval", "plan", "--spec", keys.spec, "--store", keys.store, "--output-json", e.p("plan.json")},
		"vertebrae retrieval score":   append(scoreArgs, "--total-shards", "2", "--shard-index", "0"),
		"vertebrae retrieval embed-shard": {"retrieval", "embed-shard", "--plan", keys.plan, "--extractor", "tables", "--side", "query",
			"--shard-index", "0", "--store", keys.store},
	}
	values := []struct {
		name, value string
		okToRun     bool // the value may be valid for some flags
	}{
		{"max int", "9223372036854775807", false},
		{"negative", "-1", false},
		{"zero", "0", true},
		{"past the budget", "1099511627776", true}, // 2^40
	}
	flags := sizeFlags()
	for path, names := range flags {
		args, ok := base[path]
		if !ok {
			t.Errorf("%s has size flags %v but no base invocation in this test", path, names)
			continue
		}
		for _, name := range names {
			for _, v := range values {
				t.Run(strings.ReplaceAll(path, " ", "_")+"/"+name+"/"+v.name, func(t *testing.T) {
					code, stderr := runBounded(t, 20*time.Second, withFlag(args, name, v.value))
					large := v.name == "max int" || v.name == "past the budget"
					switch {
					case code == 0 && large && !slices.Contains(unbounded, name):
						t.Errorf("--%s %s: exit 0, want a clean error (or list the flag in unbounded with its meaning)", name, v.value)
					case code == 0 && !v.okToRun && !(large && slices.Contains(unbounded, name)):
						t.Errorf("--%s %s: exit 0, want a clean error", name, v.value)
					case code != 0 && code != 1 && code != 2:
						t.Errorf("--%s %s: exit %d: %s", name, v.value, code, stderr)
					case code != 0 && !strings.HasPrefix(stderr, "vertebrae: ") && !strings.Contains(stderr, "\nvertebrae: ") && !strings.Contains(stderr, "Error: "):
						t.Errorf("--%s %s: exit %d without a message: %q", name, v.value, code, stderr)
					}
				})
			}
		}
	}
}

// withFlag returns args with --name value, replacing an existing --name.
func withFlag(args []string, name, value string) []string {
	out := slices.Clone(args)
	if i := slices.Index(out, "--"+name); i >= 0 && i+1 < len(out) {
		out[i+1] = value
		return out
	}
	return append(out, "--"+name, value)
}

// runBounded runs the CLI with a deadline; a command still running after
// it has hung or ignored its context.
func runBounded(t *testing.T, limit time.Duration, args []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Run(ctx, args, &out, &errb) }()
	select {
	case code := <-done:
		if s := errb.String(); strings.Contains(s, "goroutine ") || strings.Contains(s, "panic") {
			t.Fatalf("%v: stack trace on stderr: %s", args, s)
		}
		if ctx.Err() != nil {
			t.Fatalf("%v: ran until its %v deadline (exit %d)", args, limit, code)
		}
		return code, errb.String()
	case <-time.After(limit + 5*time.Second):
		t.Fatalf("%v: still running %v after its deadline", args, limit)
		return 0, ""
	}
}
