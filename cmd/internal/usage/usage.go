package usage

import (
	"errors"

	"github.com/vertebrae-eval/vertebrae/cmd/internal/outputset"
	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/evaluate/compare"
	"github.com/vertebrae-eval/vertebrae/formats/files"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/runspec"
)

// IsConfig reports whether err (or an error it wraps) is a configuration
// error of the protocol config, an output target, the memory config, a
// compression config, a comparison option, a file-reading option or an
// extractor a run file does not define.
func IsConfig(err error) bool {
	var ce *retrieval.ConfigError
	var te *outputset.TargetError
	var me *memory.ConfigError
	var cce *compress.ConfigError
	var oe *compare.OptionError
	var fe *files.OptionError
	var xe *runspec.UnknownExtractorError
	return errors.As(err, &ce) || errors.As(err, &te) || errors.As(err, &me) || errors.As(err, &cce) || errors.As(err, &oe) ||
		errors.As(err, &fe) || errors.As(err, &xe)
}
