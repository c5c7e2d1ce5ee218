package cli

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Limits of the count flags whose large values cost time or threads rather
// than memory (memory is charged against the budget where it is
// allocated). One table, applied to every command before it runs, so a
// command added later gets the same checks.
const (
	maxThreads   = 4096
	maxRepeat    = 1000
	maxResamples = 100_000_000 // 10⁴ × the default 10,000
)

var flagRanges = map[string]struct{ lo, hi int64 }{
	"threads":      {0, maxThreads},
	"repeat":       {1, maxRepeat},
	"bootstrap":    {1, maxResamples},
	"permutations": {1, maxResamples},
	"total-shards": {0, 1 << 31},
	"shard-index":  {0, 1 << 31},
}

// checkFlagRanges is a usage error for a set flag outside its range.
func checkFlagRanges(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		r, ok := flagRanges[f.Name]
		if !ok || err != nil {
			return
		}
		v, perr := strconv.ParseInt(f.Value.String(), 10, 64)
		if perr != nil || v < r.lo || v > r.hi {
			err = usagef("--%s must lie in [%d, %d], got %s", f.Name, r.lo, r.hi, f.Value.String())
		}
	})
	return err
}

// numError matches the strconv detail pflag appends to a bad number.
var numError = regexp.MustCompile(`strconv\.Parse(Int|Uint|Float|Bool): parsing "[^"]*": (invalid syntax|value out of range)`)

// flagError says what is wrong with a flag value in words instead of
// strconv's ("strconv.ParseInt: parsing "x": invalid syntax").
func flagError(err error) error {
	msg := numError.ReplaceAllStringFunc(err.Error(), func(m string) string {
		sub := numError.FindStringSubmatch(m)
		if sub[2] == "value out of range" {
			return "the number is out of range"
		}
		switch sub[1] {
		case "Int":
			return "not a whole number"
		case "Uint":
			return "not a non-negative whole number"
		case "Float":
			return "not a number"
		}
		return "not true or false"
	})
	return &UsageError{Msg: fmt.Sprint(msg)}
}
