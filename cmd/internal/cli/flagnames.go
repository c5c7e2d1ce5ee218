package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// configFlagNames maps the configuration fields that flags set to the flags
// (SPEC §6.3), so that an invalid flag value names the flag the user typed
// ("--similarity must be one of …") rather than the internal configuration
// field ("RetrievalConfig.similarity must be one of …").
var configFlagNames = []struct{ field, flag string }{
	{"RetrievalConfig.similarity", "--similarity"},
	{"RetrievalConfig.ks", "--k"},
	{"RetrievalConfig.primary_metric", "--primary"},
	{"RetrievalConfig.query_batch_size", "--query-batch-size"},
	{"RetrievalConfig.gallery_batch_size", "--gallery-batch-size"},
	{"RetrievalConfig.max_pairwise_comparisons", "--max-pairwise-comparisons"},
	{"RetrievalConfig.worst_queries", "--worst-queries"},
	{"RetrievalConfig.gain", "--gain"},
	{"RetrievalConfig.precision", "--precision"},
	{"RetrievalConfig.queries_without_positives", "--drop-queries-without-positives"},
	{"MemoryConfig.max_memory_bytes", "--max-memory-bytes"},
	{"MemoryConfig.spill_dir", "--spill-dir"},
}

// renamedError is err with a message naming flags; errors.As still finds
// the typed error underneath (for the exit code).
type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// flagNamedError rewrites an error of cmd whose message starts with a
// configuration field that one of cmd's flags sets, optionally after that
// flag's name ("--k: RetrievalConfig.ks must not be empty"), to name the
// flag. Errors of a run file (--spec) keep the field names the file uses,
// and so do commands without the flag (a --config file of retrieval score).
func flagNamedError(cmd *cobra.Command, err error) error {
	if cmd == nil || err == nil {
		return err
	}
	if f := cmd.Flags().Lookup("spec"); f != nil && f.Changed {
		return err
	}
	msg := err.Error()
	for _, m := range configFlagNames {
		if cmd.Flags().Lookup(strings.TrimPrefix(m.flag, "--")) == nil {
			continue
		}
		rest := strings.TrimPrefix(msg, m.flag+": ")
		if after, ok := strings.CutPrefix(rest, m.field); ok && (after == "" || after[0] == ' ' || after[0] == ':') {
			return &renamedError{msg: m.flag + after, err: err}
		}
	}
	return err
}
