package usage

import (
	"errors"
	"fmt"
	"testing"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/outputset"
	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// Every configuration error type is one, also wrapped; other errors are not.
func TestIsConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&retrieval.ConfigError{}, true},
		{&outputset.TargetError{}, true},
		{&memory.ConfigError{}, true},
		{&compress.ConfigError{}, true},
		{&compare.OptionError{}, true},
		{fmt.Errorf("reading run file: %w", &retrieval.ConfigError{}), true},
		{errors.New("gallery row 3 is not finite"), false},
		{&memory.BudgetError{}, false},
		{nil, false},
	} {
		if got := IsConfig(c.err); got != c.want {
			t.Errorf("IsConfig(%T %v) = %v, want %v", c.err, c.err, got, c.want)
		}
	}
}
